"""The campaign and dataset lists: search, status filter, sort and pages from GET parameters, server-side."""

import pytest
from django.urls import reverse

from annotator.campaigns.services.lifecycle import campaign_create
from annotator.core.selectors.listing import PAGE_SIZE
from annotator.models import Campaign, CampaignStatus, DatasetStatus, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import DatasetFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def requester(client):
    user = user_with_role(Role.REQUESTER)
    client.force_login(user)
    return user


def _names(response, kind: str) -> list[str]:
    """The linked names in the list's table, in order."""
    assert response.status_code == 200
    page = response.content.decode()
    body = page.split("<tbody>")[1].split("</tbody>")[0] if "<tbody>" in page else ""
    return [chunk.split(">", 1)[1].split("<", 1)[0] for chunk in body.split(f'<a href="/{kind}/')[1:]]


def test_campaigns_are_searched_filtered_and_sorted(client, requester):
    dataset = make_dataset(images=8, name="zebra-set")
    runs = [add_run(dataset=dataset, name="filter-run", seed=1, directions=("i2t",))]
    for name in ("Alpha", "Beta", "Gamma"):
        campaign_create(owner=requester, dataset=dataset, runs=runs, name=name, direction="i2t")
    Campaign.objects.filter(name="Beta").update(status=CampaignStatus.FINISHED)
    url = reverse("campaign-list")
    assert _names(client.get(url), "campaigns") == ["Gamma", "Beta", "Alpha"]  # newest first
    assert _names(client.get(url, {"sort": "name"}), "campaigns") == ["Alpha", "Beta", "Gamma"]
    assert _names(client.get(url, {"q": "amm"}), "campaigns") == ["Gamma"]
    assert _names(client.get(url, {"q": "ZEBRA", "sort": "name"}), "campaigns") == ["Alpha", "Beta", "Gamma"]
    assert _names(client.get(url, {"status": "finished"}), "campaigns") == ["Beta"]
    assert "No campaign matches" in client.get(url, {"q": "nothing"}).content.decode()


def test_unknown_list_parameters_are_a_clear_400(client, requester):
    response = client.get(reverse("campaign-list"), {"sort": "drop table"})
    assert response.status_code == 400 and "Unknown sort" in response.content.decode()
    response = client.get(reverse("dataset-list"), {"status": "lost"})
    assert response.status_code == 400 and "Unknown status" in response.content.decode()


def test_datasets_are_filtered_sorted_and_paginated(client, requester):
    for i in range(PAGE_SIZE + 2):
        DatasetFactory(owner=requester, name=f"set-{i:02d}")
    DatasetFactory(owner=requester, name="broken", status=DatasetStatus.FAILED)
    url = reverse("dataset-list")
    first = client.get(url, {"q": "set-"})
    assert _names(first, "datasets") == [f"set-{i:02d}" for i in range(PAGE_SIZE)]
    page = first.content.decode()
    assert "Page 1 of 2" in page and "?q=set-&amp;page=2" in page  # the next page keeps the search
    assert _names(client.get(url, {"q": "set-", "page": 2}), "datasets") == ["set-25", "set-26"]
    assert _names(client.get(url, {"status": "failed"}), "datasets") == ["broken"]
    names = _names(client.get(url, {"sort": "status"}), "datasets")
    assert names[0] == "broken"  # failed sorts before ready
