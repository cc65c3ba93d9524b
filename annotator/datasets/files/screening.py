"""Screening an upload before anything of it is stored: hostile files get a clear 4xx, not a failed import.

Everything here reads the zip's central directory and the headers of its images, streams the caption file
once and reads its first records again; nothing is extracted, and only the first SCREEN_IMAGES images the
caption file names are decoded in full (in memory, under the limits already checked). What it refuses:
- a zip with more than IMPORT_MAX_ZIP_MEMBERS members, more than IMPORT_MAX_UNZIPPED_BYTES unpacked (413),
  a member packed more than IMPORT_MAX_ZIP_RATIO times (a zip bomb), a member over IMPORT_MAX_IMAGE_BYTES;
- member names that climb out (`../`, an absolute path, a drive letter), symbolic links, encrypted members;
- an image whose header declares more than IMPORT_MAX_IMAGE_PIXELS (a decompression bomb);
- a caption file that is not UTF-8, not well-formed JSON / JSON lines / CSV, or not COCO-shaped;
- a caption longer than IMPORT_MAX_CAPTION_CHARS, naming its line (its record in COCO JSON);
- a zip member named as an image (`.jpg`, `.png`, ...) whose first bytes are not those of an allowed image
  (IMPORT_ALLOWED_FORMATS: an HTML page or an SVG named `.jpg`); and, for a dataset, the first SCREEN_IMAGES
  images the caption file names, checked as the import will (magic bytes, Pillow open, format, pixels, a
  full decode), so an `.svg` it names or a truncated file is refused too;
- the first SCREEN_RECORDS records of the caption file, read by the import's own readers: the first
  problem (a COCO instances file's object annotations, a record without a caption or an id) is a 400
  naming the file and the line (the record). The rest is the import's validation pass, which lists every
  offender.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import stat
import warnings
import zipfile
from contextlib import contextmanager
from itertools import islice
from pathlib import Path, PurePosixPath

import ijson
from django.conf import settings
from PIL import Image as PILImage

from annotator.core.errors import ApplicationError
from annotator.datasets.files.images import (
    SNIFF_BYTES,
    ImageProblem,
    ZipImages,
    check_image,
    read_checked_bytes,
    sniff_problem,
)
from annotator.datasets.files.readers import (
    MalformedFile,
    PlainCaptionFile,
    Problem,
    caption_file_for,
    caption_too_long,
)

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff"}
HEADER_BYTES = 64 * 1024
SMALL_MEMBER = 1024 * 1024  # members this small are never called bombs, whatever their ratio
SCREEN_IMAGES = 10  # images the caption file names that are decoded in full at upload
SCREEN_RECORDS = 1000  # caption-file records read at upload; the import's validation reads them all


def _unsafe_name(name: str) -> bool:
    normal = name.replace("\\", "/")
    if normal.startswith("/") or (len(normal) > 1 and normal[1] == ":") or "\x00" in normal:
        return True
    return ".." in PurePosixPath(normal).parts


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _is_mac_metadata(name: str) -> bool:
    """macOS's `__MACOSX/` folder and `._name` resource forks: never images, and no caption file names them."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    return "__MACOSX" in parts or (bool(parts) and parts[-1].startswith("._"))


def _head(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    try:
        with archive.open(info) as member:
            return member.read(HEADER_BYTES)
    # zipfile raises NotImplementedError for a compression method it cannot decode (Deflate64, for one).
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise ApplicationError(f"The zip member {info.filename!r} cannot be read ({exc}).") from exc


def _declared_pixels(head: bytes) -> int | None:
    """Width x height from the image's header (the first HEADER_BYTES), or None when Pillow cannot tell."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
            saved, PILImage.MAX_IMAGE_PIXELS = PILImage.MAX_IMAGE_PIXELS, None
            try:
                with PILImage.open(io.BytesIO(head)) as picture:
                    width, height = picture.size
            finally:
                PILImage.MAX_IMAGE_PIXELS = saved
    except Exception:  # not an image, or a header past HEADER_BYTES: the import's full check decides
        return None
    return width * height


def screen_images_zip(upload) -> None:
    """Refuse a hostile or oversized images zip (ApplicationError 400 or 413); rewinds the upload."""
    try:
        upload.seek(0)
        archive = zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ApplicationError(f"The images file is not a readable zip archive ({exc}).") from exc
    try:
        members = archive.infolist()
        if len(members) > settings.IMPORT_MAX_ZIP_MEMBERS:
            raise ApplicationError(
                f"The zip holds {len(members):,} files; at most {settings.IMPORT_MAX_ZIP_MEMBERS:,} are accepted "
                "(IMPORT_MAX_ZIP_MEMBERS).",
                status=413,
            )
        unpacked = sum(info.file_size for info in members)
        if unpacked > settings.IMPORT_MAX_UNZIPPED_BYTES:
            raise ApplicationError(
                f"The zip unpacks to {unpacked:,} bytes, over the limit of {settings.IMPORT_MAX_UNZIPPED_BYTES:,} "
                "(IMPORT_MAX_UNZIPPED_BYTES).",
                status=413,
            )
        for info in members:
            name = info.filename
            if _unsafe_name(name):
                raise ApplicationError(f"The zip member {name!r} points outside the archive; nothing was imported.")
            if _is_symlink(info):
                raise ApplicationError(f"The zip member {name!r} is a symbolic link; links are not accepted.")
            if info.flag_bits & 0x1:
                raise ApplicationError(f"The zip member {name!r} is encrypted.")
            if info.is_dir():
                continue
            if info.file_size > SMALL_MEMBER and info.file_size > settings.IMPORT_MAX_ZIP_RATIO * max(
                info.compress_size, 1
            ):
                raise ApplicationError(
                    f"The zip member {name!r} unpacks {info.file_size // max(info.compress_size, 1):,} times its "
                    f"packed size (more than {settings.IMPORT_MAX_ZIP_RATIO:g}): refused as a zip bomb."
                )
            if info.file_size > settings.IMPORT_MAX_IMAGE_BYTES:
                raise ApplicationError(
                    f"The zip member {name!r} is {info.file_size:,} bytes, over the limit of "
                    f"{settings.IMPORT_MAX_IMAGE_BYTES:,} (IMPORT_MAX_IMAGE_BYTES)."
                )
            if PurePosixPath(name).suffix.lower() in IMAGE_SUFFIXES and not _is_mac_metadata(name):
                head = _head(archive, info)
                pixels = _declared_pixels(head)
                if pixels is not None and pixels > settings.IMPORT_MAX_IMAGE_PIXELS:
                    raise ApplicationError(
                        f"The image {name!r} declares {pixels:,} pixels, over the limit of "
                        f"{settings.IMPORT_MAX_IMAGE_PIXELS:,} (IMPORT_MAX_IMAGE_PIXELS): refused as a "
                        "decompression bomb."
                    )
                problem = sniff_problem(head[:SNIFF_BYTES])
                if problem is not None:
                    raise ApplicationError(f"The zip member {name!r} {problem}; nothing was imported.")
    finally:
        archive.close()
        upload.seek(0)


def _image_problem(read) -> str | None:
    """What the import's full check (annotator.datasets.files.images.check_image) says of the bytes `read()` gives."""
    try:
        check_image(read())
    except ImageProblem as problem:
        return str(problem)
    # zipfile raises NotImplementedError for a compression method it cannot decode (Deflate64, for one).
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        return f"cannot be read from the zip ({exc})"
    return None


def _check_utf8(upload) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    upload.seek(0)
    for chunk in iter(lambda: upload.read(1024 * 1024), b""):
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise ApplicationError(
                f"The captions file is not UTF-8 text (byte {offset + exc.start:,} cannot be read); save it as UTF-8."
            ) from exc
        offset += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise ApplicationError("The captions file is not UTF-8 text (it ends inside a character).") from exc


def _too_long(where: str, length: int) -> ApplicationError:
    return ApplicationError(
        f"{where} of the captions file {caption_too_long(length, settings.IMPORT_MAX_CAPTION_CHARS)}.",
        extra={"where": where, "characters": length},
    )


def _check_coco_json(upload) -> None:
    upload.seek(0)
    seen = set()
    limit = settings.IMPORT_MAX_CAPTION_CHARS
    annotation = -1
    try:
        for prefix, event, value in ijson.parse(upload):
            if prefix == "" and event not in ("start_map", "end_map", "map_key"):
                raise ApplicationError("The captions file must be a COCO JSON object with images and annotations.")
            if prefix in ("images", "annotations") and event == "start_array":
                seen.add(prefix)
            elif prefix == "annotations.item" and event == "start_map":
                annotation += 1
            elif prefix == "annotations.item.caption" and event == "string" and len(value) > limit:
                raise _too_long(f"Record annotations[{annotation}]", len(value))
    except ijson.JSONError as exc:
        raise ApplicationError(f"The captions file is not well-formed JSON ({exc}).") from exc
    missing = {"images", "annotations"} - seen
    if missing:
        raise ApplicationError(
            "The captions file is not COCO captions JSON: it has no " + " and no ".join(sorted(missing)) + " list."
        )


def _check_json_lines(upload) -> None:
    upload.seek(0)
    limit = settings.IMPORT_MAX_CAPTION_CHARS
    for number, raw in enumerate(upload, start=1):
        line = raw.decode("utf-8")  # already checked to be UTF-8
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ApplicationError(f"Line {number} of the captions file is not well-formed JSON ({exc}).") from exc
        if not isinstance(row, dict):
            raise ApplicationError(f"Line {number} of the captions file is not a JSON object.")
        for key in PlainCaptionFile.CAPTION_KEYS:
            if isinstance(row.get(key), str) and len(row[key]) > limit:
                raise _too_long(f"Line {number}", len(row[key]))


def _check_csv(upload) -> None:
    """Each caption cell within IMPORT_MAX_CAPTION_CHARS; the caption column as PlainCaptionFile reads it."""
    upload.seek(0)
    limit = settings.IMPORT_MAX_CAPTION_CHARS
    reader = csv.reader(raw.decode("utf-8-sig") for raw in upload)  # lines keep their endings
    column = 1
    try:
        for row in reader:
            lowered = [cell.strip().lower() for cell in row]
            if reader.line_num == 1 and any(key in lowered for key in PlainCaptionFile.CAPTION_KEYS):
                column = next(lowered.index(key) for key in PlainCaptionFile.CAPTION_KEYS if key in lowered)
                continue
            if len(row) > column and len(row[column]) > limit:
                raise _too_long(f"Line {reader.line_num}", len(row[column]))
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise ApplicationError(
                f"Line {reader.line_num} of the captions file holds a field of more than {csv.field_size_limit():,} "
                f"characters; captions may have at most {limit:,} (IMPORT_MAX_CAPTION_CHARS).",
                extra={"where": f"Line {reader.line_num}"},
            ) from exc
        raise ApplicationError(f"Line {reader.line_num} of the captions file is not well-formed CSV ({exc}).") from exc


def screen_captions(upload, suffix: str) -> None:
    """Refuse a caption file that is not UTF-8, not well-formed for its suffix, or with a caption over
    IMPORT_MAX_CAPTION_CHARS (400, naming the line); rewinds the upload."""
    _check_utf8(upload)
    if suffix == ".json":
        _check_coco_json(upload)
    elif suffix in (".jsonl", ".ndjson"):
        _check_json_lines(upload)
    elif suffix == ".csv":
        _check_csv(upload)
    upload.seek(0)


@contextmanager
def _reopened(upload):
    """The upload's bytes from the start, left open (the request owns the file)."""
    upload.seek(0)
    yield getattr(upload, "file", upload)


def screen_caption_records(*, captions, suffix: str, images) -> None:
    """Read the first SCREEN_RECORDS records of the caption file with the import's own reader and refuse the
    first problem (400, naming the file and the line or record); then check the first SCREEN_IMAGES images it
    names that the images zip holds, as the import will (magic bytes, format, pixels, a full decode).
    Images it names that the zip lacks are left to the import (a split file may leave them out). Call after
    screen_images_zip and screen_captions; rewinds both uploads."""
    label = PurePosixPath(captions.name or f"captions{suffix}").name
    reader = caption_file_for(Path(f"captions{suffix}"), opener=lambda: _reopened(captions))
    try:
        named = []
        for record in islice(reader.iter_captions(), SCREEN_RECORDS):
            if isinstance(record, Problem):
                raise ApplicationError(f"The captions file {label!r}: {record}.", extra={"where": record.where})
        for record in islice(reader.iter_images(), SCREEN_RECORDS):
            if isinstance(record, Problem):
                raise ApplicationError(f"The captions file {label!r}: {record}.", extra={"where": record.where})
            named.append(record)
    except MalformedFile as exc:
        raise ApplicationError(f"The captions file {label!r} cannot be read: {exc.message}.") from exc
    finally:
        captions.seek(0)
    images.seek(0)
    source = ZipImages(images, label="the images zip")
    try:
        checked = 0
        for record in named:
            key = source.locate(record.file_name)
            if key is None:
                continue
            problem = _image_problem(lambda key=key: read_checked_bytes(source, key))
            if problem is not None:
                raise ApplicationError(
                    f"The image {record.file_name!r} ({record.where} of {label!r}) {problem}; nothing was imported.",
                    extra={"where": record.where},
                )
            checked += 1
            if checked >= SCREEN_IMAGES:
                break
    finally:
        source.close()
        images.seek(0)
