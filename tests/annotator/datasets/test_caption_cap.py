"""A caption over IMPORT_MAX_CAPTION_CHARS is refused with its line (its COCO record) named: at upload on the
page and the API (400, nothing stored), and by the import's validation pass (manage.py import_dataset)."""

import json

import pytest
from django.test import Client

from annotator.core.errors import ApplicationError
from annotator.datasets.services.imports import dataset_import
from annotator.models import Caption, Dataset, Image, Role
from tests.annotator.datasets.test_upload_hostility import files, post, stored_files, zipped
from tests.factories import png_bytes, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


@pytest.fixture
def requester_client():
    client = Client()
    client.force_login(user_with_role(Role.REQUESTER, username="long-caption-requester"))
    return client


FIVE_MB = "a" * (5 * 1024 * 1024)


def _jsonl() -> bytes:
    rows = [{"image": "1.png", "caption": "A red box."}, {"image": "1.png", "caption": "A box."}]
    rows.append({"image": "1.png", "caption": FIVE_MB})
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _coco() -> bytes:
    annotations = [{"id": 11, "image_id": 1, "caption": "A red box."}, {"id": 12, "image_id": 1, "caption": FIVE_MB}]
    return json.dumps({"images": [{"id": 1, "file_name": "1.png"}], "annotations": annotations}).encode()


def _csv() -> bytes:
    return f'image,caption\n1.png,A red box.\n1.png,"{FIVE_MB}"\n'.encode()


CASES = {
    "jsonl": (_jsonl, "c.jsonl", "Line 3 of the captions file has a caption of 5,242,880 characters"),
    "coco": (_coco, "captions.json", "Record annotations[1] of the captions file has a caption of 5,242,880"),
    "csv": (_csv, "c.csv", "Line 3 of the captions file"),
}


@pytest.mark.parametrize("api", [False, True], ids=["page", "api"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_five_megabyte_caption_is_refused_at_upload_with_its_line_named(media, requester_client, kind, api):
    make, name, message = CASES[kind]
    payload = files(images=zipped({"1.png": png_bytes()}), captions=make(), captions_name=name)
    response = post(requester_client, f"long-{kind}", payload, api=api)
    assert response.status_code == 400, response.content[:300]
    body = response.content.decode()
    assert message in body and "at most 2,000 (IMPORT_MAX_CAPTION_CHARS)" in body
    assert not Dataset.objects.exists() and not Caption.objects.exists()
    assert stored_files(media) == []


def test_a_caption_at_the_cap_is_accepted_and_the_cap_is_a_setting(media, requester_client, settings):
    settings.IMPORT_MAX_CAPTION_CHARS = 20
    rows = [{"image": "1.png", "caption": "x" * 20}, {"image": "1.png", "caption": "y" * 21}]
    captions = "".join(json.dumps(row) + "\n" for row in rows).encode()
    payload = files(images=zipped({"1.png": png_bytes()}), captions=captions, captions_name="c.jsonl")
    refused = post(requester_client, "capped", payload, api=True)
    assert (
        refused.status_code == 400
        and "Line 2 of the captions file has a caption of 21 characters" in (refused.json()["error"])
    )
    assert refused.json()["where"] == "Line 2"


def test_the_import_validation_names_the_line_of_a_long_caption(tmp_path, settings):
    """The command-line import (no upload screening) refuses the same file in its validation pass."""
    images = tmp_path / "images"
    images.mkdir()
    (images / "1.png").write_bytes(png_bytes())
    captions = tmp_path / "captions.jsonl"
    captions.write_bytes(_jsonl())
    with pytest.raises(ApplicationError) as refused:
        dataset_import(name="cli", captions_path=captions, images_path=images)
    report = refused.value.extra
    assert report["error_count"] == 1
    assert report["offenders"][0]["where"] == "line 3"
    assert "caption of 5,242,880 characters" in report["errors"][0]
    assert not Image.objects.exists() and not Caption.objects.exists()
