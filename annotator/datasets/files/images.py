"""Where the image files come from (a folder or a zip) and the Pillow checks every image passes."""

from __future__ import annotations

import hashlib
import io
import struct
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.conf import settings
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

EXTENSIONS = {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp", "GIF": ".gif", "BMP": ".bmp", "TIFF": ".tif"}
SNIFF_BYTES = 16  # the prefix Pillow's Image.open reads to pick a format


class ImageProblem(Exception):
    """This file is not an image we accept; the message says why, for the person importing."""


class FolderImages:
    """Images under a folder; a file name may not climb out of it (`../` or an absolute path)."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.label = str(root)

    def locate(self, file_name: str) -> Path | None:
        path = (self.root / file_name).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            return None
        return path

    def size(self, key: Path) -> int:
        return key.stat().st_size

    def read(self, key: Path) -> bytes:
        return key.read_bytes()

    def close(self) -> None:
        pass


class ZipImages:
    """Images inside a zip, read member by member (never extracted to disk).

    A file name matches a member of the same name, or of that name under the zip's single top folder
    (a zip of `val2014/` holds `val2014/COCO_val2014_...jpg` for the COCO file_name `COCO_val2014_...jpg`).
    """

    def __init__(self, path, label: str | None = None):
        """`path`: a zip file's path, or an open binary file (an upload) named by `label`."""
        self.label = label or Path(path).name  # what the person uploaded, not where the server keeps it
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ImageProblem(f"{self.label} is not a readable zip file ({exc})") from exc
        self.members = {info.filename: info for info in self.zip.infolist() if not info.is_dir()}
        tops = {PurePosixPath(name).parts[0] for name in self.members if len(PurePosixPath(name).parts) > 1}
        flat = any(len(PurePosixPath(name).parts) == 1 for name in self.members)
        self.prefix = f"{tops.pop()}/" if len(tops) == 1 and not flat else ""

    def locate(self, file_name: str) -> zipfile.ZipInfo | None:
        name = file_name.replace("\\", "/").lstrip("/")
        return self.members.get(name) or (self.members.get(self.prefix + name) if self.prefix else None)

    def size(self, key: zipfile.ZipInfo) -> int:
        return key.file_size

    def read(self, key: zipfile.ZipInfo) -> bytes:
        try:
            return self.zip.read(key)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
            raise ImageProblem(f"cannot be read from the zip ({exc})") from exc

    def close(self) -> None:
        self.zip.close()


def open_images(path: Path) -> FolderImages | ZipImages:
    if path.is_dir():
        return FolderImages(path)
    return ZipImages(path)


def read_checked_bytes(source, key) -> bytes:
    """The file's bytes, refused before reading when it is over IMPORT_MAX_IMAGE_BYTES."""
    limit = settings.IMPORT_MAX_IMAGE_BYTES
    size = source.size(key)
    if size > limit:
        raise ImageProblem(f"is {size:,} bytes, over the limit of {limit:,} (IMPORT_MAX_IMAGE_BYTES)")
    if size == 0:
        raise ImageProblem("is an empty file")
    return source.read(key)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class CheckedImage:
    format: str
    width: int
    height: int


def allowed_formats() -> list[str]:
    return [fmt.upper() for fmt in settings.IMPORT_ALLOWED_FORMATS]


def sniff_format(head: bytes) -> str | None:
    """The image format whose magic bytes `head` begins with (the allowed ones tried first), or None.

    Pillow's own signature checks (the `accept` of each format plugin, what Image.open tries), so an
    HTML page or an SVG named `.jpg` is told apart from a JPEG by its first bytes, before any decoding."""
    PILImage.init()
    prefix = head[:SNIFF_BYTES]
    allowed = allowed_formats()
    for fmt in [*allowed, *(f for f in PILImage.OPEN if f not in allowed)]:
        _factory, accept = PILImage.OPEN.get(fmt, (None, None))
        try:
            verdict = accept(prefix) if accept else False
        except (struct.error, IndexError, ValueError, TypeError):  # some checks read past a few-byte file
            verdict = False
        if verdict and not isinstance(verdict, str):  # a str is Pillow's reason for refusing
            return fmt
    return None


def sniff_problem(head: bytes) -> str | None:
    """Why a file beginning with `head` is not an allowed image (the sentence after its name), or None."""
    fmt = sniff_format(head)
    if fmt is None:
        markup = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"<"
        return "is not a readable image" + (": it is HTML, SVG or other markup" if markup else "")
    allowed = allowed_formats()
    if fmt not in allowed:
        return f"is a {fmt} image; allowed formats: {', '.join(allowed)}"
    return None


def _open(data: bytes) -> PILImage.Image:
    problem = sniff_problem(data[:SNIFF_BYTES])
    if problem is not None:
        raise ImageProblem(problem)
    try:
        with warnings.catch_warnings():  # Pillow warns above its own limit; ours below is the one that decides
            warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
            picture = PILImage.open(io.BytesIO(data))
    except PILImage.DecompressionBombError as exc:
        raise ImageProblem(f"is refused as a decompression bomb ({exc})") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageProblem("is not a readable image") from exc
    allowed = allowed_formats()
    if picture.format not in allowed:
        raise ImageProblem(f"is a {picture.format} image; allowed formats: {', '.join(allowed)}")
    width, height = picture.size
    limit = settings.IMPORT_MAX_IMAGE_PIXELS
    if width * height > limit:
        # Checked from the header, before any pixel is decoded: this is the decompression-bomb guard.
        raise ImageProblem(f"is {width}x{height} pixels, over the limit of {limit:,} (IMPORT_MAX_IMAGE_PIXELS)")
    return picture


def _decode(picture: PILImage.Image, box: int) -> None:
    try:
        picture.draft("RGB", (box, box))  # JPEG decodes at a reduced scale: a real decode, but cheaper
        picture.load()
    except (OSError, SyntaxError, ValueError, EOFError, PILImage.DecompressionBombError) as exc:
        raise ImageProblem(f"is corrupt or truncated ({exc})") from exc


def check_image(data: bytes) -> CheckedImage:
    """Open with Pillow, check format and pixel count from the header, then decode it fully."""
    picture = _open(data)
    fmt, (width, height) = picture.format, picture.size
    _decode(picture, settings.THUMBNAIL_SIZE)
    return CheckedImage(format=fmt, width=width, height=height)


def make_thumbnail(data: bytes) -> tuple[CheckedImage, bytes]:
    """The checked image and a JPEG thumbnail no larger than THUMBNAIL_SIZE on its longer side."""
    box = settings.THUMBNAIL_SIZE
    picture = _open(data)
    checked = CheckedImage(format=picture.format, width=picture.size[0], height=picture.size[1])
    _decode(picture, box)
    if picture.mode in ("RGBA", "LA") or (picture.mode == "P" and "transparency" in picture.info):
        rgba = picture.convert("RGBA")
        picture = PILImage.new("RGB", rgba.size, (255, 255, 255))
        picture.paste(rgba, mask=rgba.split()[-1])
    else:
        picture = picture.convert("RGB")
    picture.thumbnail((box, box))
    out = io.BytesIO()
    picture.save(out, format="JPEG", quality=85, optimize=False)
    return checked, out.getvalue()
