"""The pool pages and API: uploads screened with clear 4xx answers, and someone else's dataset is out of reach."""

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image as PILImage
from rest_framework.test import APIClient

from annotator.models import ImagePool, Role
from tests import factories

pytestmark = pytest.mark.django_db


def _zip(files: dict) -> SimpleUploadedFile:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return SimpleUploadedFile("pool.zip", out.getvalue(), content_type="application/zip")


def _png() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (40, 30), (200, 20, 20)).save(out, format="PNG")
    return out.getvalue()


def _requester():
    return factories.user_with_role(Role.REQUESTER)


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_pool_upload_answers_clear_4xx_for_bad_input_and_404_for_someone_elses_dataset(
    django_capture_on_commit_callbacks,
):
    owner, stranger = _requester(), _requester()
    dataset = factories.DatasetFactory(owner=owner, status="ready")
    client = _client(owner)
    url = "/api/v1/pools/"
    answer = client.post(url, {"dataset": dataset.pk, "name": "p", "images": _zip({})}, format="multipart")
    assert answer.status_code == 400 and "empty" in answer.json()["error"]
    answer = client.post(url, {"dataset": dataset.pk, "name": "p", "images": _zip({"a.txt": b"x"})}, format="multipart")
    assert answer.status_code == 400 and "no images" in answer.json()["error"]
    answer = _client(stranger).post(
        url, {"dataset": dataset.pk, "name": "p", "images": _zip({"a.png": _png()})}, format="multipart"
    )
    assert answer.status_code == 404
    assert not ImagePool.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            url, {"dataset": dataset.pk, "name": "p", "images": _zip({"a.png": _png()})}, format="multipart"
        )
    assert answer.status_code == 202, answer.content
    pool = ImagePool.objects.get()
    assert pool.status == "ready" and pool.images.count() == 1
    assert _client(stranger).get(f"/api/v1/pools/{pool.pk}/").status_code == 404
    assert _client(stranger).post(f"/api/v1/pools/{pool.pk}/enlarge/", {}, format="json").status_code == 404
    client.force_login(owner)
    page = client.get(f"/pools/{pool.pk}/")
    assert page.status_code == 200 and b"Pool p" in page.content
    assert client.get(f"/api/v1/datasets/{dataset.pk}/coarse-captions/").json() == {"count": 0, "results": []}
    client.force_login(stranger)
    assert client.get(f"/pools/{pool.pk}/").status_code == 404
