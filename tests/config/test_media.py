"""Local-disk media: images and thumbnails are public (HIT pages need them); exports and uploads are not."""

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    for name in (
        "images/a.jpg",
        "thumbnails/a.jpg",
        "exports/campaign-1/export-1-eccv_json-lenient.json",
        "uploads/datasets/1/captions.json",
    ):
        default_storage.save(name, ContentFile(b"data"))
    return tmp_path


def test_images_and_thumbnails_are_served(client, media):
    assert client.get("/media/images/a.jpg").status_code == 200
    assert client.get("/media/thumbnails/a.jpg").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "exports/campaign-1/export-1-eccv_json-lenient.json",
        "uploads/datasets/1/captions.json",
        "images/../exports/campaign-1/export-1-eccv_json-lenient.json",
        "images/%2e%2e/uploads/datasets/1/captions.json",
        "../etc/passwd",
    ],
)
def test_exports_uploads_and_escapes_are_not(client, media, path):
    assert client.get(f"/media/{path}").status_code == 404
