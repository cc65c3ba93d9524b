"""A campaign whose labels follow a known truth, with runs and rankings of several models, for the
evaluation and leaderboard tests.

The dataset is a small synthetic set (annotator.scenarios.synthetic: every true caption-image pair is known); the
campaign's labels hold every true pair of the first images as "100% YES" (every third one "Partially
YES") and some false pairs as "100% NO"; the instance classes come from the generator's instances file.
Models rank with a controlled amount of noise, so better models score better.
"""

from __future__ import annotations

import json
import random

from annotator import models
from annotator.datasets.services.categories import categories_import
from annotator.scenarios.synthetic import generate, instances
from tests import factories

IMAGES = 24


def labelled_dataset(*, tmp_path, images: int = IMAGES, seed: int = 4):
    """(dataset, truth {"i2t": {image: [captions]}, "t2i": {caption: [images]}}) with instance classes."""
    scenes, captions = generate(images=images, seed=seed)
    dataset = factories.DatasetFactory(name=f"syn-{seed}-{images}")
    image_rows = {
        scene.image_id: factories.ImageFactory(dataset=dataset, source_id=str(scene.image_id)) for scene in scenes
    }
    for caption in captions:
        factories.CaptionFactory(
            dataset=dataset, image=image_rows[caption.image_id], source_id=str(caption.caption_id), text=caption.text
        )
    path = tmp_path / f"instances-{seed}.json"
    path.write_text(json.dumps(instances(scenes)))
    categories_import(dataset=dataset, path=path)
    truth = {"i2t": {}, "t2i": {}}
    for caption in captions:
        truth["t2i"][str(caption.caption_id)] = [str(image) for image in caption.matches]
        for image in caption.matches:
            truth["i2t"].setdefault(str(image), []).append(str(caption.caption_id))
    return dataset, truth


def labelled_campaign(*, owner, dataset, truth, queries: int = 12, builders=("tfidf-builder",)):
    """A campaign whose majority labels are the truth of the first `queries` images (i2t) and of their
    first captions (t2i), plus one false pair per image; its runs are those of the `builders` annotators."""
    campaign = factories.CampaignFactory(owner=owner, dataset=dataset, direction=models.CampaignDirection.BOTH)
    images = {image.source_id: image for image in dataset.images.all()}
    captions = {caption.source_id: caption for caption in dataset.captions.all()}
    runs = []
    for name in builders:
        annotator = models.MachineAnnotator.objects.filter(name=name).first() or factories.MachineAnnotatorFactory(
            name=name
        )
        runs.append(factories.RankingRunFactory(dataset=dataset, annotator=annotator))
        campaign.runs.add(runs[-1])
    rng = random.Random(1)
    labelled = set()
    for number, image in enumerate(sorted(truth["i2t"], key=int)[:queries]):
        for position, caption in enumerate(truth["i2t"][image]):
            labelled.add(
                (image, caption, "i2t", models.Choice.PARTIALLY_YES if position % 3 == 2 else models.Choice.YES)
            )
        wrong = rng.choice([c for c in captions if c not in truth["i2t"][image]])
        labelled.add((image, wrong, "i2t", models.Choice.NO))
        own_caption = str(1_000_000 + 5 * (int(image) - 1) + number % 5)
        for other in truth["t2i"][own_caption]:
            labelled.add((other, own_caption, "t2i", models.Choice.YES))
    seen = set()
    for image, caption, stage, choice in sorted(labelled):
        if (image, caption) in seen:
            continue
        seen.add((image, caption))
        pair = factories.PairFactory(
            campaign=campaign,
            image=images[image],
            caption=captions[caption],
            direction=stage,
            is_original=captions[caption].image_id == images[image].pk,
            query_id=images[image].pk if stage == "i2t" else captions[caption].pk,
        )
        for run in runs:  # the provenance: which run proposed the pair, in which direction
            models.PairSource.objects.create(pair=pair, run=run, direction=stage, rank=1, score=1.0)
        factories.LabelFactory(pair=pair, method=models.AggregationMethod.MAJORITY, choice=choice)
    return campaign


def noisy_rankings(truth: dict, *, dataset, noise: float, seed: int, depth: int = 30) -> dict:
    """Rankings where each true target is kept with probability 1 - noise and put at a random place among
    the first 1 + 20 * noise; the rest of the list is random. More noise, worse scores on every metric."""
    rng = random.Random(seed)
    images = list(dataset.images.values_list("source_id", flat=True))
    captions = list(dataset.captions.values_list("source_id", flat=True))
    rankings = {}
    for direction, queries, gallery in (("i2t", images, captions), ("t2i", captions, images)):
        rankings[direction] = {}
        for query in queries:
            positives = [t for t in truth[direction].get(query, []) if rng.random() > noise]
            ranked = [t for t in rng.sample(gallery, min(depth, len(gallery))) if t not in positives]
            for target in positives:
                ranked.insert(rng.randint(0, int(20 * noise)), target)
            rankings[direction][query] = ranked[:depth]
    return rankings


def store_run(*, dataset, annotator_name: str, rankings: dict) -> models.RankingRun:
    """A finished ranking run holding `rankings` as its candidates."""
    annotator = models.MachineAnnotator.objects.filter(name=annotator_name).first() or (
        factories.MachineAnnotatorFactory(name=annotator_name)
    )
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=30)
    pk = {
        "image": dict(dataset.images.values_list("source_id", "pk")),
        "caption": dict(dataset.captions.values_list("source_id", "pk")),
    }
    rows = []
    for direction, (query_side, target_side) in (("i2t", ("image", "caption")), ("t2i", ("caption", "image"))):
        for query, ranked in rankings[direction].items():
            for rank, target in enumerate(ranked, start=1):
                rows.append(
                    models.Candidate(
                        run=run,
                        direction=direction,
                        query_id=pk[query_side][query],
                        target_id=pk[target_side][target],
                        rank=rank,
                        score=1.0 / rank,
                    )
                )
    models.Candidate.objects.bulk_create(rows)
    return run


MODELS = (("oracle-ish", 0.05), ("good", 0.25), ("fair", 0.5), ("weak", 0.8))


def leaderboard_world(*, tmp_path, capture, owner, researcher=None, resamples: int = 100):
    """A labelled campaign shared with `researcher`, and five evaluated models: the builder's run (biased),
    an outsider's run, and uploads of three noise levels. Returns (campaign, {name: evaluation})."""
    from annotator.research.services.scorecards import evaluation_request

    dataset, truth = labelled_dataset(tmp_path=tmp_path)
    campaign = labelled_campaign(owner=owner, dataset=dataset, truth=truth)
    if researcher is not None:
        campaign.shared_with.add(researcher)
    requests = [
        {
            "name": "tfidf-builder",
            "ranking_run": store_run(
                dataset=dataset,
                annotator_name="tfidf-builder",
                rankings=noisy_rankings(truth, dataset=dataset, noise=0.35, seed=11),
            ),
        },
        {
            "name": "minilm-outsider",
            "ranking_run": store_run(
                dataset=dataset,
                annotator_name="minilm-outsider",
                rankings=noisy_rankings(truth, dataset=dataset, noise=0.45, seed=12),
            ),
        },
    ]
    for seed, (name, noise) in enumerate(MODELS[:3], start=20):
        requests.append({"name": name, "rankings": noisy_rankings(truth, dataset=dataset, noise=noise, seed=seed)})
    evaluations = {}
    for kwargs in requests:
        with capture(execute=True):
            evaluation, _ = evaluation_request(campaign=campaign, user=owner, resamples=resamples, **kwargs)
        evaluation.refresh_from_db()
        evaluations[evaluation.name] = evaluation
    return campaign, evaluations
