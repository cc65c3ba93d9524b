"""Exports of a label set, written as a stream of text chunks (a download or a file, chunk by chunk).

- `eccv_json`: `{"i2t": {query: [positives]}, "t2i": {...}}` (and "t2t"/"i2i" when the set has them),
  ids that are integers written as JSON integers, as ECCV Caption releases them. Queries without a
  positive are left out: ECCV Caption's metrics cannot score them. Beside them, `"verified_negatives":
  {"i2t": {query: [negatives]}, "t2i": {...}}` lists the pairs the set judged not positive, as the
  campaign export does (it imports back); a set without any (a released set) exports its released form;
- `eccv_split`: one direction's map alone (the file `eccv_image_to_caption.json` or
  `eccv_caption_to_image.json` as released): `direction` says which;
- `csv`: `kind,image,caption,other_image,other_caption,positive,score,choice,i2t_query,t2i_query`, one
  row per judged pair; the last two say whether the image / the caption is a judged query;
- `cxc_sits`, `cxc_sts`, `cxc_sis`: Crisscrossed Captions' own files (the set's pairs of that kind, CxC's
  columns and id spellings, the sampling method a CxC import kept), so a released file re-exports as it came;
- `jsonl`: one judged pair per line in the form the JSONL import reads (`direction` names the judged
  query side when only one is judged), so an exported set imports back as the same set.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

from annotator.analysis.labelsets import SetView
from annotator.core.csvsafe import csv_writer
from annotator.core.errors import ApplicationError
from annotator.labels.cxc_files import (
    FORMAT_KINDS,
    cxc_chunks,
    cxc_members,
    cxc_score,
)
from annotator.labels.eccv_ids import id_json, id_order
from annotator.labels.models.labelsets import LabelSet, LabelSetPair
from annotator.labels.selectors.cxc_ids import cxc_ids
from annotator.labels.selectors.labelsets import (
    dataset_source_ids,
    labelset_label_maps,
    labelset_negative_maps,
    labelset_view,
)

FORMATS = ("eccv_json", "eccv_split", "csv", "jsonl", "cxc_sits", "cxc_sts", "cxc_sis")
SPLIT_NAMES = {"i2t": "eccv_image_to_caption.json", "t2i": "eccv_caption_to_image.json"}
CSV_HEADER = [
    "kind",
    "image",
    "caption",
    "other_image",
    "other_caption",
    "positive",
    "score",
    "choice",
    "i2t_query",
    "t2i_query",
]


def _map_chunks(mapping: dict[str, list[str]]) -> Iterator[str]:
    yield "{"
    first = True
    for query in sorted(mapping, key=id_order):
        targets = mapping[query]
        if not targets:
            continue
        yield ("" if first else ", ") + json.dumps(query) + ": [" + ", ".join(map(id_json, targets)) + "]"
        first = False
    yield "}"


def export_file_name(*, label_set: LabelSet, fmt: str, direction: str | None = None) -> str:
    if fmt == "eccv_split":
        return SPLIT_NAMES[direction or "i2t"]
    if fmt in FORMAT_KINDS:
        return f"{label_set.name}-v{label_set.version}-{fmt.removeprefix('cxc_')}.csv"
    suffix = {"eccv_json": "json", "csv": "csv", "jsonl": "jsonl"}[fmt]
    return f"{label_set.name}-v{label_set.version}.{suffix}"


def _details(label_set: LabelSet) -> dict[tuple, tuple]:
    details = {}
    rows = LabelSetPair.objects.filter(label_set=label_set).values_list(
        "kind", "image_id", "caption_id", "other_image_id", "other_caption_id", "score", "choice"
    )
    for kind, image, caption, other_image, other_caption, score, choice in rows.iterator(chunk_size=10_000):
        first = caption if kind == "caption_caption" else image
        second = caption if kind == "image_caption" else (other_caption if kind == "caption_caption" else other_image)
        details[(kind, first, second)] = (score, choice)
    return details


def _pair_ids(key: tuple, ids: dict) -> dict:
    kind, first, second = key
    if kind == "image_caption":
        return {"image": ids["image"][first], "caption": ids["caption"][second]}
    if kind == "caption_caption":
        return {"caption": ids["caption"][first], "other_caption": ids["caption"][second]}
    return {"image": ids["image"][first], "other_image": ids["image"][second]}


def _judged_sides(key: tuple, view: SetView) -> tuple[bool, bool]:
    kind, first, second = key
    if kind != "image_caption":
        return False, False
    return first in view.queries["i2t"], second in view.queries["t2i"]


def labelset_export_chunks(*, label_set: LabelSet, fmt: str, direction: str | None = None) -> Iterator[str]:
    """The export as text chunks. ApplicationError for an unknown format or a direction the set lacks."""
    if fmt not in FORMATS:
        raise ApplicationError(f"Unknown export format {fmt!r}.", extra={"allowed": list(FORMATS)})
    if fmt in FORMAT_KINDS:
        if direction:
            raise ApplicationError("Only the split ECCV export takes a direction.")
        return _cxc_chunks(label_set=label_set, kind=FORMAT_KINDS[fmt])
    view = labelset_view(label_set=label_set)
    if fmt in ("eccv_json", "eccv_split"):
        maps = labelset_label_maps(label_set=label_set, view=view)
        if fmt == "eccv_split":
            if direction not in SPLIT_NAMES:
                raise ApplicationError('The split export is one file per direction: "i2t" or "t2i".')
            return iter([*_map_chunks(maps.get(direction, {})), "\n"])
        return _eccv_json_chunks(maps, labelset_negative_maps(label_set=label_set, view=view))
    if direction:
        raise ApplicationError("Only the split ECCV export takes a direction.")
    return _pair_chunks(label_set=label_set, view=view, fmt=fmt)


def _eccv_json_chunks(maps: dict, negatives: dict) -> Iterator[str]:
    yield "{"
    for index, direction in enumerate(d for d in ("i2t", "t2i", "t2t", "i2i") if d in maps or d in ("i2t", "t2i")):
        yield ("" if index == 0 else ", ") + json.dumps(direction) + ": "
        yield from _map_chunks(maps.get(direction, {}))
    if not (negatives.get("i2t") or negatives.get("t2i")):
        yield "}\n"  # a set that judged no pair negative (a released set) exports exactly its released form
        return
    yield ', "verified_negatives": {"i2t": '
    yield from _map_chunks(negatives.get("i2t", {}))
    yield ', "t2i": '
    yield from _map_chunks(negatives.get("t2i", {}))
    yield "}}\n"


def _pair_chunks(*, label_set: LabelSet, view: SetView, fmt: str) -> Iterator[str]:
    ids = dataset_source_ids(dataset_id=label_set.dataset_id)
    details = _details(label_set)
    buffer = io.StringIO()
    writer = csv_writer(buffer, lineterminator="\n")
    if fmt == "csv":
        writer.writerow(CSV_HEADER)
    for count, (key, positive) in enumerate(sorted(view.pairs.items()), start=1):
        score, choice = details.get(key, (None, ""))
        members = _pair_ids(key, ids)
        i2t_query, t2i_query = _judged_sides(key, view)
        if fmt == "csv":
            writer.writerow(
                [
                    key[0],
                    members.get("image", ""),
                    members.get("caption", ""),
                    members.get("other_image", ""),
                    members.get("other_caption", ""),
                    int(positive),
                    "" if score is None else f"{score:.4g}",
                    choice,
                    int(i2t_query),
                    int(t2i_query),
                ]
            )
        else:
            record = {**members, "positive": positive}
            if score is not None:
                record["score"] = score
            if choice:
                record["choice"] = choice
            if key[0] == "image_caption" and i2t_query != t2i_query:
                record["direction"] = "i2t" if i2t_query else "t2i"
            buffer.write(json.dumps(record, ensure_ascii=False) + "\n")
        if count % 5000 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _cxc_chunks(*, label_set: LabelSet, kind: str) -> Iterator[str]:
    ids = cxc_ids(dataset_id=label_set.dataset_id)
    rows = (
        LabelSetPair.objects.filter(label_set=label_set, kind=kind)
        .order_by("pk")
        .values_list("image_id", "caption_id", "other_image_id", "other_caption_id", "score", "sampling_method")
    )

    def lines():
        for image, caption, other_image, other_caption, score, method in rows.iterator(chunk_size=10_000):
            first, second = cxc_members(
                kind=kind, image=image, caption=caption, other_image=other_image, other_caption=other_caption, ids=ids
            )
            yield first, second, cxc_score(score), method

    return cxc_chunks(kind=kind, rows=lines())
