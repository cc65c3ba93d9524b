"""The gold-leak test: from everything a worker's browser receives, a classifier cannot tell gold from candidates.

Workers go through a built campaign as a browser would (qualification, claim, the HIT page, the images, an
autosave per item, submit). Per item the test keeps what that worker could observe: its position, the HTML
of its section, its caption, its image and thumbnail URLs, the bytes and headers of both files, its token,
the autosave's answer and timing, how often this worker had met the pair before (in HITs and in the
qualification test). The role comes from the server, only to label the rows. Two classifiers (a logistic
regression and a shallow tree, class-balanced, 5-fold cross-validation) must stay near chance; planting a
leak makes them find it, which shows the test can fail.
"""

import re
import time
from collections import Counter

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import annotator.crowd.selectors.hits as hits_selectors
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.models import HitItem, Image, QualificationAttempt, QualificationItem, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import png_bytes, qualification_right_answers, user_with_role

pytestmark = pytest.mark.django_db

SECTION = re.compile(r'<section class="item" id="item-(\d+)" data-token="([0-9a-f]+)".*?</section>', re.S)
THUMB = re.compile(r'<img src="([^"]*)" alt="Image of item')
IMAGE = re.compile(r'<a class="thumb" href="([^"]*)"')
CAPTION = re.compile(r"Description: </span>(.*?)</p>", re.S)
CHANCE_LIMIT = 0.65
LEAK_FOUND = 0.9


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def _campaign_with_image_files(images: int = 40, **options):
    owner = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=images)
    rng = np.random.default_rng(3)
    for image in Image.objects.filter(dataset=dataset):
        size = (int(rng.integers(20, 60)), int(rng.integers(20, 60)))
        color = tuple(int(c) for c in rng.integers(0, 255, size=3))
        default_storage.save(image.file.name, ContentFile(png_bytes(color=color, size=size)))
        default_storage.save(
            image.thumbnail.name, ContentFile(png_bytes(color=color, size=(size[0] // 2, size[1] // 2)))
        )
    runs = [add_run(dataset=dataset, name="a", seed=1), add_run(dataset=dataset, name="b", seed=2)]
    campaign = campaign_create(
        owner=owner,
        dataset=dataset,
        runs=runs,
        name="leak",
        direction="i2t",
        redundancy=2,
        qualification_items=6,
        **options,
    )
    return campaign_launch(campaign=campaign_build(campaign=campaign))


def _fetch(client, url: str) -> tuple[int, int]:
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return len(body), len(str(sorted(response.items())))


def _observe(campaign, *, workers: int = 3, hits_each: int = 14) -> tuple[np.ndarray, np.ndarray]:
    rows, labels = [], []
    for number in range(workers):
        user = user_with_role(Role.WORKER, username=f"leaky{number}")
        client = Client()
        client.force_login(user)
        seen: Counter = Counter()
        client.get(f"/work/campaigns/{campaign.pk}/qualification/")
        attempt = QualificationAttempt.objects.get(worker__user=user)
        for item in QualificationItem.objects.filter(pk__in=attempt.items):
            seen[(item.image_id, item.caption_id)] += 1
        form = {f"q-{k}": v for k, v in qualification_right_answers(attempt).items()}
        assert client.post(f"/work/campaigns/{campaign.pk}/qualification/", form).status_code == 302
        for _ in range(hits_each):
            claimed = client.post(f"/work/campaigns/{campaign.pk}/claim")
            if "/work/assignments/" not in claimed.get("Content-Location", ""):
                break
            page = client.get(claimed["Content-Location"])
            html = page.content.decode()
            assignment_id = int(claimed["Content-Location"].rstrip("/").split("/")[-1])
            from annotator.models import Assignment

            hit = Assignment.objects.get(pk=assignment_id).hit
            token_item = hit_item_tokens(hit=hit)
            items = {i.pk: i for i in HitItem.objects.filter(hit=hit).select_related("pair")}
            sections = SECTION.findall(html)
            full = [m.group(0) for m in SECTION.finditer(html)]
            image_urls = [IMAGE.search(s).group(1) for s in full]
            captions = [CAPTION.search(s).group(1) for s in full]
            for (position, token), section, image_url, caption in zip(
                sections, full, image_urls, captions, strict=True
            ):
                item = items[token_item[token]]
                thumb_url = THUMB.search(section).group(1)
                image_bytes, image_headers = _fetch(client, image_url)
                thumb_bytes, thumb_headers = _fetch(client, thumb_url)
                started = time.perf_counter()
                saved = client.post(
                    f"/work/assignments/{assignment_id}/answer",
                    {"item_token": token, "choice": "yes"},
                    content_type="application/json",
                )
                seconds = time.perf_counter() - started
                pair_key = (item.pair.image_id, item.pair.caption_id)
                digits = [int(d) for d in re.findall(r"\d+", image_url)] or [0]
                rows.append(
                    [
                        int(position),
                        len(section),
                        len(section) - len(caption),
                        len(caption),
                        len(caption.split()),
                        len(image_url),
                        len(thumb_url),
                        digits[-1] % 1000,
                        image_bytes,
                        thumb_bytes,
                        image_headers,
                        thumb_headers,
                        int(token[:8], 16) / 2**32,
                        len(saved.content),
                        seconds,
                        image_urls.count(image_url),
                        captions.count(caption),
                        seen[pair_key],
                        len(page.content),
                    ]
                )
                labels.append(int(item.role != "candidate"))
                seen[pair_key] += 1
            answers = [{"item_token": t, "choice": "yes"} for t in token_item]
            client.post(
                f"/work/assignments/{assignment_id}/submit", {"answers": answers}, content_type="application/json"
            )
    return np.array(rows, dtype=float), np.array(labels)


def _best_accuracy(features: np.ndarray, labels: np.ndarray) -> float:
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    models = [
        make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=2000)),
        DecisionTreeClassifier(max_depth=4, class_weight="balanced", random_state=0),
    ]
    return max(
        float(np.mean(cross_val_score(model, features, labels, cv=folds, scoring="balanced_accuracy")))
        for model in models
    )


@pytest.mark.parametrize("gold_light_share", [0.0, 0.5])
def test_a_classifier_on_everything_a_worker_receives_is_at_chance(media, capsys, gold_light_share):
    """Also with adaptive gold's gold-light HITs (one gold item and an extra candidate where the other would
    have been) among the full ones: on a larger campaign, for as many gold items to learn from."""
    light = gold_light_share > 0
    campaign = _campaign_with_image_files(images=80 if light else 40, gold_light_share=gold_light_share)
    features, labels = _observe(campaign, workers=5 if light else 3)
    assert labels.sum() >= 60 and (labels == 0).sum() >= 450
    assert features[:, 17].max() == 0  # no pair (gold or not) met twice, the qualification included
    accuracy = _best_accuracy(features, labels)
    with capsys.disabled():
        print(f"\ngold-leak classifier, balanced accuracy over {len(labels)} items: {accuracy:.3f} (chance 0.5)")
    assert accuracy < CHANCE_LIMIT


@pytest.mark.parametrize("leak", ["gold_first", "thumbnail_url"])
def test_a_planted_leak_is_found(media, monkeypatch, leak):
    real = hits_selectors.hit_worker_items

    def leaky(*, hit):
        entries = real(hit=hit)
        roles = dict(HitItem.objects.filter(hit=hit).values_list("position", "role"))
        ordered = [roles[position] for position in sorted(roles)]
        if leak == "gold_first":
            entries.sort(key=lambda entry: ordered[entry["position"] - 1] == "candidate")
            for number, entry in enumerate(entries, start=1):
                entry["position"] = number
        else:
            for entry in entries:
                if ordered[entry["position"] - 1] != "candidate":
                    entry["thumbnail_url"] += "?v=2"
        return entries

    monkeypatch.setattr(hits_selectors, "hit_worker_items", leaky)
    import annotator.crowd.selectors.work as work_selectors

    monkeypatch.setattr(work_selectors, "hit_worker_items", leaky)
    campaign = _campaign_with_image_files()
    features, labels = _observe(campaign, workers=1, hits_each=10)
    assert _best_accuracy(features, labels) >= LEAK_FOUND
