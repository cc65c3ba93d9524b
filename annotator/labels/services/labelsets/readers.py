"""Readers of the released label files, into one shape (`ParsedSet`) with the file's own ids.

- ECCV Caption JSON, merged: `{"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}}`
  (Vericap's `eccv_json` export is this too, with its `verified_negatives` in the same form beside them);
- ECCV Caption as released, two files: `eccv_image_to_caption.json` `{image id: [caption ids]}` and
  `eccv_caption_to_image.json` `{caption id: [image ids]}` (Vericap's `eccv_split` export);
  every key is a judged query, every listed id a positive;
- Crisscrossed Captions CSV: SITS `caption,image,agg_score,sampling_method`, STS `caption1,caption2,...`,
  SIS `image1,image2,...`; every rated pair is judged, positive at `agg_score >= threshold`; the judged
  queries are every caption and image of a SITS file, the first column of an STS or SIS file;
- JSONL: one judged pair per line, `{"image": id, "caption": id, "positive": true}` (or `other_caption`,
  `other_image` for caption-caption and image-image pairs), optional `score` (0-5), `choice`, and
  `direction` (or `stage`): which side is the judged query, "i2t" the image, "t2i" the caption, absent
  both. Vericap's own campaign JSONL export (`label.is_positive`, `stage`) reads as it is.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from dataclasses import dataclass, field

from annotator.analysis.labelsets import DIRECTIONS
from annotator.analysis.metrics import parse_direction_file
from annotator.core.errors import ApplicationError
from annotator.labels.models.labelsets import CXC_THRESHOLDS, LabelSetFormat

MAX_FILE_BYTES = 200 * 1024 * 1024
MAX_ERRORS = 20
SPLIT_FILE_DIRECTION = {"image_to_caption": "i2t", "caption_to_image": "t2i"}
CXC_COLUMNS = {
    LabelSetFormat.CXC_SITS: ("caption", "image"),
    LabelSetFormat.CXC_STS: ("caption1", "caption2"),
    LabelSetFormat.CXC_SIS: ("image1", "image2"),
}


@dataclass
class ParsedPair:
    is_positive: bool
    score: float | None = None
    choice: str = ""
    sampling_method: str = ""  # a CxC file's sampling_method, kept so the set exports as it came
    listed: set[str] = field(default_factory=set)  # the ECCV directions whose lists hold the pair


@dataclass
class ParsedSet:
    """Judged queries per direction and judged pairs, in the file's ids (strings).

    Pair keys: ("image_caption", image, caption), ("caption_caption", caption, caption),
    ("image_image", image, image).
    """

    queries: dict[str, dict[str, None]] = field(default_factory=lambda: {d: {} for d in ("i2t", "t2i", "t2t", "i2i")})
    pairs: dict[tuple[str, str, str], ParsedPair] = field(default_factory=dict)
    rows: int = 0

    def add_query(self, direction: str, query: str) -> None:
        self.queries[direction][query] = None

    def add_pair(self, key: tuple[str, str, str], label: ParsedPair) -> None:
        """A pair listed twice keeps its positive verdict (a file that lists it in both directions)."""
        known = self.pairs.get(key)
        if known is None:
            self.pairs[key] = label
            return
        label.listed |= known.listed
        known.listed = label.listed
        if label.is_positive and not known.is_positive:
            self.pairs[key] = label


def decode(content: bytes | str, *, what: str) -> str:
    """UTF-8 text of an uploaded file; a gzip-compressed one (e.g. `sits_test.csv.gz`) is decompressed,
    never beyond MAX_FILE_BYTES."""
    if isinstance(content, str):
        return content
    if len(content) > MAX_FILE_BYTES:
        raise ApplicationError(f"The {what} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB.", status=413)
    if content[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(content)) as packed:
                content = packed.read(MAX_FILE_BYTES + 1)
        except (OSError, EOFError):
            raise ApplicationError(f"The {what} looks gzip-compressed but cannot be decompressed.") from None
        if len(content) > MAX_FILE_BYTES:
            raise ApplicationError(
                f"The {what} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB unpacked.", status=413
            )
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ApplicationError(f"The {what} is not UTF-8 text.") from None


def _id(value, *, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ApplicationError(f"{where}: an id is a string or an integer, not {json.dumps(value)[:40]}.")
    text = str(value).strip()
    if not text:
        raise ApplicationError(f"{where}: an empty id.")
    return text


def _json(text: str, *, what: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ApplicationError(f"The {what} is not valid JSON ({error.msg}, line {error.lineno}).") from None


def _read_direction_mapping(parsed: ParsedSet, mapping, *, direction: str, what: str, positive: bool = True) -> None:
    """`{query: [targets]}` of one direction: judged queries and their positives (or, with `positive` False,
    their verified negatives)."""
    if not isinstance(mapping, dict):
        raise ApplicationError(f"The {what} must map {direction} query ids to lists of ids.")
    for key, targets in mapping.items():
        where = f'{what}, "{key}"'
        if not isinstance(targets, list):
            raise ApplicationError(f"{where}: the {'positives' if positive else 'negatives'} must be a list of ids.")
        query = _id(key, where=where)
        parsed.add_query(direction, query)
        for target in targets:
            target = _id(target, where=where)
            key_ = ("image_caption", query, target) if direction == "i2t" else ("image_caption", target, query)
            label = ParsedPair(is_positive=True, listed={direction}) if positive else ParsedPair(is_positive=False)
            parsed.add_pair(key_, label)
            parsed.rows += 1


def read_eccv_json(content: bytes | str) -> ParsedSet:
    """The merged ECCV form: `{"i2t": {...}, "t2i": {...}}`, either direction may be missing. Vericap's export
    adds `"verified_negatives": {"i2t": {...}, "t2i": {...}}` in the same form: judged pairs, not positive."""
    data = _json(decode(content, what="ECCV file"), what="ECCV file")
    if not isinstance(data, dict) or not ({"i2t", "t2i"} & set(data)):
        raise ApplicationError(
            'A merged ECCV Caption file is a JSON object with "i2t" and/or "t2i"; for the two released files '
            "(eccv_image_to_caption.json, eccv_caption_to_image.json) choose the split format."
        )
    unknown = sorted(set(data) - {"i2t", "t2i", "verified_negatives"})
    if unknown:
        raise ApplicationError(f'The ECCV file has unknown keys {unknown[:5]}; expected "i2t" and "t2i".')
    negatives = data.get("verified_negatives", {})
    if not isinstance(negatives, dict) or set(negatives) - {"i2t", "t2i"}:
        raise ApplicationError('"verified_negatives" maps "i2t" and/or "t2i" to each query\'s verified negatives.')
    parsed = ParsedSet()
    for direction in ("i2t", "t2i"):
        if direction in data:
            _read_direction_mapping(parsed, data[direction], direction=direction, what=f'"{direction}"')
    for direction in ("i2t", "t2i"):
        if direction in negatives:
            what = f'"verified_negatives" "{direction}"'
            _read_direction_mapping(parsed, negatives[direction], direction=direction, what=what, positive=False)
    return parsed


def rankings_read(
    *,
    raw: bytes | str | dict,
    what: str = "rankings file",
    directions: tuple[str, ...] = DIRECTIONS,
    negatives_allowed: bool = False,
) -> dict[str, dict[str, list[str]]]:
    """The one reader of a rankings file `{"i2t": {query id: [target ids, best first]}, "t2i": ..., "t2t": ...,
    "i2i": ...}` (any of `directions`), and of a label map in the same form, every id as a string.

    The same size guard as every label file (`decode`: 413 over MAX_FILE_BYTES, gzip unpacked), then
    ApplicationError (400) naming what is wrong: not JSON, an unknown key, a query whose value is not a list
    of ids. `negatives_allowed`: a label file in Vericap's ECCV JSON form, whose verified negatives are left
    out (analysis.metrics.parse_direction_file)."""
    data = raw if isinstance(raw, dict) else _json(decode(raw, what=what), what=what)
    try:
        parsed = parse_direction_file(data, what=what, directions=directions, negatives_allowed=negatives_allowed)
    except ValueError as error:
        raise ApplicationError(str(error)) from None
    return {direction: queries for direction, queries in parsed.items() if direction in data}


def split_direction(name: str) -> str | None:
    """ "i2t" for a file named like eccv_image_to_caption.json, "t2i" for ..._caption_to_image...; else None."""
    lowered = (name or "").lower()
    for marker, direction in SPLIT_FILE_DIRECTION.items():
        if marker in lowered:
            return direction
    return None


def read_eccv_split(files: dict[str, bytes | str]) -> ParsedSet:
    """The two released ECCV files, `{"i2t": content, "t2i": content}` (one of them may be missing)."""
    if not files or set(files) - {"i2t", "t2i"}:
        raise ApplicationError("Give the image-to-caption file, the caption-to-image file, or both.")
    parsed = ParsedSet()
    for direction, content in files.items():
        name = "image-to-caption file" if direction == "i2t" else "caption-to-image file"
        data = _json(decode(content, what=name), what=name)
        if isinstance(data, dict) and ({"i2t", "t2i"} & set(data)):
            raise ApplicationError(
                f'The {name} holds "i2t"/"t2i" keys: it is a merged ECCV file; import it with the merged format.'
            )
        _read_direction_mapping(parsed, data, direction=direction, what=f"the {name}")
    return parsed


def read_cxc_csv(content: bytes | str, *, fmt: str, threshold: float | None = None) -> ParsedSet:
    """A Crisscrossed Captions test file; positive at `agg_score >= threshold` (default: CxC's own, 3 for
    SITS and STS, 2.5 for SIS)."""
    first, second = CXC_COLUMNS[fmt]
    threshold = CXC_THRESHOLDS[fmt] if threshold is None else threshold
    reader = csv.DictReader(io.StringIO(decode(content, what="CSV file")))
    columns = {name.strip() for name in (reader.fieldnames or []) if name}
    if not {first, second, "agg_score"} <= columns:
        raise ApplicationError(
            f"A {LabelSetFormat(fmt).label} needs the columns {first},{second},agg_score(,sampling_method); "
            f"this file has {','.join(sorted(columns)) or 'none'}."
        )
    kind = {"cxc_sits": "image_caption", "cxc_sts": "caption_caption", "cxc_sis": "image_image"}[fmt]
    parsed, errors = ParsedSet(), []
    for line, row in enumerate(reader, start=2):
        row = {key.strip(): (value or "").strip() for key, value in row.items() if key}
        problem = None
        try:
            score = float(row["agg_score"])
        except ValueError:
            problem = f"line {line}: agg_score {row['agg_score'][:20]!r} is not a number"
        else:
            if not 0 <= score <= 5:
                problem = f"line {line}: agg_score {score} is outside 0-5"
        if not row[first] or not row[second]:
            problem = f"line {line}: an empty id"
        if problem:
            errors.append(problem)
            if len(errors) >= MAX_ERRORS:
                break
            continue
        if errors:
            continue
        a, b = row[first], row[second]
        parsed.rows += 1
        if fmt == "cxc_sits":  # caption, image
            parsed.add_query("t2i", a)
            parsed.add_query("i2t", b)
            key = (kind, b, a)
        else:
            parsed.add_query("t2t" if fmt == "cxc_sts" else "i2i", a)
            key = (kind, a, b)
        method = row.get("sampling_method", "")[:32]
        parsed.add_pair(key, ParsedPair(is_positive=score >= threshold, score=score, sampling_method=method))
    if errors:
        raise ApplicationError("The CSV has rows that cannot be read.", extra={"errors": errors[:MAX_ERRORS]})
    return parsed


def _jsonl_positive(record: dict):
    for holder in (record, record.get("label") if isinstance(record.get("label"), dict) else {}):
        for name in ("positive", "is_positive"):
            if name in holder:
                return holder[name]
    return None


def read_jsonl(content: bytes | str) -> ParsedSet:
    """One judged pair per line (see the module docstring); blank lines are skipped."""
    parsed, errors = ParsedSet(), []
    for line_no, line in enumerate(decode(content, what="JSONL file").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            errors.append(f"line {line_no}: not JSON ({error.msg})")
        else:
            try:
                _read_jsonl_record(parsed, record, where=f"line {line_no}")
            except ApplicationError as error:
                errors.append(error.message)
        if len(errors) >= MAX_ERRORS:
            break
    if errors:
        raise ApplicationError("The JSONL file has lines that cannot be read.", extra={"errors": errors})
    return parsed


def _read_jsonl_record(parsed: ParsedSet, record, *, where: str) -> None:
    if not isinstance(record, dict):
        raise ApplicationError(f"{where}: a line is a JSON object.")
    positive = _jsonl_positive(record)
    if not isinstance(positive, bool):
        raise ApplicationError(f'{where}: "positive" (true or false) is missing.')
    label = record.get("label") if isinstance(record.get("label"), dict) else {}
    score = record.get("score", label.get("score"))
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 5):
        raise ApplicationError(f"{where}: score must be a number from 0 to 5.")
    choice = record.get("choice", label.get("choice")) or ""
    direction = record.get("direction", record.get("stage")) or ""
    present = {name for name in ("image", "caption", "other_image", "other_caption") if record.get(name) is not None}
    if present == {"image", "caption"}:
        image, caption = _id(record["image"], where=where), _id(record["caption"], where=where)
        if direction not in ("", "i2t", "t2i"):
            raise ApplicationError(f'{where}: direction is "i2t", "t2i" or absent for an image-caption pair.')
        if direction in ("", "i2t"):
            parsed.add_query("i2t", image)
        if direction in ("", "t2i"):
            parsed.add_query("t2i", caption)
        key = ("image_caption", image, caption)
    elif present == {"caption", "other_caption"}:
        key = ("caption_caption", _id(record["caption"], where=where), _id(record["other_caption"], where=where))
        parsed.add_query("t2t", key[1])
    elif present == {"image", "other_image"}:
        key = ("image_image", _id(record["image"], where=where), _id(record["other_image"], where=where))
        parsed.add_query("i2i", key[1])
    else:
        raise ApplicationError(
            f"{where}: a pair is image+caption, caption+other_caption or image+other_image "
            f"(found {', '.join(sorted(present)) or 'no ids'})."
        )
    parsed.rows += 1
    parsed.add_pair(
        key, ParsedPair(is_positive=positive, score=None if score is None else float(score), choice=str(choice)[:16])
    )


def detect_format(name: str, content: bytes | str) -> str:
    """The format of one uploaded file from its name and first bytes (for uploads that do not say)."""
    lowered = (name or "").lower().removesuffix(".gz")
    if isinstance(content, bytes) and content[:2] == b"\x1f\x8b":
        content = decode(content, what="file")
    head = (content[:4096].decode("utf-8", "ignore") if isinstance(content, bytes) else content[:4096]).lstrip("\ufeff")
    if lowered.endswith(".jsonl"):
        return LabelSetFormat.JSONL
    if lowered.endswith(".csv"):
        header = head.splitlines()[0] if head else ""
        columns = {c.strip() for c in header.split(",")}
        for fmt, (first, second) in CXC_COLUMNS.items():
            if {first, second} <= columns:
                return fmt
        raise ApplicationError(
            "A CSV needs the Crisscrossed Captions columns (caption,image / caption1,caption2 / image1,image2)."
        )
    if split_direction(lowered):
        return LabelSetFormat.ECCV_SPLIT
    if lowered.endswith(".json"):
        return LabelSetFormat.ECCV_JSON
    raise ApplicationError("Name the format: eccv_json, eccv_split, cxc_sits, cxc_sts, cxc_sis or jsonl.")
