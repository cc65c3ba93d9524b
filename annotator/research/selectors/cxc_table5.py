"""The rated pairs of a label set as Crisscrossed Captions' Table 5 reads them: per task, (first id, second
id, agg_score) in CxC's id spellings and column order, in the set's stored order (an imported released file
keeps its lines' order)."""

from __future__ import annotations

from annotator.analysis.cxc_table5 import KIND_TASK
from annotator.labels.models.labelsets import LabelSet, LabelSetPair
from annotator.labels.selectors.cxc_ids import cxc_ids


def labelset_cxc_ratings(*, label_set: LabelSet) -> dict[str, list[tuple[str, str, float]]]:
    """{task ("sts", "sis", "sits"): [(first, second, score)]} of the set's pairs that carry a 0-5 score."""
    ids = cxc_ids(dataset_id=label_set.dataset_id)
    ratings: dict[str, list[tuple[str, str, float]]] = {}
    rows = (
        LabelSetPair.objects.filter(label_set=label_set, score__isnull=False)
        .order_by("pk")
        .values_list("kind", "image_id", "caption_id", "other_image_id", "other_caption_id", "score")
    )
    for kind, image, caption, other_image, other_caption, score in rows.iterator(chunk_size=10_000):
        if kind == "caption_caption":
            first, second = ids["caption"][caption], ids["caption"][other_caption]
        elif kind == "image_image":
            first, second = ids["image"][image], ids["image"][other_image]
        else:  # SITS writes the caption first
            first, second = ids["caption"][caption], ids["image"][image]
        ratings.setdefault(KIND_TASK[kind], []).append((first, second, float(score)))
    return ratings
