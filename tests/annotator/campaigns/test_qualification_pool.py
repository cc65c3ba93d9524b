"""A qualification that tests: whatever the annotators rank, the pool holds matching and non-matching pairs in
the campaign's share, "always yes" and "always no" fail while a careful worker passes, no caption repeats in a
test, reserved pairs never reach a HIT, and the requester is warned about a one-sided pool."""

import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import OutputWrapper
from rest_framework.test import APIClient

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.campaigns.services.qualification_pool import pair_key_of
from annotator.core.errors import ApplicationError
from annotator.crowd.services.qualification import qualification_start, qualification_submit
from annotator.datasets.services.imports import dataset_import
from annotator.models import Campaign, Dataset, HitItem, Pair, QualificationItem, Role, RunStatus
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.runs import ranking_run_start
from annotator.scenarios.demo import demo_campaign, demo_dataset, demo_users
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import WorkerFactory, qualification_right_answers, user_with_role

pytestmark = pytest.mark.django_db
DEMO = Path(settings.BASE_DIR) / "fixtures" / "demo"


def rank_with_both_built_in_annotators(dataset, capture) -> list:
    runs = []
    for kind in ("minilm_pivot", "tfidf_pivot"):
        with capture(execute=True):
            run = ranking_run_start(dataset=dataset, annotator=annotator_register(name=kind, kind=kind), top_k=25)
        run.refresh_from_db()
        assert run.status == RunStatus.SUCCEEDED
        runs.append(run)
    return runs


def demo_built(capture) -> Campaign:
    """`make demo`: the demo photographs ranked by tfidf_pivot and minilm_pivot, the demo campaign launched."""
    out = OutputWrapper(io.StringIO())
    demo_users(out=out)
    demo_dataset(out=out)
    dataset = Dataset.objects.get(name="demo")
    rank_with_both_built_in_annotators(dataset, capture)
    demo_campaign(out=out)
    return dataset.campaigns.get()


def ten_photos_built(capture, tmp_path) -> Campaign:
    """Ten real photographs with five captions each, ranked by both built-in annotators, the defaults."""
    coco = json.loads((DEMO / "captions.json").read_text())
    images = coco["images"][:10]
    kept = {image["id"] for image in images}
    subset = {**coco, "images": images, "annotations": [a for a in coco["annotations"] if a["image_id"] in kept]}
    (tmp_path / "captions.json").write_text(json.dumps(subset))
    owner = user_with_role(Role.REQUESTER)
    dataset = dataset_import(
        name="ten photos", captions_path=tmp_path / "captions.json", images_path=DEMO / "images", owner=owner
    )
    runs = rank_with_both_built_in_annotators(dataset, capture)
    campaign = campaign_create(
        owner=owner, dataset=dataset, runs=runs, name="ten photos", direction="i2t", gold_exclusion_depth=12
    )
    return campaign_launch(campaign=campaign_build(campaign=campaign))


@pytest.fixture(params=["demo", "ten_photos"])
def ranked_campaign(request, django_capture_on_commit_callbacks, tmp_path) -> Campaign:
    if request.param == "demo":
        return demo_built(django_capture_on_commit_callbacks)
    return ten_photos_built(django_capture_on_commit_callbacks, tmp_path)


def captions_shown(items) -> list[int]:
    return [item.caption_id for item in items]


def test_a_pool_of_ranked_real_photos_holds_both_kinds_and_fails_same_answer_workers(ranked_campaign):
    """The ECCV protocol's good annotators pool nearly every original pair; the pool still holds 30-70% of
    them, none reaches a HIT, "always yes" and "always no" fail and a careful worker passes."""
    campaign = ranked_campaign
    pool = list(QualificationItem.objects.filter(campaign=campaign, withdrawn=False))
    positives = [item for item in pool if item.role == "gold_positive"]
    assert len(pool) >= 2 * campaign.qualification_items
    assert 0.3 <= len(positives) / len(pool) <= 0.7, f"{len(positives)} positive of {len(pool)}"
    assert len(set(captions_shown(pool))) == len(pool), "a caption appears twice in the pool"
    for item in positives:
        assert item.caption.image_id == item.image_id
    pool_keys = {item.key for item in pool}
    hit_keys = {pair_key_of(i.pair) for i in HitItem.objects.filter(hit__campaign=campaign).select_related("pair")}
    assert hit_keys and not pool_keys & hit_keys
    assert not pool_keys & {pair_key_of(pair) for pair in Pair.objects.filter(campaign=campaign)}

    for answer in ("yes", "no"):
        worker = WorkerFactory()
        attempt = qualification_start(campaign=campaign, worker=worker)
        same = {str(i): answer for i in range(len(attempt.items))}
        result = qualification_submit(attempt=attempt, worker=worker, answers=same)
        assert result.passed is False and result.score == 0.5, f"always {answer!r} scored {result.score}"

    worker = WorkerFactory()
    attempt = qualification_start(campaign=campaign, worker=worker)
    shown = QualificationItem.objects.in_bulk(attempt.items)
    assert len(set(captions_shown(shown.values()))) == len(attempt.items) == campaign.qualification_items
    roles = [shown[pk].role for pk in attempt.items]
    assert roles.count("gold_positive") == roles.count("gold_negative") == 3
    careful = qualification_right_answers(attempt)
    first_negative = str(roles.index("gold_negative"))
    careful[first_negative] = "yes"  # one slip on six items
    result = qualification_submit(attempt=attempt, worker=worker, answers=careful)
    assert result.passed is True and round(result.score, 3) == 0.833


def test_the_positive_share_is_a_campaign_option_kept_in_pool_and_test():
    owner = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=60)
    runs = [add_run(dataset=dataset, name="a", seed=1), add_run(dataset=dataset, name="b", seed=2)]
    campaign = campaign_create(
        owner=owner,
        dataset=dataset,
        runs=runs,
        name="share",
        direction="i2t",
        candidates_per_hit=4,
        qualification_pool_size=30,
        qualification_items=10,
        qualification_positive_share=0.3,
    )
    campaign = campaign_launch(campaign=campaign_build(campaign=campaign))
    roles = list(QualificationItem.objects.filter(campaign=campaign).values_list("role", flat=True))
    assert (roles.count("gold_positive"), roles.count("gold_negative")) == (9, 21)
    attempt = qualification_start(campaign=campaign, worker=WorkerFactory())
    shown = dict(QualificationItem.objects.filter(pk__in=attempt.items).values_list("pk", "role"))
    assert sorted(shown.values()).count("gold_positive") == 3 and len(shown) == 10
    with pytest.raises(ApplicationError) as error:
        campaign_create(owner=owner, dataset=dataset, runs=runs, name="bad", qualification_positive_share=0.9)
    assert "qualification_positive_share" in error.value.message


def test_a_pass_mark_that_same_answers_reach_is_refused():
    owner = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name="a", seed=1)]
    with pytest.raises(ApplicationError) as error:
        campaign_create(owner=owner, dataset=dataset, runs=runs, name="lenient", qualification_pass_mark=0.5)
    assert "pass mark must be above 0.5" in error.value.message


def test_a_one_sided_pool_is_warned_about_on_the_page_the_confirmation_and_the_api(client):
    owner = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=60)
    runs = [add_run(dataset=dataset, name="a", seed=1), add_run(dataset=dataset, name="b", seed=2)]
    campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, name="one-sided", candidates_per_hit=4)
    campaign = campaign_build(campaign=campaign)
    pool = QualificationItem.objects.filter(campaign=campaign)
    assert pool.filter(role="gold_positive").exists()
    client.force_login(owner)
    assert "qualification-warning" not in client.get(f"/campaigns/{campaign.pk}/").content.decode()

    # As a pool built before originals were reserved: every matching pair was pooled, none left for the test.
    pool.filter(role="gold_positive").delete()
    negatives = pool.count()
    counts = f"({negatives} pairs: 0 positive, {negatives} negative)"
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "one-sided" in page and counts in page
    confirm = client.get(f"/campaigns/{campaign.pk}/confirm/launch/").content.decode()
    assert 'id="qualification-warning"' in confirm and counts in confirm
    api = APIClient()
    api.force_authenticate(owner)
    detail = api.get(f"/api/v1/campaigns/{campaign.pk}/").json()
    assert detail["qualification_pool"]["positives"] == 0
    assert counts in detail["qualification_pool"]["warning"]


def test_build_campaign_prints_the_pool_and_warns_when_it_is_too_small():
    owner = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name=f"cmd-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    out = io.StringIO()
    args = ["--dataset", dataset.name, "--runs", ",".join(str(r.pk) for r in runs), "--owner", owner.username]
    call_command("build_campaign", *args, "--name", "fine", "--candidates-per-hit", "4", stdout=out)
    assert "qualification pool 40 pairs (20 positive, 20 negative)" in out.getvalue()
    assert "warning" not in out.getvalue()
    out = io.StringIO()
    call_command(
        "build_campaign", *args, "--name", "small", "--candidates-per-hit", "4", "--qualification-pool-size", "4",
        stdout=out,
    )  # fmt: skip
    assert "warning: The qualification pool is small (4 pairs: 2 positive, 2 negative)" in out.getvalue()
