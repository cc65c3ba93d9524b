"""dataset_upload and its task: the request stores and queues, the task imports once, failures are visible."""

import io
import json
import zipfile
from datetime import timedelta
from unittest import mock

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.datasets.services import imports as import_service
from annotator.datasets.services import uploads as upload_service
from annotator.datasets.services.uploads import dataset_import_retry, dataset_upload
from annotator.models import Caption, Dataset, DatasetStatus, Image, Role
from tests.factories import png_bytes, user_with_role
from tests.task_support import run_task
from workers.tasks.datasets import dataset_import_task

pytestmark = pytest.mark.django_db

COCO = {
    "images": [{"id": 1, "file_name": "1.png"}, {"id": 2, "file_name": "2.png"}],
    "annotations": [
        {"id": 11, "image_id": 1, "caption": "A red box."},
        {"id": 12, "image_id": 1, "caption": "A box, red."},
        {"id": 21, "image_id": 2, "caption": "A blue box."},
    ],
}


def uploads(*, coco=COCO, missing_image=False) -> dict:
    """The upload of COCO; `missing_image` leaves 2.png out of the zip (a fault only the import finds: a split
    file may leave images out, so the upload does not refuse it)."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("1.png", png_bytes(color=(200, 0, 0)))
        if not missing_image:
            zf.writestr("2.png", png_bytes(color=(0, 0, 200)))
    return {
        "captions": SimpleUploadedFile("captions.json", json.dumps(coco).encode()),
        "images": SimpleUploadedFile("images.zip", archive.getvalue()),
    }


@pytest.fixture
def requester():
    return user_with_role(Role.REQUESTER, username="uploader")


def queued(name, requester, django_capture_on_commit_callbacks, **kwargs) -> Dataset:
    """An upload whose task was enqueued but has not run (the callbacks are captured, not executed)."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        dataset = dataset_upload(name=name, owner=requester, **uploads(**kwargs))
    assert len(callbacks) == 1
    return dataset


def counts(dataset) -> tuple[int, int]:
    return Image.objects.filter(dataset=dataset).count(), Caption.objects.filter(dataset=dataset).count()


def test_the_upload_is_stored_and_queued_and_nothing_is_imported_in_the_request(
    requester, django_capture_on_commit_callbacks
):
    dataset = queued("stored", requester, django_capture_on_commit_callbacks)
    assert dataset.status == DatasetStatus.IMPORTING and dataset.report == {"phase": "queued"}
    assert counts(dataset) == (0, 0)
    _dirs, files = default_storage.listdir(f"uploads/datasets/{dataset.pk}")
    assert sorted(files) == ["captions.json", "images.zip", "upload.json"]


def test_a_duplicated_task_imports_once(requester, django_capture_on_commit_callbacks):
    """The same task delivered twice (a redelivery, a double enqueue) writes every row once."""
    dataset = queued("twice", requester, django_capture_on_commit_callbacks)
    assert run_task(dataset_import_task, dataset.pk) == "ready"
    assert counts(dataset) == (2, 3)
    assert run_task(dataset_import_task, dataset.pk) == "ready"  # finished: left alone
    assert counts(dataset) == (2, 3)
    dataset.refresh_from_db()
    assert dataset.report["phase"] == "done" and dataset.report["images_created"] == 2
    assert not default_storage.listdir(f"uploads/datasets/{dataset.pk}")[1]  # the upload is removed once imported


def test_a_task_arriving_while_another_runs_the_import_does_nothing(requester, django_capture_on_commit_callbacks):
    dataset = queued("busy", requester, django_capture_on_commit_callbacks)
    Dataset.objects.filter(pk=dataset.pk).update(
        report={"phase": "checking images", "checked": 1}, updated_at=timezone.now()
    )  # another worker's fresh heartbeat
    assert run_task(dataset_import_task, dataset.pk) == "importing"
    assert counts(dataset) == (0, 0)
    assert run_task(dataset_import_task, 987654) == "missing"


def test_a_stalled_import_is_resumed_without_duplicating_rows(requester, django_capture_on_commit_callbacks):
    """A worker killed after committing the images (no cleanup ran): a later claim resumes the import."""
    dataset = queued("killed", requester, django_capture_on_commit_callbacks)
    with (
        mock.patch.object(import_service, "write_captions", side_effect=KeyboardInterrupt),
        mock.patch.object(import_service, "cleanup"),
        mock.patch.object(import_service, "dataset_finish"),
    ):
        with pytest.raises(KeyboardInterrupt):  # stands for SIGKILL: nothing after it runs
            run_task(dataset_import_task, dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.IMPORTING and counts(dataset) == (2, 0)
    assert run_task(dataset_import_task, dataset.pk) == "importing"  # its heartbeat is still fresh
    with pytest.raises(ApplicationError):
        dataset_upload(name="killed", owner=requester, **uploads())  # no second import into a running one
    Dataset.objects.filter(pk=dataset.pk).update(updated_at=timezone.now() - timedelta(minutes=11))
    assert run_task(dataset_import_task, dataset.pk) == "ready"
    dataset.refresh_from_db()
    assert (
        counts(dataset) == (2, 3) and dataset.report["images_created"] == 0 and dataset.report["images_unchanged"] == 2
    )


def test_a_refused_upload_fails_with_every_offender_and_its_files_are_removed(
    requester, django_capture_on_commit_callbacks
):
    coco = {**COCO, "annotations": [*COCO["annotations"], {"id": 31, "image_id": 3, "caption": "orphan"}]}
    dataset = queued("refused", requester, django_capture_on_commit_callbacks, coco=coco, missing_image=True)
    assert run_task(dataset_import_task, dataset.pk) == "failed"
    dataset.refresh_from_db()
    assert dataset.report["phase"] == "refused" and dataset.report["error_count"] == 2
    assert {row["id"] for row in dataset.report["offenders"]} == {"2", "31"}
    assert counts(dataset) == (0, 0)
    assert not default_storage.listdir(f"uploads/datasets/{dataset.pk}")[1]
    with pytest.raises(ApplicationError) as refused:
        dataset_import_retry(dataset=dataset)
    assert refused.value.status == 409


def test_a_refused_addition_leaves_a_ready_dataset_ready(requester, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        dataset = dataset_upload(name="grows", owner=requester, **uploads())
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY
    bad = {**COCO, "annotations": [{"id": 11, "image_id": 1, "caption": "A different text now."}]}
    with django_capture_on_commit_callbacks(execute=True):
        dataset_upload(name="grows", owner=requester, **uploads(coco=bad))
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY and dataset.report["phase"] == "refused"
    assert "was imported before with a different text" in dataset.report["errors"][0]
    assert counts(dataset) == (2, 3)


def test_a_broker_that_is_down_fails_the_import_visibly_and_a_retry_queues_it(
    requester, django_capture_on_commit_callbacks
):
    with mock.patch.object(upload_service, "enqueue_long_on_commit", side_effect=ConnectionError("broker down")):
        with pytest.raises(ApplicationError) as error:
            dataset_upload(name="no-broker", owner=requester, **uploads())
    assert error.value.status == 503
    dataset = Dataset.objects.get(name="no-broker")
    assert dataset.status == DatasetStatus.FAILED and dataset.report["phase"] == "failed"
    assert "could not be queued" in dataset.report["errors"][0]
    with django_capture_on_commit_callbacks(execute=True):
        dataset = dataset_import_retry(dataset=dataset)
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY and counts(dataset) == (2, 3)


def test_a_failure_before_the_import_starts_is_recorded(requester, django_capture_on_commit_callbacks):
    dataset = queued("lost-files", requester, django_capture_on_commit_callbacks)
    default_storage.delete(f"uploads/datasets/{dataset.pk}/upload.json")
    assert run_task(dataset_import_task, dataset.pk) == "failed"
    dataset.refresh_from_db()
    assert dataset.report["phase"] == "failed" and "FileNotFoundError" in dataset.report["errors"][0]
    with pytest.raises(ApplicationError, match="files of this import are gone"):
        dataset_import_retry(dataset=dataset)


@pytest.fixture
def s3_storage(settings):
    """default_storage on S3 (moto's server on loopback), as in production with AWS_STORAGE_BUCKET_NAME."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="vericap-uploads")
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "vericap-uploads",
                "endpoint_url": endpoint,
                "access_key": "testing",
                "secret_key": "testing",
                "region_name": "us-east-1",
            },
        },
    }
    yield client
    server.stop()


def test_an_upload_on_s3_is_imported_through_a_local_copy(requester, s3_storage, django_capture_on_commit_callbacks):
    """S3 has no local paths (default_storage.path() raises): the task copies the upload to a temporary folder."""
    dataset = queued("remote", requester, django_capture_on_commit_callbacks)
    keys = {obj["Key"] for obj in s3_storage.list_objects_v2(Bucket="vericap-uploads")["Contents"]}
    assert f"uploads/datasets/{dataset.pk}/images.zip" in keys
    assert run_task(dataset_import_task, dataset.pk) == "ready"
    assert counts(dataset) == (2, 3)
    keys = {obj["Key"] for obj in s3_storage.list_objects_v2(Bucket="vericap-uploads")["Contents"]}
    assert not any(key.startswith("uploads/") for key in keys) and any(key.startswith("thumbnails/") for key in keys)


def test_uploads_are_checked_before_anything_is_stored(requester):
    files = uploads()
    with pytest.raises(ApplicationError, match="The captions file is missing"):
        dataset_upload(name="a", owner=requester, captions=None, images=files["images"])
    with pytest.raises(ApplicationError, match="is empty"):
        dataset_upload(name="b", owner=requester, captions=SimpleUploadedFile("c.json", b""), images=files["images"])
    with pytest.raises(ApplicationError, match="not a zip archive"):
        dataset_upload(
            name="c", owner=requester, captions=files["captions"], images=SimpleUploadedFile("i.zip", b"plain text")
        )
    with pytest.raises(ApplicationError, match="1 to 200 characters"):
        dataset_upload(name=" ", owner=requester, **uploads())
    other = user_with_role(Role.REQUESTER, username="someone-else")
    Dataset.objects.create(name="theirs", owner=other, status=DatasetStatus.READY)
    with pytest.raises(ApplicationError) as forbidden:
        dataset_upload(name="theirs", owner=requester, **uploads())
    assert forbidden.value.status == 403
    assert list(Dataset.objects.values_list("name", flat=True)) == ["theirs"]
