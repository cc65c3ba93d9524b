"""Reads behind a scorecard: graded labels of a campaign, a stored run's rankings, a dataset as a test set.

The CIDEr relevance matrix of a dataset (every image's captions as references, every caption as a
candidate) is computed once per process and content (annotator.analysis.cider, seconds for a 5K test
set) and kept for the next evaluation of the same dataset in that worker.
"""

from __future__ import annotations

import hashlib
import threading

from django.conf import settings
from django.db.models import Count, Max

from annotator.analysis.cider import CiderCorpus, tokenize
from annotator.analysis.scorecard import Gallery
from annotator.analysis.spice import spice_matrix, spice_unavailable_reason
from annotator.campaigns.models.campaign import Campaign
from annotator.crowd.models.crowd import Choice
from annotator.datasets.models.categories import ImageCategory
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.labels.models.cleanup import CleanupProposal, CleanupStatus
from annotator.labels.models.labels import Label
from annotator.labels.models.labelsets import LabelSetPair
from annotator.labels.selectors.labelsets import labelset_label_maps
from annotator.ranking.models.ranking import Candidate, RankingRun

SIDES = {
    "i2t": ("image", "caption"),
    "t2i": ("caption", "image"),
    "t2t": ("caption", "caption"),
    "i2i": ("image", "image"),
}
_MATRIX_LOCK = threading.Lock()
_MATRIX_CACHE: dict[str, tuple] = {}  # one entry: (content digest) -> (images, captions, matrix)


def removed_caption_ids(*, campaign: Campaign | None) -> set[int]:
    """Captions whose removal the requester confirmed in this campaign (post-processing)."""
    if campaign is None:
        return set()
    return set(
        CleanupProposal.objects.filter(campaign=campaign, status=CleanupStatus.CONFIRMED).values_list(
            "caption_id", flat=True
        )
    )


def campaign_grades(*, campaign: Campaign, method: str, label_map: dict) -> dict[str, dict[str, dict[str, float]]]:
    """The label map with a grade per positive: 1.0 for "100% YES" (a strict positive), 0.5 for a lenient
    positive that is not strict ("Partially YES"; on the 0-5 scale a mean of 3 or more that is not strict).
    Positives the map has without a label of this method (merged original pairs) count 1.0."""
    strict: dict[tuple[str, str], bool] = {}
    rows = Label.objects.filter(pair__campaign=campaign, method=method, is_positive=True).values_list(
        "pair__image__source_id", "pair__caption__source_id", "is_positive_strict"
    )
    for image, caption, is_strict in rows.iterator(chunk_size=5000):
        strict[(image, caption)] = is_strict
    graded: dict[str, dict[str, dict[str, float]]] = {}
    for direction, queries in label_map.items():
        graded[direction] = {}
        for query, targets in queries.items():
            graded[direction][query] = {}
            for target in targets:
                key = (query, target) if direction == "i2t" else (target, query)
                graded[direction][query][target] = 1.0 if strict.get(key, True) else 0.5
    return graded


def labelset_grades(*, label_set) -> dict[str, dict[str, dict[str, float]]]:
    """A label set's positives per judged query with a grade each: 0.5 for a pair whose aggregated answer
    was "Partially YES", 1.0 otherwise (imported sets without answers: every positive 1.0). Source ids."""
    half: set[tuple[str, str, str]] = set()
    rows = LabelSetPair.objects.filter(label_set=label_set, is_positive=True, choice=Choice.PARTIALLY_YES)
    for kind, image, caption, other_image, other_caption in rows.values_list(
        "kind", "image__source_id", "caption__source_id", "other_image__source_id", "other_caption__source_id"
    ).iterator(chunk_size=10_000):
        if kind == "image_caption":
            half.add(("i2t", image, caption))
            half.add(("t2i", caption, image))
        elif kind == "caption_caption":
            half.update({("t2t", caption, other_caption), ("t2t", other_caption, caption)})
        else:
            half.update({("i2i", image, other_image), ("i2i", other_image, image)})
    return {
        direction: {
            query: {target: 0.5 if (direction, query, target) in half else 1.0 for target in targets}
            for query, targets in queries.items()
        }
        for direction, queries in labelset_label_maps(label_set=label_set).items()
    }


def campaign_annotator_names(*, campaign: Campaign) -> list[str]:
    """Machine annotators whose runs proposed the campaign's candidates."""
    return sorted(set(campaign.runs.values_list("annotator__name", flat=True)))


def run_rankings(*, run: RankingRun) -> dict[str, dict[str, list[str]]]:
    """A stored ranking run as a rankings file: {direction: {query source id: [target source ids by rank]}}."""
    ids = {
        "image": dict(Image.objects.filter(dataset_id=run.dataset_id).values_list("pk", "source_id")),
        "caption": dict(Caption.objects.filter(dataset_id=run.dataset_id).values_list("pk", "source_id")),
    }
    rankings: dict[str, dict[str, list[str]]] = {}
    rows = (
        Candidate.objects.filter(run=run)
        .order_by("direction", "query_id", "rank")
        .values_list("direction", "query_id", "target_id")
    )
    for direction, query, target in rows.iterator(chunk_size=20_000):
        query_side, target_side = SIDES[direction]
        rankings.setdefault(direction, {}).setdefault(ids[query_side][query], []).append(ids[target_side][target])
    return rankings


def test_set_digest(*, dataset: Dataset, removed: set[int]) -> str:
    """A cheap fingerprint of what the dataset-wide protocols read: captions, images, instance classes."""
    captions = Caption.objects.filter(dataset=dataset).exclude(pk__in=removed).aggregate(n=Count("id"), top=Max("id"))
    links = ImageCategory.objects.filter(image__dataset=dataset).aggregate(n=Count("id"), top=Max("id"))
    text = f"{dataset.pk}|{captions['n']}|{captions['top']}|{links['n']}|{links['top']}|{sorted(removed)}"
    return hashlib.sha256(text.encode()).hexdigest()


def dataset_test_set(
    *, dataset: Dataset, removed: set[int] = frozenset(), semantic: bool = True, semantic_metric: str = "cider"
) -> tuple[Gallery, list[str]]:
    """The dataset as a test set (captions in import order, instance classes if imported, the relevance
    matrix N of `semantic_metric` unless `semantic` is off, N is larger than SEMANTIC_MAX_PAIRS, or SPICE
    cannot run here), and notes on what was left out."""
    notes: list[str] = []
    rows = list(
        Caption.objects.filter(dataset=dataset)
        .exclude(pk__in=removed)
        .order_by("pk")
        .values_list("source_id", "image__source_id", "text")
    )
    caption_image = [(caption, image) for caption, image, _ in rows]
    image_classes = None
    if ImageCategory.objects.filter(image__dataset=dataset).exists():
        image_classes = {
            source: set() for source in Image.objects.filter(dataset=dataset).values_list("source_id", flat=True)
        }
        links = ImageCategory.objects.filter(image__dataset=dataset).values_list(
            "image__source_id", "category__source_id"
        )
        for image, category in links.iterator(chunk_size=10_000):
            image_classes[image].add(category)
        image_classes = {image: frozenset(classes) for image, classes in image_classes.items()}
    test_set = Gallery(caption_image=caption_image, image_classes=image_classes)
    if semantic and rows:
        images = list(dict.fromkeys(image for _, image, _ in rows))
        pairs = len(images) * len(rows)
        if pairs > settings.SEMANTIC_MAX_PAIRS:
            notes.append(
                f"SR@k and NCS@k: {len(images)} images x {len(rows)} captions is more than SEMANTIC_MAX_PAIRS "
                f"({settings.SEMANTIC_MAX_PAIRS:,}) pairs; not computed."
            )
        elif semantic_metric == "spice":
            reason = spice_unavailable_reason()
            if reason:
                notes.append(f"SR@k and NCS@k with SPICE: skipped. {reason}")
            else:
                references, tokens = _references(rows=rows, images=images)
                test_set.images, test_set.captions = images, [caption for caption, _, _ in rows]
                test_set.relevance, test_set.relevance_metric = spice_matrix(references, tokens), "SPICE"
        else:
            test_set.images, test_set.captions, test_set.relevance = relevance_matrix(rows=rows, images=images)
    return test_set, notes


def _references(*, rows: list[tuple[str, str, str]], images: list[str]) -> tuple[list[list[str]], list[str]]:
    """Each image's tokenized captions (its references) and every caption tokenized (the candidates)."""
    position = {image: row for row, image in enumerate(images)}
    references: list[list[str]] = [[] for _ in images]
    tokens = [tokenize(text) for _, _, text in rows]
    for (_, image, _), text in zip(rows, tokens, strict=True):
        references[position[image]].append(text)
    return references, tokens


def relevance_matrix(*, rows: list[tuple[str, str, str]], images: list[str]) -> tuple[list[str], list[str], object]:
    """N = CIDEr-D(image's captions, caption) over (caption source id, image source id, text) rows."""
    digest = hashlib.sha256(repr(rows).encode()).hexdigest()
    with _MATRIX_LOCK:
        cached = _MATRIX_CACHE.get(digest)
        if cached is not None:
            return cached
        references, tokens = _references(rows=rows, images=images)
        matrix = CiderCorpus(references).matrix(tokens)
        result = (images, [caption for caption, _, _ in rows], matrix)
        _MATRIX_CACHE.clear()  # one matrix at a time: a 5K test set's is about 1 GB
        _MATRIX_CACHE[digest] = result
        return result
