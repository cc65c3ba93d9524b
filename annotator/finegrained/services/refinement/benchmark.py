"""Export the renovated benchmark (MSCOCO-FG Sec. 3): the enlarged gallery, the refined captions (their
current versions) and the verified labels, as a label set and as files (JSON, CSV) made from that set.

The label set is the record: its pairs are the benchmark's judged pairs and its report lists the caption
version each caption had when it was made, so the files rendered from it later read the same texts.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

from annotator.analysis.labelsets import IMAGE_CAPTION, SetView
from annotator.core.csvsafe import csv_writer
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.finegrained.models.pools import GalleryAddition
from annotator.finegrained.models.refinement import CaptionVersion
from annotator.labels.models.labelsets import (
    LabelSet,
    LabelSetKind,
    LabelSetOperation,
    LabelSetPair,
    QueryRule,
)
from annotator.labels.selectors.labelsets import labelset_view
from annotator.labels.services.labelsets.builds import labelset_from_campaign
from annotator.labels.services.labelsets.store import labelset_store

BENCHMARK_MARK = "renovated_benchmark"


def _verification_sets(*, dataset: Dataset, user) -> tuple[list[LabelSet], list[str]]:
    """A fresh snapshot of each enlargement's verification campaign that has labels; notes for the others."""
    sets, notes = [], []
    for enlargement in dataset.enlargements.exclude(verification=None).select_related("verification"):
        try:
            sets.append(labelset_from_campaign(campaign=enlargement.verification, user=user))
        except ApplicationError as error:
            notes.append(f"verification campaign {enlargement.verification_id}: {error.message}")
    return sets, notes


def benchmark_export(
    *, dataset: Dataset, user, name: str = "renovated", verified: list[LabelSet] | None = None
) -> LabelSet:
    """Save the renovated benchmark of `dataset` as the next version of label set `name` (kind derived).

    Gallery: every image of the dataset, the added pool images included. Queries: every image (i2t) and
    every caption (t2i). Pairs: the original pairs (positive), then the judged image-caption pairs of the
    verified sets (`verified`, default: a snapshot of each enlargement's verification campaign); a pair
    judged positive anywhere is positive. Captions are read at their current version (the report keeps
    which). The caller checked that `user` manages the dataset and may read the verified sets.
    Not idempotent: each call is a new version (see labelset_store for the lock).
    """
    notes: list[str] = []
    if verified is None:
        verified, notes = _verification_sets(dataset=dataset, user=user)
    for label_set in verified:
        if label_set.dataset_id != dataset.pk:
            raise ApplicationError(f"Label set {label_set.pk} belongs to another dataset.")
    image_ids = set(Image.objects.filter(dataset=dataset).values_list("pk", flat=True))
    caption_pairs = dict(Caption.objects.filter(dataset=dataset).values_list("pk", "image_id"))
    if not caption_pairs:
        raise ApplicationError("The dataset has no captions to export.", status=409)
    view = SetView(queries={"i2t": set(image_ids), "t2i": set(caption_pairs)})
    details = {}
    for caption_id, image_id in caption_pairs.items():
        key = (IMAGE_CAPTION, image_id, caption_id)
        view.pairs[key] = True
        details[key] = (None, "", "original")
    verified_positive = 0
    for label_set in verified:
        for key, positive in labelset_view(label_set=label_set).pairs.items():
            if key[0] != IMAGE_CAPTION or key[1] not in image_ids or key[2] not in caption_pairs:
                continue
            if key in details and details[key][2] == "original":
                continue
            view.pairs[key] = view.pairs.get(key, False) or positive
            details[key] = (None, "", "verified")
            verified_positive += positive
    versions = dict(
        CaptionVersion.objects.filter(caption__dataset=dataset)
        .order_by("caption_id", "version")
        .values_list("caption_id", "version")
    )  # the last row per caption wins: its current version
    added = GalleryAddition.objects.filter(image__dataset=dataset).count()
    report = {
        BENCHMARK_MARK: True,
        "gallery": {"images": len(image_ids), "added": added},
        "captions": {"total": len(caption_pairs), "refined": sum(1 for v in versions.values() if v > 1)},
        "verified_sets": [s.pk for s in verified],
        "verified_positive_pairs": verified_positive,
        "caption_versions": {str(k): v for k, v in versions.items() if v > 1},
        "notes": notes,
    }
    return labelset_store(
        dataset=dataset,
        name=name,
        view=view,
        details=details,
        operands=list(verified),
        kind=LabelSetKind.DERIVED,
        # The dataset's own pairs united with the verified sets' judgements, over every query.
        operation=LabelSetOperation.UNION,
        query_rule=QueryRule.ALL,
        description="Renovated benchmark: enlarged gallery, refined captions, verified labels.",
        created_by=user,
        report=report,
    )


def _caption_texts(label_set: LabelSet) -> dict[int, tuple[str, int, str, str]]:
    """caption pk -> (text, version, original text, source) as of the set."""
    wanted = {int(k): v for k, v in (label_set.report.get("caption_versions") or {}).items()}
    versions = {
        (row.caption_id, row.version): row
        for row in CaptionVersion.objects.filter(caption_id__in=wanted.keys()).only(
            "caption_id", "version", "text", "source"
        )
    }
    texts = {}
    for pk, text in Caption.objects.filter(dataset_id=label_set.dataset_id).values_list("pk", "text"):
        row = versions.get((pk, wanted.get(pk)))
        texts[pk] = (row.text, row.version, text, row.source) if row else (text, 1, text, "original")
    return texts


def benchmark_check(label_set: LabelSet) -> None:
    if not label_set.report.get(BENCHMARK_MARK):
        raise ApplicationError("This label set is not a renovated benchmark export.", status=404)


def benchmark_json_chunks(*, label_set: LabelSet) -> Iterator[str]:
    """The benchmark as one JSON document, streamed: images, captions (refined text, version, original),
    and the judged pairs with their source (original or verified)."""
    benchmark_check(label_set)
    images = Image.objects.filter(dataset_id=label_set.dataset_id).select_related("gallery_addition").order_by("pk")
    image_source = {}
    yield json.dumps({"dataset": label_set.dataset.name, "label_set": label_set.name, "version": label_set.version})[
        :-1
    ]
    yield ', "images": ['
    for n, image in enumerate(images.iterator(chunk_size=2000)):
        image_source[image.pk] = image.source_id
        addition = getattr(image, "gallery_addition", None)
        row = {
            "id": image.source_id,
            "file_name": image.file_name,
            "added_for": addition.target.source_id if addition else None,
        }
        yield ("," if n else "") + json.dumps(row)
    yield '], "captions": ['
    caption_rows = Caption.objects.filter(dataset_id=label_set.dataset_id).values_list("pk", "source_id", "image_id")
    caption_source = {}
    texts = _caption_texts(label_set)
    for n, (pk, source_id, image_id) in enumerate(caption_rows.order_by("pk")):
        caption_source[pk] = source_id
        text, version, original, source = texts[pk]
        row = {
            "id": source_id,
            "image_id": image_source.get(image_id),
            "text": text,
            "version": version,
            "source": source,
            "original_text": original,
        }
        yield ("," if n else "") + json.dumps(row)
    yield '], "pairs": ['
    pairs = LabelSetPair.objects.filter(label_set=label_set, kind=IMAGE_CAPTION).values_list(
        "image_id", "caption_id", "is_positive", "sampling_method"
    )
    for n, (image_id, caption_id, positive, origin) in enumerate(pairs.order_by("pk").iterator(chunk_size=5000)):
        row = {
            "image_id": image_source[image_id],
            "caption_id": caption_source[caption_id],
            "positive": positive,
            "source": origin,
        }
        yield ("," if n else "") + json.dumps(row)
    yield "]}\n"


CSV_HEADER = ["caption_id", "image_id", "positive", "source", "caption_text", "caption_version", "image_added_for"]


def benchmark_csv_chunks(*, label_set: LabelSet) -> Iterator[str]:
    """One row per judged pair, with the caption's refined text and version and where the image came from."""
    benchmark_check(label_set)
    images = {
        pk: (source_id, target)
        for pk, source_id, target in Image.objects.filter(dataset_id=label_set.dataset_id).values_list(
            "pk", "source_id", "gallery_addition__target__source_id"
        )
    }
    captions = dict(Caption.objects.filter(dataset_id=label_set.dataset_id).values_list("pk", "source_id"))
    texts = _caption_texts(label_set)
    buffer = io.StringIO()
    writer = csv_writer(buffer)
    writer.writerow(CSV_HEADER)
    pairs = LabelSetPair.objects.filter(label_set=label_set, kind=IMAGE_CAPTION).values_list(
        "image_id", "caption_id", "is_positive", "sampling_method"
    )
    for n, (image_id, caption_id, positive, origin) in enumerate(pairs.order_by("pk").iterator(chunk_size=5000)):
        text, version, _original, _source = texts[caption_id]
        image_source, target = images[image_id]
        writer.writerow([captions[caption_id], image_source, int(positive), origin, text, version, target or ""])
        if n % 1000 == 999:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
