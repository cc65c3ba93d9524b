"""Reads of label sets: who may see which, a set as plain data (SetView), its label maps in source ids."""

from __future__ import annotations

import re

from django.db.models import Q, QuerySet

from annotator.analysis.labelsets import DIRECTIONS, SetView, negatives_map, positives_map
from annotator.campaigns.selectors.access import campaigns_visible_to
from annotator.core.errors import ApplicationError
from annotator.core.selectors.access import is_researcher
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.datasets.selectors.access import datasets_visible_to
from annotator.labels.models.labelsets import LabelSet, LabelSetPair, LabelSetQuery
from annotator.labels.selectors.access import label_sets_visible_to

_NAME_AT_VERSION = re.compile(r"^(?P<name>.+?)@(?P<version>\d+)$")


def labelset_get_readable(*, user, label_set_id) -> LabelSet:
    """The set if `user` may read it; a 404 ApplicationError otherwise."""
    try:
        label_set_id = int(label_set_id)
    except (TypeError, ValueError):
        raise ApplicationError("A label set id is a whole number.") from None
    label_set = label_sets_visible_to(user).filter(pk=label_set_id).first()
    if label_set is None:
        raise ApplicationError(f"No label set {label_set_id} is visible to you.", status=404)
    return label_set


def labelset_find(
    *, reference: str, dataset: Dataset | None = None, sets: QuerySet[LabelSet] | None = None
) -> LabelSet:
    """A set named `name` (its latest version), `name@version`, or by id; within `dataset` when given.

    A name used on several datasets needs the dataset. An ApplicationError (404) names what is missing.
    """
    sets = LabelSet.objects.all() if sets is None else sets
    if dataset is not None:
        sets = sets.filter(dataset=dataset)
    reference = (reference or "").strip()
    if reference.isdigit() and sets.filter(pk=int(reference)).exists():
        return sets.get(pk=int(reference))
    match = _NAME_AT_VERSION.match(reference)
    if match:
        sets = sets.filter(name=match["name"], version=int(match["version"]))
    else:
        sets = sets.filter(name=reference)
    datasets = set(sets.values_list("dataset_id", flat=True))
    if not datasets:
        raise ApplicationError(f"There is no label set {reference!r}.", status=404)
    if len(datasets) > 1:
        raise ApplicationError(f"Label set {reference!r} exists on several datasets; name the dataset.")
    return sets.order_by("-version").first()


def labelset_datasets_usable(*, user) -> QuerySet[Dataset]:
    """Datasets `user` may put a label set on: a requester's visible datasets; for a researcher the
    datasets of the campaigns and label sets they may read."""
    if not is_researcher(user):
        return datasets_visible_to(user)
    return Dataset.objects.filter(
        Q(campaigns__in=campaigns_visible_to(user).values("pk"))
        | Q(label_sets__in=label_sets_visible_to(user).values("pk"))
    ).distinct()


def labelset_dataset_usable(*, user, dataset_id) -> Dataset:
    try:
        dataset_id = int(dataset_id)
    except (TypeError, ValueError):
        raise ApplicationError("A dataset id is a whole number.") from None
    dataset = labelset_datasets_usable(user=user).filter(pk=dataset_id).first()
    if dataset is None:
        raise ApplicationError(f"No dataset {dataset_id} is open to you.", status=404)
    return dataset


def labelset_operands(*, label_set: LabelSet) -> list[LabelSet]:
    """A derived set's inputs, in order."""
    return [link.operand for link in label_set.operand_links.select_related("operand").order_by("position")]


def labelset_view(*, label_set: LabelSet) -> SetView:
    """The whole set as plain data, ids as primary keys (Image for i2t/i2i queries, Caption for t2i/t2t)."""
    queries = {direction: set() for direction in DIRECTIONS}
    rows = LabelSetQuery.objects.filter(label_set=label_set).values_list("direction", "image_id", "caption_id")
    for direction, image_id, caption_id in rows.iterator(chunk_size=10_000):
        queries[direction].add(image_id if image_id is not None else caption_id)
    pairs = {}
    rows = LabelSetPair.objects.filter(label_set=label_set).values_list(
        "kind", "image_id", "caption_id", "other_image_id", "other_caption_id", "is_positive"
    )
    for kind, image_id, caption_id, other_image_id, other_caption_id, positive in rows.iterator(chunk_size=10_000):
        if kind == "image_caption":
            key = (kind, image_id, caption_id)
        elif kind == "caption_caption":
            key = (kind, caption_id, other_caption_id)
        else:
            key = (kind, image_id, other_image_id)
        pairs[key] = positive
    return SetView(queries=queries, pairs=pairs)


def dataset_source_ids(*, dataset_id: int) -> dict[str, dict[int, str]]:
    """{"image": {pk: source id}, "caption": {pk: source id}} of a dataset."""
    return {
        "image": dict(Image.objects.filter(dataset_id=dataset_id).values_list("pk", "source_id")),
        "caption": dict(Caption.objects.filter(dataset_id=dataset_id).values_list("pk", "source_id")),
    }


def dataset_pks(*, dataset_id: int) -> dict[str, dict[str, int]]:
    """{"image": {source id: pk}, "caption": {source id: pk}} of a dataset."""
    return {
        "image": dict(Image.objects.filter(dataset_id=dataset_id).values_list("source_id", "pk")),
        "caption": dict(Caption.objects.filter(dataset_id=dataset_id).values_list("source_id", "pk")),
    }


QUERY_TARGET_SIDES = {
    "i2t": ("image", "caption"),
    "t2i": ("caption", "image"),
    "t2t": ("caption", "caption"),
    "i2i": ("image", "image"),
}


def labelset_label_maps(*, label_set: LabelSet, view: SetView | None = None) -> dict[str, dict[str, list[str]]]:
    """{direction: {query source id: [positive target source ids, sorted]}} for every judged query of
    every direction the set has; a judged query without positives maps to []."""
    view = view or labelset_view(label_set=label_set)
    ids = dataset_source_ids(dataset_id=label_set.dataset_id)
    maps = {}
    for direction in view.directions():
        query_side, target_side = QUERY_TARGET_SIDES[direction]
        maps[direction] = {
            ids[query_side][query]: sorted(ids[target_side][t] for t in targets)
            for query, targets in positives_map(view, direction).items()
        }
    return maps


def labelset_negative_maps(*, label_set: LabelSet, view: SetView | None = None) -> dict[str, dict[str, list[str]]]:
    """{"i2t"/"t2i": {query source id: [verified negative target source ids, sorted]}} for the judged queries
    with a pair the set holds as not positive (the ECCV form of the explicit negatives)."""
    view = view or labelset_view(label_set=label_set)
    ids = dataset_source_ids(dataset_id=label_set.dataset_id)
    maps = {}
    for direction in ("i2t", "t2i"):
        query_side, target_side = QUERY_TARGET_SIDES[direction]
        maps[direction] = {
            ids[query_side][query]: sorted(ids[target_side][t] for t in targets)
            for query, targets in negatives_map(view, direction).items()
        }
    return maps


def ranking_run_rankings(*, run, max_rank: int | None = None) -> dict[str, dict[str, list[str]]]:
    """A stored ranking run as a rankings file: {direction: {query source id: [target source ids by rank]}}."""
    from annotator.ranking.models.ranking import Candidate

    ids = dataset_source_ids(dataset_id=run.dataset_id)
    rows = Candidate.objects.filter(run=run)
    if max_rank is not None:
        rows = rows.filter(rank__lte=max_rank)
    rankings: dict[str, dict[str, list[str]]] = {}
    for direction, query, target in (
        rows.order_by("direction", "query_id", "rank")
        .values_list("direction", "query_id", "target_id")
        .iterator(chunk_size=10_000)
    ):
        query_side, target_side = QUERY_TARGET_SIDES[direction]
        rankings.setdefault(direction, {}).setdefault(ids[query_side][query], []).append(ids[target_side][target])
    return rankings
