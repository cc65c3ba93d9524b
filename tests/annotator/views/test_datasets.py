"""Requester dataset pages and the home page: who sees what, thumbnails with captions, escaping, paging."""

import pytest
from django.urls import reverse

from annotator.models import DatasetStatus, Role
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
    DatasetFactory(name="busy", owner=requester, status=DatasetStatus.IMPORTING, images_total=200, images_done=100,
                   captions_total=0, captions_done=0)
    failed = DatasetFactory(name="refused", owner=requester, status=DatasetStatus.FAILED, report={
        "errors": ["image 2 (images[1]): file '2.png' is not a readable image", "caption 13 (annotations[2]): refers to unknown image 999"],
        "error_count": 2})
    client.force_login(requester)
    listing = client.get(reverse("dataset-list")).content.decode()
    assert 'aria-valuenow="50"' in listing and "100/200 images" in listing
    assert 'http-equiv="refresh"' in listing  # the list refreshes while an import runs
    detail = client.get(reverse("dataset-detail", args=[failed.pk])).content.decode()
    assert "file &#x27;2.png&#x27; is not a readable image" in detail and "refers to unknown image 999" in detail


@pytest.mark.parametrize(("role", "expected", "absent"), [
    (Role.REQUESTER, ["/datasets/"], []),
    (Role.WORKER, [], ["/datasets/"]),
    (Role.RESEARCHER, [], ["/datasets/"]),
])
def test_home_links_each_role_to_its_pages(client, role, expected, absent):
    client.force_login(user_with_role(role))
    page = client.get(reverse("home")).content.decode()
    for url in expected:
        assert f'href="{url}"' in page
    for url in absent:
        assert f'href="{url}"' not in page


def test_home_for_a_visitor_offers_log_in(client):
    page = client.get(reverse("home")).content.decode()
    assert reverse("login") in page and "/datasets/" not in page
