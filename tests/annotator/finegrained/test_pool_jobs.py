"""Pool imports and enlargements are background jobs like the others: the progress widget's JSON, a failed
one with its reason, Retry, and nobody else's job in sight."""

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image as PILImage

from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_view
from annotator.finegrained.services.pools.enlargement import enlargement_request
from annotator.finegrained.services.pools.imports import pool_upload
from annotator.models import EnlargementStatus, GalleryEnlargement, ImagePool, PoolStatus, Role
from tests import factories

pytestmark = pytest.mark.django_db


def _zip(files: dict) -> SimpleUploadedFile:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return SimpleUploadedFile("pool.zip", out.getvalue(), content_type="application/zip")


def _png(colour) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (48, 32), colour).save(out, format="PNG")
    return out.getvalue()


def test_a_failed_pool_import_says_why_and_is_retried_from_its_widget(django_capture_on_commit_callbacks):
    owner = factories.user_with_role(Role.REQUESTER)
    dataset = factories.DatasetFactory(owner=owner, status="ready")
    with pytest.raises(ApplicationError, match="'a.png' is not a readable image"):  # refused at the door
        pool_upload(dataset=dataset, name="bad", images=_zip({"a.png": b"not a png at all"}), user=owner)
    # A truncated PNG has a PNG's magic bytes: the upload takes it, the import finds it cannot be decoded.
    with django_capture_on_commit_callbacks(execute=True):
        pool = pool_upload(dataset=dataset, name="bad", images=_zip({"a.png": _png((1, 2, 3))[:60]}), user=owner)
    pool.refresh_from_db()
    assert pool.status == PoolStatus.FAILED
    view = job_view(pool)
    assert view["state"] == "failed" and view["retryable"] and "not readable images" in view["error"]
    client = Client()
    client.force_login(owner)
    assert client.get(view["status_url"]).json()["state"] == "failed"
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(view["retry_url"])
    assert answer.status_code == 302
    pool.refresh_from_db()
    assert pool.status == PoolStatus.FAILED  # the same bad file fails again, after running again
    stranger = Client()
    stranger.force_login(factories.user_with_role(Role.REQUESTER))
    assert stranger.get(view["status_url"]).status_code == 404
    assert stranger.post(view["retry_url"]).status_code == 404


def test_a_good_upload_imports_with_progress_and_an_enlargement_reads_as_done_when_proposed(
    django_capture_on_commit_callbacks,
):
    owner = factories.user_with_role(Role.REQUESTER)
    dataset = factories.DatasetFactory(owner=owner, status="ready")
    images = {f"p{n}.png": _png((n * 40, 90, 200 - n * 30)) for n in range(4)}
    with django_capture_on_commit_callbacks(execute=True):
        pool = pool_upload(dataset=dataset, name="good", images=_zip(images), user=owner)
    pool = ImagePool.objects.get(pk=pool.pk)
    assert pool.status == PoolStatus.READY and job_view(pool)["percent"] == 100.0
    assert (pool.images_done, pool.images_total) == (4, 4)
    enlargement = enlargement_request(pool=pool, image_annotator="visual", keep=2)  # not sent: no commit here
    assert job_view(enlargement)["state"] == "queued"
    GalleryEnlargement.objects.filter(pk=enlargement.pk).update(status=EnlargementStatus.FAILED, error="lost")
    enlargement.refresh_from_db()
    view = job_view(enlargement)
    assert view["state"] == "failed" and view["error"] == "lost" and view["retryable"]


def test_an_enlargement_refuses_pivot_annotators_and_empty_choices():
    owner = factories.user_with_role(Role.REQUESTER)
    dataset = factories.DatasetFactory(owner=owner, status="ready")
    pool = ImagePool.objects.create(dataset=dataset, name="p", status=PoolStatus.READY)
    factories.MachineAnnotatorFactory(name="tfidf_pivot", kind="tfidf_pivot")
    from annotator.core.errors import ApplicationError

    with pytest.raises(ApplicationError, match="no caption for a pivot annotator"):
        enlargement_request(pool=pool, image_annotator="tfidf_pivot")
    with pytest.raises(ApplicationError, match="Choose an image-image annotator"):
        enlargement_request(pool=pool, image_annotator="", caption_annotator="")
    with pytest.raises(ApplicationError, match="keep is between"):
        enlargement_request(pool=pool, keep=0)
