"""Money on the requester's pages and in the API: the confirmation before launch and finish, spend so far,
the budget and why a campaign paused."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.models import CampaignStatus, Role
from tests.annotator.crowd.test_money import claim_and_submit
from tests.factories import CampaignFactory, HitFactory, live_campaign_with_hits, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(client):
    owner = user_with_role(Role.REQUESTER)
    campaign = CampaignFactory(
        owner=owner,
        status=CampaignStatus.BUILT,
        reward_cents=140,
        redundancy=3,
        platform_fee_percent=20.0,
        budget_cents=250000,
    )
    for index in range(300):
        HitFactory(campaign=campaign, index=index, assignments_required=3)
    client.force_login(owner)
    return campaign


def test_launch_without_confirming_does_nothing_and_leads_to_the_confirmation(client, built):
    response = client.post(reverse("campaign-action", args=[built.pk, "launch"]))
    assert response.status_code == 302
    assert response["Location"] == reverse("campaign-confirm", args=[built.pk, "launch"])
    built.refresh_from_db()
    assert built.status == CampaignStatus.BUILT and built.launched_at is None

    page = client.get(response["Location"]).content.decode()
    # 300 HITs x 3 assignments x $1.40 = $1,260.00, plus 20% = $1,512.00.
    assert 'id="confirm-cost">$1,512.00<' in page
    assert "$1,260.00" in page and "$252.00" in page
    assert 'id="confirm-budget">$2,500.00' in page
    assert 'name="confirm" value="yes"' in page


def test_launch_and_finish_with_confirming(client, built):
    detail = client.get(reverse("campaign-detail", args=[built.pk])).content.decode()
    assert reverse("campaign-confirm", args=[built.pk, "launch"]) in detail
    response = client.post(reverse("campaign-action", args=[built.pk, "launch"]), {"confirm": "yes"})
    assert response.status_code == 302
    built.refresh_from_db()
    assert built.status == CampaignStatus.LIVE and built.launched_at is not None

    client.post(reverse("campaign-action", args=[built.pk, "finish"]))
    built.refresh_from_db()
    assert built.status == CampaignStatus.LIVE
    assert "Finish" in client.get(reverse("campaign-confirm", args=[built.pk, "finish"])).content.decode()
    client.post(reverse("campaign-action", args=[built.pk, "finish"]), {"confirm": "yes"})
    built.refresh_from_db()
    assert built.status == CampaignStatus.FINISHED


def test_the_confirmation_is_the_owners_only(client, built):
    assert client.get(reverse("campaign-confirm", args=[built.pk, "explode"])).status_code == 404
    client.force_login(user_with_role(Role.REQUESTER))
    assert client.get(reverse("campaign-confirm", args=[built.pk, "launch"])).status_code == 404
    client.force_login(user_with_role(Role.WORKER))
    assert client.get(reverse("campaign-confirm", args=[built.pk, "launch"])).status_code == 403


def test_the_campaign_page_and_api_show_spend_and_why_it_paused(client):
    campaign = live_campaign_with_hits(
        hits=4, reward_cents=100, platform_fee_percent=20.0, budget_cents=240, rationale_followups=False
    )
    client.force_login(campaign.owner)
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert 'id="spend-total">$0.00<' in page and "budget-reached" not in page
    claim_and_submit(campaign)
    claim_and_submit(campaign)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.PAUSED
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert 'id="spend-pending">$2.00<' in page and 'id="spend-fees">$0.40<' in page
    assert 'id="spend-total">$2.40<' in page
    assert 'id="budget-reached"' in page and "budget is spent" in page
    assert "&cent;" not in page and "¢" not in page

    api = APIClient()
    api.force_authenticate(campaign.owner)
    shown = api.get(f"/api/v1/campaigns/{campaign.pk}/").json()
    assert shown["budget_cents"] == 240
    assert shown["spend"]["pending_cents"] == 200 and shown["spend"]["total_cents"] == 240
    assert shown["spend"]["budget_reached"] is True
    raised = api.patch(f"/api/v1/campaigns/{campaign.pk}/policy/", {"budget_cents": 1000}, format="json")
    assert raised.status_code == 200 and raised.json()["budget_cents"] == 1000
    refused = api.patch(f"/api/v1/campaigns/{campaign.pk}/policy/", {"budget_cents": 0}, format="json")
    assert refused.status_code == 400 and "budget_cents" in refused.json()["error"]
