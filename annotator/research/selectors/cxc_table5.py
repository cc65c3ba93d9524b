"""The rated pairs of a label set as Crisscrossed Captions' Table 5 reads them: per task, (first id, second
id, agg_score) in CxC's id spellings and column order, in the set's stored order (an imported released file
keeps its lines' order)."""

from __future__ import annotations

from typing import NamedTuple

from annotator.analysis.cxc_table5 import KIND_TASK, PROTOCOL
from annotator.labels.models.labelsets import LabelSet, LabelSetPair
from annotator.labels.selectors.cxc_ids import cxc_ids
from annotator.research.models.research import Evaluation


class RatedPair(NamedTuple):
    """One rated pair: its label-set kind and the two items' pks as a machine annotator scores them
    (caption_caption: caption, caption; image_image: image, image; image_caption: image, caption), and its
    task with the two ids as CxC's file writes them (SITS: the caption first)."""

    kind: str
    first_pk: int
    second_pk: int
    task: str
    first: str
    second: str
    score: float


def labelset_cxc_rated_pairs(*, label_set: LabelSet) -> list[RatedPair]:
    """The set's pairs that carry a 0-5 score, in the set's stored order."""
    ids = cxc_ids(dataset_id=label_set.dataset_id)
    rows = (
        LabelSetPair.objects.filter(label_set=label_set, score__isnull=False)
        .order_by("pk")
        .values_list("kind", "image_id", "caption_id", "other_image_id", "other_caption_id", "score")
    )
    pairs = []
    for kind, image, caption, other_image, other_caption, score in rows.iterator(chunk_size=10_000):
        if kind == "caption_caption":
            pks, first, second = (caption, other_caption), ids["caption"][caption], ids["caption"][other_caption]
        elif kind == "image_image":
            pks, first, second = (image, other_image), ids["image"][image], ids["image"][other_image]
        else:  # SITS writes the caption first
            pks, first, second = (image, caption), ids["caption"][caption], ids["image"][image]
        pairs.append(RatedPair(kind, *pks, KIND_TASK[kind], first, second, float(score)))
    return pairs


def labelset_cxc_ratings(*, label_set: LabelSet) -> dict[str, list[tuple[str, str, float]]]:
    """{task ("sts", "sis", "sits"): [(first, second, score)]} of the set's pairs that carry a 0-5 score."""
    ratings: dict[str, list[tuple[str, str, float]]] = {}
    for pair in labelset_cxc_rated_pairs(label_set=label_set):
        ratings.setdefault(pair.task, []).append((pair.first, pair.second, pair.score))
    return ratings


def labelset_has_cxc_ratings(*, label_set: LabelSet) -> bool:
    return LabelSetPair.objects.filter(label_set=label_set, score__isnull=False).exists()


def labelset_cxc_evaluations(*, label_set: LabelSet, user, limit: int = 20) -> list[Evaluation]:
    """The set's latest Table 5 evaluations (uploaded scores and annotators' alike), newest first, with their
    status: what the set's page shows while an annotator's scores are being computed. The caller checked that
    `user` may read the set (every evaluation of a readable set is readable)."""
    del user  # the set's readers read all of its evaluations (annotator.research.selectors.access)
    return list(
        Evaluation.objects.filter(label_set=label_set, settings__protocol=PROTOCOL).order_by("-created_at", "-id")[
            :limit
        ]
    )
