"""Import a released label file (ECCV Caption, Crisscrossed Captions, JSONL) as a new label set.

An import never touches a campaign or another set: it makes a new set (or a new version of a set of the
same name). The file's ids are the dataset's source ids; COCO-style spellings are matched too
(`COCO_val2014_000000391895.jpg` and `COCO_val2014:sentid:770337` find the ids `391895` and `770337`).
Unknown ids are reported, with the query coverage; a file whose ids match nothing is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from annotator.analysis.labelsets import SetView
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Dataset
from annotator.labels.models.labelsets import LabelSet, LabelSetFormat, LabelSetKind
from annotator.labels.selectors.labelsets import dataset_pks
from annotator.labels.services.labelsets.readers import (
    ParsedSet,
    detect_format,
    read_cxc_csv,
    read_eccv_json,
    read_eccv_split,
    read_jsonl,
    split_direction,
)
from annotator.labels.services.labelsets.store import labelset_store

MAX_EXAMPLES = 10
SIDES = {"i2t": "image", "t2i": "caption", "t2t": "caption", "i2i": "image"}
PAIR_SIDES = {
    "image_caption": ("image", "caption"),
    "caption_caption": ("caption", "caption"),
    "image_image": ("image", "image"),
}


def _digits_key(value: str) -> str | None:
    """The number inside a COCO-style id ("COCO_val2014_000000391895.jpg" -> "391895"), else None."""
    found = re.findall(r"\d+", value)
    return str(int(found[-1])) if found else None


class _Resolver:
    """Source id -> primary key for one side of the dataset: the exact id first, then its number."""

    def __init__(self, exact: dict[str, int]):
        self.exact = exact
        self._by_number: dict[str, int] | None = None
        self._spelled: dict[str, int | None] = {}  # other spellings already looked up
        self.unknown: dict[str, None] = {}

    def __call__(self, value: str) -> int | None:
        pk = self.exact.get(value)
        if pk is not None:
            return pk
        if value in self._spelled:
            return self._spelled[value]
        if self._by_number is None:
            self._by_number = {}
            for source_id, pk_ in self.exact.items():
                if source_id.isdigit():
                    self._by_number.setdefault(str(int(source_id)), pk_)
        number = _digits_key(value)
        pk = self._by_number.get(number) if number is not None else None
        self._spelled[value] = pk
        if pk is None:
            self.unknown[value] = None
        return pk


def parse_files(
    *, fmt: str | None, files: Sequence[tuple[str, bytes | str]], threshold: float | None
) -> tuple[str, ParsedSet]:
    """Read the uploaded `files` ([(name, content)]) in `fmt` (detected from the names when None)."""
    if not files:
        raise ApplicationError("Choose a file to import.")
    if not fmt:
        fmt = detect_format(files[0][0], files[0][1])
    if fmt not in LabelSetFormat.values:
        raise ApplicationError(f"Unknown label file format {fmt!r}.", extra={"allowed": list(LabelSetFormat.values)})
    if threshold is not None and not fmt.startswith("cxc_"):
        raise ApplicationError("A threshold applies to rated (Crisscrossed Captions) files only.")
    if threshold is not None and not 0 <= threshold <= 5:
        raise ApplicationError("A threshold is a score from 0 to 5.")
    if fmt == LabelSetFormat.ECCV_SPLIT:
        by_direction: dict[str, bytes | str] = {}
        for name, content in files:
            direction = name if name in ("i2t", "t2i") else split_direction(name)
            if direction is None:
                raise ApplicationError(
                    f"{name!r}: the name of a split ECCV file says its direction "
                    "(eccv_image_to_caption.json or eccv_caption_to_image.json)."
                )
            if direction in by_direction:
                raise ApplicationError(
                    f"Two {direction} files; give one image-to-caption and one caption-to-image file."
                )
            by_direction[direction] = content
        return fmt, read_eccv_split(by_direction)
    if len(files) != 1:
        raise ApplicationError(f"A {LabelSetFormat(fmt).label} is one file; {len(files)} were given.")
    content = files[0][1]
    if fmt == LabelSetFormat.ECCV_JSON:
        return fmt, read_eccv_json(content)
    if fmt == LabelSetFormat.JSONL:
        return fmt, read_jsonl(content)
    return fmt, read_cxc_csv(content, fmt=fmt, threshold=threshold)


def resolve(*, parsed: ParsedSet, dataset: Dataset) -> tuple[SetView, dict, dict]:
    """The parsed set in the dataset's primary keys, the (score, choice) of each pair, and the report."""
    pks = dataset_pks(dataset_id=dataset.pk)
    resolvers = {"image": _Resolver(pks["image"]), "caption": _Resolver(pks["caption"])}
    view = SetView()
    report: dict = {"rows": parsed.rows, "pairs_in_file": len(parsed.pairs), "queries": {}}
    for direction, queries in parsed.queries.items():
        if not queries:
            continue
        resolver = resolvers[SIDES[direction]]
        matched = {pk for pk in map(resolver, queries) if pk is not None}
        view.queries[direction] = matched
        dataset_size = len(pks[SIDES[direction]])
        report["queries"][direction] = {
            "in_file": len(queries),
            "matched": len(matched),
            "coverage_of_file": round(len(matched) / len(queries), 4),
            "coverage_of_dataset": round(len(matched) / dataset_size, 4) if dataset_size else 0.0,
        }
    details = {}
    unmatched_pairs = conflicts = 0
    for (kind, first, second), label in parsed.pairs.items():
        first_side, second_side = PAIR_SIDES[kind]
        a, b = resolvers[first_side](first), resolvers[second_side](second)
        if a is None or b is None:
            unmatched_pairs += 1
            continue
        key = (kind, a, b)
        if key in view.pairs and view.pairs[key] and not label.is_positive:
            continue  # two spellings of one pair: a positive verdict stands
        view.pairs[key] = label.is_positive
        details[key] = (label.score, label.choice, label.sampling_method)
        if label.listed and len(label.listed) == 1 and a in view.queries["i2t"] and b in view.queries["t2i"]:
            # Listed by one direction's file while the other side is a judged query of the other direction
            # whose list lacks it: a set's pair answers for both queries, so it becomes that query's
            # positive too. ECCV Caption's released files have none.
            conflicts += 1
    report["pairs_with_unknown_ids"] = unmatched_pairs
    report["unknown_ids"] = {side: len(r.unknown) for side, r in resolvers.items()}
    report["unknown_examples"] = [
        f"{side} {value}" for side, r in resolvers.items() for value in list(r.unknown)[:MAX_EXAMPLES]
    ][:MAX_EXAMPLES]
    if not any(view.queries.values()) and not view.pairs:
        raise ApplicationError(
            f"None of the file's ids are images or captions of dataset {dataset.name} (use its source ids).",
            extra={"unknown_examples": report["unknown_examples"]},
        )
    if not any(view.queries.values()):
        raise ApplicationError(f"None of the file's queries are in dataset {dataset.name}; nothing would be judged.")
    report["direction_conflicts"] = conflicts
    return view, details, report


def labelset_import(
    *,
    dataset: Dataset,
    name: str,
    files: Sequence[tuple[str, bytes | str]],
    fmt: str | None = None,
    threshold: float | None = None,
    user=None,
    description: str = "",
    annotators: Sequence[str] = (),
    public: bool = False,
) -> LabelSet:
    """Import `files` ([(file name, content)]) as the next version of the set `name` on `dataset`.

    The report (LabelSet.report) says how many rows were read, how many pairs and queries matched the
    dataset, the unknown ids with examples, and the query coverage per direction. `annotators` names the
    machine annotators that proposed the file's candidates (ECCV Caption: PVSE, VSRN, PCME, ViLT, CLIP) so
    an evaluation of one of them warns. Raises ApplicationError (400) for an unreadable file or one whose
    ids match nothing. One transaction (see labelset_store for its lock); never changes another set.
    """
    fmt, parsed = parse_files(fmt=fmt, files=files, threshold=threshold)
    view, details, report = resolve(parsed=parsed, dataset=dataset)
    report["format"] = fmt
    return labelset_store(
        dataset=dataset,
        name=name,
        view=view,
        details=details,
        kind=LabelSetKind.IMPORTED,
        file_order=True,
        description=description,
        created_by=user,
        public=public,
        source_format=fmt,
        source_files=[file_name for file_name, _ in files],
        threshold=(threshold if threshold is not None else _default_threshold(fmt)),
        annotators=_clean_names(annotators),
        report=report,
    )


def _default_threshold(fmt: str) -> float | None:
    from annotator.labels.models.labelsets import CXC_THRESHOLDS

    return CXC_THRESHOLDS.get(fmt)


def _clean_names(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(name.strip()[:100] for name in names if name and name.strip()))[:20]
