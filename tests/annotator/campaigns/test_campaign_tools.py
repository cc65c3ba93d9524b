"""The requester's campaign and dataset tools: share with a researcher, preview a HIT, copy a campaign,
delete a draft campaign or a failed dataset."""

import pytest
from django.urls import reverse

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.models import Assignment, Campaign, CampaignStatus, Dataset, DatasetStatus, HitItem, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import DatasetFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def requester(client):
    user = user_with_role(Role.REQUESTER)
    client.force_login(user)
    return user


@pytest.fixture
def campaign(requester):
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name=f"tools-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    return campaign_create(
        owner=requester, dataset=dataset, runs=runs, name="Tools", direction="i2t", sample_count=6, redundancy=2
    )


def test_sharing_from_the_campaign_page_lets_the_researcher_see_it(client, requester, campaign):
    researcher = user_with_role(Role.RESEARCHER)
    url = reverse("campaign-sharing", args=[campaign.pk])
    assert client.post(url, {"username": researcher.username}).status_code == 302
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert f'value="{researcher.username}"' in page  # listed, with its unshare button

    client.force_login(researcher)
    assert "Tools" in client.get(reverse("research-home")).content.decode()

    client.force_login(requester)
    client.post(url, {"unshare": researcher.username})
    client.force_login(researcher)
    assert "Tools" not in client.get(reverse("research-home")).content.decode()


def test_sharing_refuses_non_researchers_and_other_requesters(client, requester, campaign):
    worker = user_with_role(Role.WORKER)
    response = client.post(reverse("campaign-sharing", args=[campaign.pk]), {"username": worker.username})
    assert response.status_code == 400 and "No researcher account" in response.content.decode()
    assert not campaign.shared_with.exists()

    client.force_login(user_with_role(Role.REQUESTER))
    researcher = user_with_role(Role.RESEARCHER)
    response = client.post(reverse("campaign-sharing", args=[campaign.pk]), {"username": researcher.username})
    assert response.status_code == 404 and not campaign.shared_with.exists()
    client.force_login(researcher)
    assert client.post(reverse("campaign-sharing", args=[campaign.pk]), {"username": "x"}).status_code == 403


def test_the_preview_shows_the_workers_page_without_gold_and_creates_nothing(client, requester, campaign):
    campaign_build(campaign=campaign)
    gold_hit = HitItem.objects.filter(hit__campaign=campaign, role__startswith="gold").first().hit
    response = client.get(reverse("campaign-preview", args=[campaign.pk]) + f"?hit={gold_hit.pk}")
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count('class="item"') == gold_hit.items.count()
    assert "gold" not in page.lower()
    assert "Preview: this is the HIT as a worker sees it" in page
    assert 'id="submit-hit"' not in page
    assert not Assignment.objects.exists()


def test_the_preview_of_an_unbuilt_campaign_says_so(client, requester, campaign):
    response = client.get(reverse("campaign-preview", args=[campaign.pk]))
    assert response.status_code == 404 and "build it first" in response.content.decode()


def test_a_copy_is_a_new_draft_with_the_same_options_and_runs(client, requester, campaign):
    campaign_build(campaign=campaign)
    response = client.post(reverse("campaign-copy", args=[campaign.pk]))
    copy = Campaign.objects.exclude(pk=campaign.pk).get()
    assert response.status_code == 302 and response.url == reverse("campaign-detail", args=[copy.pk])
    assert copy.name == "Tools (copy)" and copy.status == CampaignStatus.DRAFT and copy.owner == requester
    assert set(copy.runs.all()) == set(campaign.runs.all())
    for name in ("direction", "sample_count", "redundancy", "seed", "pool_depth", "reward_cents"):
        assert getattr(copy, name) == getattr(campaign, name)
    assert not copy.hits.exists()


def test_a_draft_campaign_is_deleted_after_confirmation_and_a_built_one_is_refused(client, requester, campaign):
    url = reverse("campaign-delete", args=[campaign.pk])
    page = client.get(url).content.decode()
    assert "Delete the draft campaign Tools?" in page and 'type="submit"' in page
    assert Campaign.objects.filter(pk=campaign.pk).exists()  # asking deletes nothing
    other = campaign_create(owner=requester, dataset=campaign.dataset, runs=list(campaign.runs.all()), name="Built")
    campaign_build(campaign=other)
    response = client.post(reverse("campaign-delete", args=[other.pk]))
    assert response.status_code == 409 and Campaign.objects.filter(pk=other.pk).exists()
    assert client.post(url).status_code == 302
    assert not Campaign.objects.filter(pk=campaign.pk).exists()


def test_a_failed_dataset_is_deleted_and_a_ready_one_is_refused(client, requester):
    failed = DatasetFactory(owner=requester, status=DatasetStatus.FAILED)
    ready = DatasetFactory(owner=requester, status=DatasetStatus.READY)
    theirs = DatasetFactory(owner=user_with_role(Role.REQUESTER), status=DatasetStatus.FAILED)
    assert "cannot be undone" in client.get(reverse("dataset-delete", args=[failed.pk])).content.decode()
    response = client.post(reverse("dataset-delete", args=[ready.pk]))
    assert response.status_code == 409 and "Only a dataset whose import failed" in response.content.decode()
    assert client.post(reverse("dataset-delete", args=[theirs.pk])).status_code == 404
    assert client.post(reverse("dataset-delete", args=[failed.pk])).status_code == 302
    assert set(Dataset.objects.values_list("pk", flat=True)) == {ready.pk, theirs.pk}


def test_a_failed_datasets_page_links_to_its_deletion(client, requester):
    failed = DatasetFactory(owner=requester, status=DatasetStatus.FAILED)
    ready = DatasetFactory(owner=requester, status=DatasetStatus.READY)
    link = reverse("dataset-delete", args=[failed.pk])
    assert link in client.get(reverse("dataset-detail", args=[failed.pk])).content.decode()
    assert "Delete this dataset" not in client.get(reverse("dataset-detail", args=[ready.pk])).content.decode()
