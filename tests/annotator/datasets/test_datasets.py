"""Requester dataset pages and the home page: who sees what, thumbnails with captions, escaping, paging."""

import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.models import DatasetStatus, Role
from tests.background_support import background_join
from tests.factories import CaptionFactory, DatasetFactory, ImageFactory, UserFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def requester():
    return user_with_role(Role.REQUESTER, username="req")


def test_dataset_pages_are_for_requesters_only(client):
    dataset = DatasetFactory()
    for url in (reverse("dataset-list"), reverse("dataset-detail", args=[dataset.pk])):
        assert client.get(url).status_code == 302  # to the log-in page
        for role in (Role.WORKER, Role.RESEARCHER):
            client.force_login(user_with_role(role))
            assert client.get(url).status_code == 403
            client.logout()


def test_a_requester_sees_own_and_unowned_datasets_but_not_anothers(client, requester):
    mine = DatasetFactory(name="mine", owner=requester)
    shared = DatasetFactory(name="from-the-command-line", owner=None)
    other = DatasetFactory(name="someone-elses", owner=UserFactory())
    client.force_login(requester)
    page = client.get(reverse("dataset-list")).content.decode()
    assert "mine" in page and "from-the-command-line" in page and "someone-elses" not in page
    assert client.get(reverse("dataset-detail", args=[mine.pk])).status_code == 200
    assert client.get(reverse("dataset-detail", args=[shared.pk])).status_code == 200
    assert client.get(reverse("dataset-detail", args=[other.pk])).status_code == 404
    staff = UserFactory(is_staff=True)
    client.force_login(staff)
    assert client.get(reverse("dataset-detail", args=[other.pk])).status_code == 200


def test_detail_shows_counts_thumbnails_and_escaped_captions(client, requester):
    dataset = DatasetFactory(owner=requester, report={"duplicate_groups": 0})
    image = ImageFactory(dataset=dataset, source_id="391895")
    CaptionFactory(image=image, text="A cat <script>alert(1)</script> on a mat.")
    CaptionFactory(image=image, text="A second caption.")
    client.force_login(requester)
    page = client.get(reverse("dataset-detail", args=[dataset.pk])).content.decode()
    assert image.thumbnail.url in page
    assert "Image 391895" in page
    assert "A cat &lt;script&gt;alert(1)&lt;/script&gt; on a mat." in page and "<script>alert(1)" not in page
    assert "A second caption." in page
    assert "{# ranking panel #}" not in page  # the marker is a template comment, invisible


def test_detail_is_paginated(client, requester):
    dataset = DatasetFactory(owner=requester)
    images = [ImageFactory(dataset=dataset, source_id=str(n)) for n in range(30)]
    client.force_login(requester)
    first = client.get(reverse("dataset-detail", args=[dataset.pk]))
    second = client.get(reverse("dataset-detail", args=[dataset.pk]), {"page": 2})
    assert first.context["page"].object_list[0] == images[0] and len(first.context["page"].object_list) == 24
    assert list(second.context["page"].object_list) == images[24:]
    assert "Page 2 of 2" in second.content.decode()
    assert client.get(reverse("dataset-detail", args=[dataset.pk]), {"page": "nonsense"}).status_code == 200


def test_list_shows_import_progress_and_a_refused_import_lists_its_offenders(client, requester):
    DatasetFactory(
        name="busy",
        owner=requester,
        status=DatasetStatus.IMPORTING,
        images_total=200,
        images_done=100,
        captions_total=0,
        captions_done=0,
    )
    failed = DatasetFactory(
        name="refused",
        owner=requester,
        status=DatasetStatus.FAILED,
        report={
            "errors": [
                "image 2 (images[1]): file '2.png' is not a readable image",
                "caption 13 (annotations[2]): refers to unknown image 999",
            ],
            "error_count": 2,
        },
    )
    client.force_login(requester)
    listing = client.get(reverse("dataset-list")).content.decode()
    assert 'aria-valuenow="50"' in listing and "100/200 images" in listing
    assert 'http-equiv="refresh"' in listing  # the list refreshes while an import runs
    detail = client.get(reverse("dataset-detail", args=[failed.pk])).content.decode()
    assert "file &#x27;2.png&#x27; is not a readable image" in detail and "refers to unknown image 999" in detail


@pytest.mark.parametrize(
    ("role", "expected", "absent"),
    [
        (Role.REQUESTER, ["/datasets/", "/campaigns/", "/research/"], ["/work/"]),
        (Role.WORKER, ["/work/"], ["/datasets/", "/campaigns/", "/research/"]),
        (Role.RESEARCHER, ["/research/"], ["/datasets/", "/campaigns/", "/work/"]),
    ],
)
def test_home_links_each_role_to_its_pages(client, role, expected, absent):
    client.force_login(user_with_role(role))
    page = client.get(reverse("home"), follow=True).content.decode()  # a researcher lands on Labels & evaluation
    for url in expected:
        assert f'href="{url}"' in page
    for url in absent:
        assert f'href="{url}"' not in page


def test_home_for_a_visitor_offers_log_in(client):
    page = client.get(reverse("home")).content.decode()
    assert reverse("login") in page and "/datasets/" not in page


def _upload_files(tmp_path, *, faulty=False):
    """A two-image COCO set as uploads: captions.json and images.zip. `faulty`: faults only the import sees
    (2.png missing from the zip, a caption of an unknown image); a file that is not an image is refused at
    upload (tests/annotator/datasets/test_upload_hostility.py)."""
    import io
    import json
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile
    from PIL import Image as PILImage

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        for image_id, colour in ((1, "red"), (2, "blue")):
            buffer = io.BytesIO()
            PILImage.new("RGB", (30, 20), colour).save(buffer, format="PNG")
            if not (faulty and image_id == 2):
                zf.writestr(f"{image_id}.png", buffer.getvalue())
    coco = {
        "images": [{"id": 1, "file_name": "1.png"}, {"id": 2, "file_name": "2.png"}],
        "annotations": [
            {"id": 11, "image_id": 1, "caption": "A red box."},
            {"id": 21, "image_id": 2, "caption": "A blue box."},
            {"id": 31, "image_id": 3, "caption": "Nobody's picture."},
        ][: 3 if faulty else 2],
    }
    return {
        "captions": SimpleUploadedFile("captions.json", json.dumps(coco).encode(), content_type="application/json"),
        "images": SimpleUploadedFile("my images.zip", archive.getvalue(), content_type="application/zip"),
    }


def test_a_requester_imports_from_the_browser_and_owns_the_dataset(
    client, requester, tmp_path, django_capture_on_commit_callbacks, background_tasks
):
    """The request stores the upload and answers at once (importing); the task imports it after commit."""
    from annotator.models import Dataset

    client.force_login(requester)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("dataset-import"), {"name": "uploaded", **_upload_files(tmp_path)})
        dataset = Dataset.objects.get(name="uploaded")
        assert dataset.status == DatasetStatus.IMPORTING and dataset.images.count() == 0  # nothing ran in the request
        assert response.status_code == 302 and response.url == reverse("dataset-detail", args=[dataset.pk])
        importing = client.get(response.url).content.decode()
        assert "uploaded is importing; this page follows it." in importing
        assert "Importing&hellip; waiting for a worker" in importing and 'data-job-state="queued"' in importing
    assert len(callbacks) == 1
    assert background_tasks == [("workers.tasks.datasets.dataset_import_task", dataset.pk)]
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY and dataset.report["phase"] == "done"
    assert dataset.owner == requester and dataset.images.count() == 2 and dataset.captions.count() == 2
    page = client.get(response.url).content.decode()
    assert "A blue box." in page and 'http-equiv="refresh"' not in page and "Importing&hellip;" not in page


@pytest.mark.django_db(transaction=True)
def test_with_eager_celery_the_page_import_runs_after_the_request_in_a_thread(client, tmp_path, held_task):
    """The embedded default (CELERY_TASK_ALWAYS_EAGER): the request answers while the import is queued (a
    task held at its start would hold a request that ran it); a thread of the server imports it after."""
    from annotator.models import Dataset

    held = held_task("workers.tasks.datasets.dataset_import_task")
    client.force_login(user_with_role(Role.REQUESTER, username="eager"))
    response = client.post(reverse("dataset-import"), {"name": "eager", **_upload_files(tmp_path)})
    assert response.status_code == 302
    assert held.started.wait(timeout=10) and held.thread is not threading.current_thread()
    dataset = Dataset.objects.get(name="eager")
    assert dataset.status == DatasetStatus.IMPORTING and dataset.images.count() == 0
    assert 'data-job-state="queued"' in client.get(response.url).content.decode()
    held.release.set()
    background_join()
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY and dataset.images.count() == 2
    assert "A blue box." in client.get(response.url).content.decode()


def test_a_refused_upload_fails_and_its_page_names_every_offender(
    client, requester, tmp_path, django_capture_on_commit_callbacks
):
    from annotator.models import Dataset, Image

    client.force_login(requester)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("dataset-import"), {"name": "bad-upload", **_upload_files(tmp_path, faulty=True)}
        )
    dataset = Dataset.objects.get(name="bad-upload")
    assert response.status_code == 302 and response.url == reverse("dataset-detail", args=[dataset.pk])
    assert dataset.status == DatasetStatus.FAILED and dataset.report["error_count"] == 2
    page = client.get(response.url).content.decode()
    assert "The last import was refused" in page
    assert "image 2 (images[1]): file &#x27;2.png&#x27; not found" in page and "refers to unknown image 3" in page
    assert "Retry the import" not in page  # a refused upload needs corrected files, not a retry
    assert Image.objects.count() == 0


def test_upload_form_errors_and_roles(client, requester, tmp_path):
    """Bad requests are refused before anything is stored or queued; other roles get a 403."""
    from annotator.models import Dataset

    client.force_login(requester)
    missing = client.post(reverse("dataset-import"), {"name": "no-files"})
    assert missing.status_code == 400 and "This field is required." in missing.content.decode()
    wrong = _upload_files(tmp_path)
    wrong["images"].name = "images.tar"
    tar = client.post(reverse("dataset-import"), {"name": "tar", **wrong})
    assert tar.status_code == 400 and "must end with one of: .zip" in tar.content.decode()
    not_zip = _upload_files(tmp_path)
    not_zip["images"] = SimpleUploadedFile("images.zip", b"this is not a zip", content_type="application/zip")
    refused = client.post(reverse("dataset-import"), {"name": "not-zip", **not_zip})
    assert refused.status_code == 400 and "The images file is not a zip archive." in refused.content.decode()
    split_name_only = client.post(
        reverse("dataset-import"), {"name": "split", "split": "test", **_upload_files(tmp_path)}
    )
    assert split_name_only.status_code == 400 and "split file and the split name" in split_name_only.content.decode()
    client.force_login(user_with_role(Role.WORKER))
    assert client.post(reverse("dataset-import"), {"name": "x", **_upload_files(tmp_path)}).status_code == 403
    assert not Dataset.objects.exists()


def test_an_upload_into_a_dataset_that_is_importing_is_refused(client, requester, tmp_path):
    DatasetFactory(name="busy", owner=requester, status=DatasetStatus.IMPORTING, report={"phase": "importing"})
    client.force_login(requester)
    response = client.post(reverse("dataset-import"), {"name": "busy", **_upload_files(tmp_path)})
    assert response.status_code == 409 and "is importing already" in response.content.decode()


def test_a_stalled_import_offers_a_retry_that_resumes_it(
    client, requester, tmp_path, django_capture_on_commit_callbacks
):
    """A worker that died leaves the dataset importing with no progress: its page says so and a retry imports
    the stored upload."""
    from datetime import timedelta

    from django.utils import timezone

    from annotator.models import Dataset

    client.force_login(requester)
    with django_capture_on_commit_callbacks(execute=False):  # the task is never run: its worker "died"
        client.post(reverse("dataset-import"), {"name": "stalled", **_upload_files(tmp_path)})
    dataset = Dataset.objects.get(name="stalled")
    detail = reverse("dataset-detail", args=[dataset.pk])
    retry = reverse("job-retry", args=["import", dataset.pk])
    fresh = client.get(detail).content.decode()
    assert retry not in fresh and 'data-job-state="queued"' in fresh  # still fresh: no retry yet
    Dataset.objects.filter(pk=dataset.pk).update(
        report={"phase": "checking images", "checked": 0}, updated_at=timezone.now() - timedelta(minutes=11)
    )
    page = client.get(detail).content.decode()
    assert "No sign of life since" in page and 'data-job-state="stalled"' in page and retry in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(retry)
    assert response.status_code == 302 and response.url == detail
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY and dataset.images.count() == 2 and dataset.captions.count() == 2
    client.force_login(user_with_role(Role.WORKER))
    assert client.post(reverse("dataset-import-retry", args=[dataset.pk])).status_code == 403
    assert client.post(retry).status_code == 403


def test_list_counts_images_and_captions_without_joining_them(client, requester):
    """Counts come from one subquery each: a join of images and captions would build images x captions rows
    per dataset (123K x 617K for MS-COCO) on every page load."""
    from annotator.datasets.selectors.datasets import dataset_list_visible

    dataset = DatasetFactory(owner=requester)
    for n in range(3):
        image = ImageFactory(dataset=dataset, source_id=f"i{n}")
        for _ in range(5):
            CaptionFactory(image=image)
    DatasetFactory(owner=requester, name="empty")
    sql = str(dataset_list_visible(user=requester).query).upper()
    assert 'JOIN "ANNOTATOR_IMAGE"' not in sql and 'JOIN "ANNOTATOR_CAPTION"' not in sql
    client.force_login(requester)
    rows = {
        d.name: (d.image_count, d.caption_count) for d, _p in client.get(reverse("dataset-list")).context["datasets"]
    }
    assert rows == {dataset.name: (3, 15), "empty": (0, 0)}
