"""Hostile uploads on the page and the API: each gets a clear 4xx, nothing is stored, nothing half-imported,
and caption payloads never run in the browser."""

import html
import io
import json
import os
import stat
import struct
import tempfile
import zipfile
import zlib
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import Caption, Dataset, Image, Role
from tests.factories import live_campaign_with_hits, png_bytes, user_with_role

pytestmark = pytest.mark.django_db

COCO = {
    "images": [{"id": 1, "file_name": "1.png"}],
    "annotations": [{"id": 11, "image_id": 1, "caption": "A red box."}],
}


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


@pytest.fixture
def requester_client():
    client = Client()
    client.force_login(user_with_role(Role.REQUESTER, username="hostile-requester"))
    return client


def zipped(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return archive.getvalue()


def png_bomb(width: int = 30_000, height: int = 30_000) -> bytes:
    """A tiny PNG whose header declares width x height pixels (900 million): it would decode to gigabytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"\x00" * 4096)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def files(*, images: bytes, captions: bytes = json.dumps(COCO).encode(), captions_name: str = "captions.json"):
    return {
        "captions": (captions_name, captions),
        "images": ("images.zip", images),
    }


def post(client, name: str, payload: dict, *, api: bool = False):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = {"name": name}
    for field, (file_name, content) in payload.items():
        data[field] = SimpleUploadedFile(file_name, content)
    url = "/api/v1/datasets/" if api else reverse("dataset-import")
    return client.post(url, data, HTTP_ACCEPT="application/json" if api else "text/html")


HTML_PAGE = b"<!DOCTYPE html><html><body><script>alert(1)</script></body></html>"
SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><rect/></svg>'
COCO_INSTANCES = {  # instances_val2014.json's shape: object annotations, not captions
    "images": [{"id": 1, "file_name": "1.png"}],
    "annotations": [
        {"id": 11, "image_id": 1, "category_id": 18, "bbox": [1, 2, 3, 4], "segmentation": [[1, 2, 3, 4]], "area": 9}
    ],
    "categories": [{"id": 18, "name": "dog"}],
}


def coco_naming(file_name: str) -> bytes:
    return json.dumps({**COCO, "images": [{"id": 1, "file_name": file_name}]}).encode()


def stored_files(media: Path) -> list[str]:
    return sorted(str(p.relative_to(media)) for p in media.rglob("*") if p.is_file())


HOSTILE = {
    "zip bomb": (lambda: files(images=zipped({"1.png": b"\x00" * (50 * 1024 * 1024)})), "zip bomb"),
    "decompression-bomb png": (lambda: files(images=zipped({"1.png": png_bomb()})), "decompression bomb"),
    "path traversal": (
        lambda: files(images=zipped({"../../etc/evil.png": png_bytes(), "1.png": png_bytes()})),
        "outside the archive",
    ),
    "absolute path": (lambda: files(images=zipped({"/tmp/evil.png": png_bytes()})), "outside the archive"),
    "symlink": (lambda: files(images=zipped({"1.png": png_bytes()}, links={"2.png": "/etc/passwd"})), "symbolic link"),
    "not utf-8 captions": (
        lambda: files(
            images=zipped({"1.png": png_bytes()}), captions='{"images": [], "x": "caf\xe9"}'.encode("latin-1")
        ),
        "not UTF-8",
    ),
    "malformed coco json": (
        lambda: files(images=zipped({"1.png": png_bytes()}), captions=b'{"images": [{"id": 1,'),
        "not well-formed JSON",
    ),
    "json that is not coco": (
        lambda: files(images=zipped({"1.png": png_bytes()}), captions=b'{"pictures": []}'),
        "not COCO captions JSON",
    ),
    "html named .jpg": (
        lambda: files(images=zipped({"1.jpg": HTML_PAGE}), captions=coco_naming("1.jpg")),
        "1.jpg&#x27; is not a readable image: it is HTML, SVG or other markup",
    ),
    "svg the captions name": (
        lambda: files(images=zipped({"1.svg": SVG}), captions=coco_naming("1.svg")),
        "1.svg&#x27; (images[0] of &#x27;captions.json&#x27;) is not a readable image: it is HTML, SVG",
    ),
    "three-byte png": (lambda: files(images=zipped({"1.png": b"abc"})), "1.png&#x27; is not a readable image"),
    "truncated png": (
        lambda: files(images=zipped({"1.png": png_bytes(size=(300, 200))[:80]})),
        "is corrupt or truncated",
    ),
    "coco instances file": (
        lambda: files(images=zipped({"1.png": png_bytes()}), captions=json.dumps(COCO_INSTANCES).encode()),
        "captions.json&#x27;: caption 11 (annotations[0]): is an object annotation (category_id, bbox, segmentation",
    ),
    "csv line without an image": (
        lambda: files(
            images=zipped({"1.png": png_bytes()}),
            captions=b"image,caption\n1.png,A red box.\n,A caption of no image.\n",
            captions_name="c.csv",
        ),
        "c.csv&#x27;: caption (line 3): names no image",
    ),
    "malformed json lines": (
        lambda: files(
            images=zipped({"1.png": png_bytes()}), captions=b'{"image": "1.png"}\n{oops\n', captions_name="c.jsonl"
        ),
        "Line 2",
    ),
}


@pytest.mark.parametrize("api", [False, True], ids=["page", "api"])
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_upload_gets_a_clear_4xx_and_leaves_nothing_behind(media, requester_client, kind, api):
    make, message = HOSTILE[kind]
    before = set(os.listdir(tempfile.gettempdir()))
    response = post(requester_client, f"hostile-{kind}".replace(" ", "-"), make(), api=api)
    assert 400 <= response.status_code < 500, response.content[:300]
    body = response.content.decode()
    assert message in (body if not api else html.escape(json.loads(body)["error"]))
    assert not Dataset.objects.exists() and not Image.objects.exists() and not Caption.objects.exists()
    assert stored_files(media) == []
    assert not (Path(tempfile.gettempdir()) / "etc").exists()
    leftovers = {n for n in set(os.listdir(tempfile.gettempdir())) - before if n.endswith(".upload")}
    assert leftovers == set()


@pytest.mark.parametrize("api", [False, True], ids=["page", "api"])
def test_mac_metadata_and_files_that_are_not_named_as_images_do_not_refuse_an_upload(media, requester_client, api):
    """Only members named as images are sniffed, and macOS's `__MACOSX/._x.png` forks are not images."""
    members = {"1.png": png_bytes(), "__MACOSX/._1.png": b"\x00\x05\x16\x07 Mac OS X", "README.txt": b"hello"}
    response = post(requester_client, "with-extras", files(images=zipped(members)), api=api)
    assert response.status_code == (202 if api else 302), response.content[:300]
    assert Dataset.objects.filter(name="with-extras").exists()


def test_a_zip_that_unpacks_past_the_limit_is_413(media, requester_client, settings):
    settings.IMPORT_MAX_UNZIPPED_BYTES = 1024 * 1024
    payload = files(images=zipped({f"{n}.png": os.urandom(300 * 1024) for n in range(4)}))
    response = post(requester_client, "too-big-unpacked", payload)
    assert response.status_code == 413 and "IMPORT_MAX_UNZIPPED_BYTES" in response.content.decode()
    assert stored_files(media) == [] and not Dataset.objects.exists()


class _Stream(io.RawIOBase):
    """A 200 MB multipart body, generated as it is read (never held in memory)."""

    def __init__(self, boundary: bytes, size: int):
        self.head = (
            b"--" + boundary + b'\r\nContent-Disposition: form-data; name="images"; filename="images.zip"\r\n'
            b"Content-Type: application/zip\r\n\r\n"
        )
        self.tail = b"\r\n--" + boundary + b"--\r\n"
        self.size = size
        self.sent = 0
        self.read_bytes = 0

    @property
    def total(self) -> int:
        return len(self.head) + self.size + len(self.tail)

    def readable(self):
        return True

    def readinto(self, buffer):
        whole = self.total
        if self.sent >= whole:
            return 0
        n = min(len(buffer), whole - self.sent)
        data = bytearray(n)  # zeros, but for the head and the tail, which are short
        start, end = self.sent, self.sent + n
        for offset, part in ((0, self.head), (len(self.head) + self.size, self.tail)):
            low, high = max(start, offset), min(end, offset + len(part))
            if low < high:
                data[low - start : high - start] = part[low - offset : high - offset]
        buffer[:n] = data
        self.sent += n
        self.read_bytes += n
        return n


@pytest.mark.parametrize("url", ["/datasets/import/", "/api/v1/datasets/"])
def test_a_200_mb_upload_is_refused_413_before_it_is_read(media, requester_client, url):
    boundary = b"hostileboundary"
    stream = _Stream(boundary, 200 * 1024 * 1024)
    response = requester_client.generic(
        "POST",
        url,
        b"",
        content_type=f"multipart/form-data; boundary={boundary.decode()}",
        **{"wsgi.input": stream, "CONTENT_LENGTH": str(stream.total)},
    )
    assert response.status_code == 413
    assert "IMPORT_MAX_UPLOAD_BYTES" in response.content.decode()
    assert stream.read_bytes == 0  # not a byte of the body was read, nothing spooled to disk
    assert stored_files(media) == [] and not Dataset.objects.exists()


PAYLOADS = [
    '<script>document.title="pwned"</script>',
    '<img src=x onerror="document.title=1">',
    "{{ 7|add:7 }} {% debug %} {% load static %}",
    "${7*7} #{7*7} <%= 7*7 %>",
    '"><svg/onload=alert(1)>',
]


def test_caption_payloads_are_shown_as_text_never_run(media, requester_client):
    campaign = live_campaign_with_hits(hits=1, candidates=len(PAYLOADS), qualification_items=0)
    for text, item in zip(
        PAYLOADS, campaign.hits.get().items.filter(role="candidate").order_by("position"), strict=False
    ):
        Caption.objects.filter(pk=item.pair.caption_id).update(text=text)
    worker = user_with_role(Role.WORKER, username="payload-reader")
    client = Client()
    client.force_login(worker)
    claimed = client.post(f"/work/campaigns/{campaign.pk}/claim")
    page = client.get(claimed["Content-Location"])
    html = page.content.decode()
    assert "<script>document.title" not in html and "<img src=x" not in html and "<svg/onload" not in html
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in html
    assert "{{ 7|add:7 }}" in html and "{% debug %}" in html and "14" not in html.split("{{ 7|add:7 }}")[0][-20:]
    assert "${7*7} #{7*7} &lt;%= 7*7 %&gt;" in html
    assert "script-src 'self'" in page["Content-Security-Policy"]
