"""Streaming readers for caption files: COCO caption JSON, plain JSONL and CSV, and Karpathy split files.

Every reader yields records one at a time and never holds the file in memory (COCO JSON is parsed
incrementally with ijson), so a file the size of MS-COCO (617K captions) streams in constant memory.
A broken record is yielded as a `Problem` so the validator can name every offender; a file that cannot
be parsed any further raises `MalformedFile`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import ijson

MAX_SOURCE_ID_LENGTH = 64  # Image.source_id / Caption.source_id


@dataclass(frozen=True)
class ImageRecord:
    source_id: str
    file_name: str
    where: str  # e.g. "images[12]" or "line 7", for messages


@dataclass(frozen=True)
class CaptionRecord:
    source_id: str
    image_source_id: str
    text: str
    where: str


@dataclass(frozen=True)
class Problem:
    kind: str  # "image", "caption" or "file"
    source_id: str | None
    where: str
    message: str

    def __str__(self) -> str:
        label = f"{self.kind} {self.source_id}" if self.source_id is not None else self.kind
        return f"{label} ({self.where}): {self.message}"


Opener = Callable[[], AbstractContextManager]  # opens the file's bytes (the path, or an upload not yet stored)

OBJECT_KEYS = ("category_id", "bbox", "segmentation", "keypoints", "iscrowd")  # COCO instances / keypoints


class MalformedFile(Exception):
    """The file cannot be read any further (broken JSON, not UTF-8, ...)."""

    def __init__(self, path: Path, message: str):
        super().__init__(f"{path.name}: {message}")
        self.path = path
        self.message = message


def caption_too_long(length: int, limit: int) -> str:
    """The message for a caption over IMPORT_MAX_CAPTION_CHARS (the same at upload and at import)."""
    return f"has a caption of {length:,} characters; captions may have at most {limit:,} (IMPORT_MAX_CAPTION_CHARS)"


def normalise_id(value) -> str | None:
    """COCO ids are ints, plain files may use strings; both are kept as the same text ("42")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        value = value.strip()
        if value and len(value) <= MAX_SOURCE_ID_LENGTH:
            return value
    return None


def _id_problem(kind: str, value, where: str) -> Problem:
    shown = repr(value)[:80]
    return Problem(
        kind, None, where, f"id {shown} is not an integer or a string of 1-{MAX_SOURCE_ID_LENGTH} characters"
    )


class CocoCaptionFile:
    """`{"images": [{"id", "file_name"}], "annotations": [{"id", "image_id", "caption"}]}`, streamed."""

    format = "coco"

    def __init__(self, path: Path, opener: Opener | None = None):
        self.path = path
        self.opener = opener or (lambda: open(path, "rb"))

    def _items(self, prefix: str) -> Iterator[tuple[int, object]]:
        try:
            with self.opener() as handle:
                yield from enumerate(ijson.items(handle, prefix, use_float=True))
        except (ijson.JSONError, UnicodeDecodeError) as exc:
            raise MalformedFile(self.path, f"malformed JSON ({exc})") from exc

    def iter_images(self) -> Iterator[ImageRecord | Problem]:
        for n, item in self._items("images.item"):
            where = f"images[{n}]"
            if not isinstance(item, dict):
                yield Problem("image", None, where, "is not an object")
                continue
            source_id = normalise_id(item.get("id"))
            if source_id is None:
                yield _id_problem("image", item.get("id"), where)
                continue
            file_name = item.get("file_name")
            if not isinstance(file_name, str) or not file_name.strip():
                yield Problem("image", source_id, where, "has no file_name")
                continue
            yield ImageRecord(source_id, file_name.strip(), where)

    def iter_captions(self) -> Iterator[CaptionRecord | Problem]:
        for n, item in self._items("annotations.item"):
            where = f"annotations[{n}]"
            if not isinstance(item, dict):
                yield Problem("caption", None, where, "is not an object")
                continue
            source_id = normalise_id(item.get("id"))
            if source_id is None:
                yield _id_problem("caption", item.get("id"), where)
                continue
            image_id = normalise_id(item.get("image_id"))
            if image_id is None:
                yield Problem("caption", source_id, where, "has no valid image_id")
                continue
            text = item.get("caption")
            if text is None and any(key in item for key in OBJECT_KEYS):
                yield Problem(
                    "caption",
                    source_id,
                    where,
                    "is an object annotation (" + ", ".join(k for k in OBJECT_KEYS if k in item) + "), not a caption: "
                    "this is a COCO instances or keypoints file, not a COCO captions file (captions_*.json)",
                )
                continue
            if not isinstance(text, str) or not text.strip():
                yield Problem("caption", source_id, where, "has an empty caption")
                continue
            yield CaptionRecord(source_id, image_id, text.strip(), where)


class PlainCaptionFile:
    """JSONL (`{"image": path, "caption": text}` per line) or CSV (`image,caption` columns).

    Optional `image_id` and `caption_id` give source ids; otherwise the image's id is its path and the
    caption's id is its line number, both stable as long as the file is not edited.
    """

    IMAGE_KEYS = ("image", "file_name", "image_path", "path")
    CAPTION_KEYS = ("caption", "text")

    def __init__(self, path: Path, format: str, opener: Opener | None = None):
        self.path = path
        self.format = format
        self.opener = opener or (lambda: open(path, "rb"))

    def _rows(self) -> Iterator[tuple[str, dict | None]]:
        """(where, row as dict) per data line; row None for an unparsable line."""
        reader = None
        try:
            with self.opener() as raw, _as_text(raw) as handle:
                if self.format == "jsonl":
                    for line_no, line in enumerate(handle, start=1):
                        if not line.strip():
                            continue
                        try:
                            row = json.loads(line)
                        except json.JSONDecodeError:
                            yield f"line {line_no}", None
                            continue
                        yield f"line {line_no}", row if isinstance(row, dict) else None
                else:
                    reader = csv.reader(handle)
                    header = None
                    for row in reader:
                        line_no = reader.line_num  # the line the record ends on
                        if not row or not any(cell.strip() for cell in row):
                            continue
                        lowered = [cell.strip().lower() for cell in row]
                        if header is None and line_no == 1 and any(k in lowered for k in self.CAPTION_KEYS):
                            header = lowered
                            continue
                        columns = header or ["image", "caption"]
                        yield f"line {line_no}", dict(zip(columns, row, strict=False))
        except UnicodeDecodeError as exc:
            raise MalformedFile(self.path, f"not UTF-8 text ({exc})") from exc
        except csv.Error as exc:
            where = f" at line {reader.line_num}" if reader is not None else ""
            raise MalformedFile(self.path, f"malformed CSV{where} ({exc})") from exc

    def _parse(self, where: str, row: dict | None) -> tuple[str, str, str, str] | Problem:
        if row is None:
            return Problem("caption", None, where, f"is not a {self.format.upper()} record")
        image = next((row[k] for k in self.IMAGE_KEYS if isinstance(row.get(k), str) and row[k].strip()), None)
        text = next((row[k] for k in self.CAPTION_KEYS if isinstance(row.get(k), str)), None)
        if image is None:
            return Problem("caption", None, where, "names no image")
        image = image.strip()
        image_id = normalise_id(row.get("image_id")) if row.get("image_id") not in (None, "") else normalise_id(image)
        if image_id is None:
            return Problem("image", None, where, f"path {image[:80]!r} is too long for an id: give an image_id column")
        caption_id = (
            normalise_id(row.get("caption_id")) if row.get("caption_id") not in (None, "") else where.split()[1]
        )
        if caption_id is None:
            return _id_problem("caption", row.get("caption_id"), where)
        if text is None or not text.strip():
            return Problem("caption", caption_id, where, "has an empty caption")
        return image_id, image, caption_id, text.strip()

    def iter_images(self) -> Iterator[ImageRecord | Problem]:
        paths: dict[str, str] = {}  # image id -> path: one entry per image, not per caption
        for where, row in self._rows():
            parsed = self._parse(where, row)
            if isinstance(parsed, Problem):
                continue  # reported once, by iter_captions
            image_id, image, _caption_id, _text = parsed
            known = paths.get(image_id)
            if known is None:
                paths[image_id] = image
                yield ImageRecord(image_id, image, where)
            elif known != image:
                yield Problem("image", image_id, where, f"id is used for two files: {known!r} and {image!r}")

    def iter_captions(self) -> Iterator[CaptionRecord | Problem]:
        for where, row in self._rows():
            parsed = self._parse(where, row)
            if isinstance(parsed, Problem):
                yield parsed
                continue
            image_id, _image, caption_id, text = parsed
            yield CaptionRecord(caption_id, image_id, text, where)


@contextmanager
def _as_text(raw) -> Iterator[io.TextIOWrapper]:
    """The bytes of `raw` read as UTF-8 text (a BOM skipped), leaving `raw` open for its owner to close."""
    wrapper = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    try:
        yield wrapper
    finally:
        wrapper.detach()


def caption_file_for(path: Path, opener: Opener | None = None) -> CocoCaptionFile | PlainCaptionFile:
    """The reader for `path`'s suffix; `opener` reads the bytes from elsewhere (an upload) when given."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        return CocoCaptionFile(path, opener)
    if suffix in (".jsonl", ".ndjson"):
        return PlainCaptionFile(path, "jsonl", opener)
    if suffix == ".csv":
        return PlainCaptionFile(path, "csv", opener)
    raise MalformedFile(path, "unknown caption file format (use .json for COCO, .jsonl or .csv)")


@dataclass
class SplitFilter:
    """Which images a Karpathy split file puts into the requested splits.

    `dataset_coco.json` form: `{"images": [{"cocoid" or "imgid", "split", "filename", ...}]}`. An image
    of the caption file is kept if its id (cocoid, else imgid) or its file's base name is listed with one
    of the requested splits; images the split file does not list are left out.
    """

    ids: set[str]
    file_names: set[str]
    splits: tuple[str, ...]

    def keeps(self, record: ImageRecord) -> bool:
        return record.source_id in self.ids or PurePosixPath(record.file_name).name in self.file_names


def read_split(path: Path, splits: tuple[str, ...]) -> SplitFilter:
    ids: set[str] = set()
    file_names: set[str] = set()
    try:
        with open(path, "rb") as handle:
            for item in ijson.items(handle, "images.item", use_float=True):
                if not isinstance(item, dict) or item.get("split") not in splits:
                    continue
                source_id = normalise_id(item.get("cocoid", item.get("imgid")))
                if source_id is not None:
                    ids.add(source_id)
                if isinstance(item.get("filename"), str):
                    file_names.add(PurePosixPath(item["filename"]).name)
    except (ijson.JSONError, UnicodeDecodeError) as exc:
        raise MalformedFile(path, f"malformed JSON ({exc})") from exc
    return SplitFilter(ids=ids, file_names=file_names, splits=splits)
