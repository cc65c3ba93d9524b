"""Money on the requester's pages beyond the cards: spend over time against the budget, the budget form
(through the policy service; errors in the form, 4xx), and the bonuses MTurk did not accept, with Retry."""

import json

import pytest
from django.urls import reverse

from annotator.campaigns.selectors.crowd_work import campaign_spend
from annotator.models import Bonus, CampaignStatus, PayoutStatus, Role
from tests.annotator.crowd import test_bonuses
from tests.annotator.crowd.test_bonuses import approved, give, send_bonus_call
from tests.annotator.crowd.test_money import claim_and_submit
from tests.factories import live_campaign_with_hits, user_with_role

pytestmark = pytest.mark.django_db
# MTurk under botocore's Stubber, and retries that do not raise in eager mode, as the bonus service tests have.
mturk_api = test_bonuses.mturk_api
_eager_retries = test_bonuses._eager_retries


def page_of(client, campaign, **kwargs):
    return client.get(reverse("campaign-detail", args=[campaign.pk]), **kwargs).content.decode()


def chart_data(page, element_id):
    return json.loads(page.split(f'id="{element_id}" type="application/json">', 1)[1].split("</script>", 1)[0])


@pytest.fixture
def paused_at_budget(client):
    campaign = live_campaign_with_hits(
        hits=4, reward_cents=100, platform_fee_percent=20.0, budget_cents=240, rationale_followups=False
    )
    client.force_login(campaign.owner)
    claim_and_submit(campaign)
    claim_and_submit(campaign)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.PAUSED
    return campaign


def test_spend_over_time_is_drawn_against_the_budget(client, paused_at_budget):
    page = page_of(client, paused_at_budget)
    spend = chart_data(page, "chart-spend")
    assert 'data-chart="spend"' in page and 'id="spend-table"' in page
    assert spend["budget"] == 240 and spend["labels"] and spend["spent"][-1] == 240
    assert spend["spent"][-1] == campaign_spend(campaign=paused_at_budget)["total_cents"]
    assert spend["spent"][0] == 0 and spend["spent"] == sorted(spend["spent"])  # from nothing, never falling


def test_raising_the_budget_in_the_form_lets_the_paused_campaign_resume(client, paused_at_budget):
    page = page_of(client, paused_at_budget)
    assert 'id="budget-form"' in page and 'value="2.40"' in page and "Raise the budget below" in page
    assert client.post(reverse("campaign-action", args=[paused_at_budget.pk, "resume"])).status_code == 409

    response = client.post(reverse("campaign-budget", args=[paused_at_budget.pk]), {"budget": "$1,000"}, follow=True)
    assert response.status_code == 200
    text = response.content.decode()
    assert "The budget is now $1,000.00." in text and "resume the campaign when you are ready" in text
    paused_at_budget.refresh_from_db()
    assert paused_at_budget.budget_cents == 100000
    assert client.post(reverse("campaign-action", args=[paused_at_budget.pk, "resume"])).status_code == 302
    paused_at_budget.refresh_from_db()
    assert paused_at_budget.status == CampaignStatus.LIVE


@pytest.mark.parametrize(
    ("typed", "message"),
    [("a lot", "Give the budget in dollars and cents"), ("-5", "Give the budget"), ("1.234", "Give the budget")],
)
def test_a_bad_budget_is_a_400_shown_in_the_form_with_what_was_typed(client, paused_at_budget, typed, message):
    response = client.post(reverse("campaign-budget", args=[paused_at_budget.pk]), {"budget": typed})
    assert response.status_code == 400
    page = response.content.decode()
    form = page.split('id="budget-form"', 1)[1].split("</form>", 1)[0]
    assert message in form and f'value="{typed}"' in form and 'aria-invalid="true"' in form
    paused_at_budget.refresh_from_db()
    assert paused_at_budget.budget_cents == 240


def test_an_empty_budget_removes_the_cap_and_a_finished_campaign_keeps_its_own(client, paused_at_budget):
    assert client.post(reverse("campaign-budget", args=[paused_at_budget.pk]), {"budget": ""}).status_code == 302
    paused_at_budget.refresh_from_db()
    assert paused_at_budget.budget_cents is None
    paused_at_budget.status = CampaignStatus.FINISHED
    paused_at_budget.save(update_fields=["status"])
    refused = client.post(reverse("campaign-budget", args=[paused_at_budget.pk]), {"budget": "10"})
    assert refused.status_code == 409 and "cannot change" in refused.content.decode()


def test_the_budget_form_is_the_owners_only(client, paused_at_budget):
    client.force_login(user_with_role(Role.REQUESTER))
    assert client.post(reverse("campaign-budget", args=[paused_at_budget.pk]), {"budget": "99"}).status_code == 404
    client.force_login(user_with_role(Role.WORKER))
    assert client.post(reverse("campaign-budget", args=[paused_at_budget.pk]), {"budget": "99"}).status_code == 403
    paused_at_budget.refresh_from_db()
    assert paused_at_budget.budget_cents == 240


def test_a_bonus_mturk_refused_is_listed_and_sent_again_with_retry(
    client, mturk_api, django_capture_on_commit_callbacks
):
    assignment = approved(external=True, reward_cents=100, platform_fee_percent=0.0)
    campaign = assignment.hit.campaign
    mturk_api.add_client_error(
        "send_bonus", service_error_code="RequestError", service_message="Insufficient funds", http_status_code=400
    )
    bonus = give(assignment, django_capture_on_commit_callbacks)
    assert bonus.status == PayoutStatus.FAILED
    client.force_login(campaign.owner)

    detail = page_of(client, campaign)
    assert 'id="failed-bonuses-note"' in detail and "1 bonus MTurk did not accept" in detail
    listing = client.get(reverse("bonuses-failed"), {"campaign": campaign.pk})
    assert listing.status_code == 200
    table = listing.content.decode().split('id="failed-bonuses"', 1)[1].split("</table>", 1)[0]
    assert "$1.50" in table and "Insufficient funds" in table and reverse("bonus-retry", args=[bonus.pk]) in table

    send_bonus_call(mturk_api)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("bonus-retry", args=[bonus.pk]), {"campaign": campaign.pk})
    assert response.status_code == 302 and response["Location"].endswith(f"?campaign={campaign.pk}")
    bonus.refresh_from_db()
    assert bonus.status == PayoutStatus.SENT and bonus.attempts == 1
    assert mturk_api.sent_bonuses[-1]["UniqueRequestToken"] == f"vericap-bonus-{bonus.pk}"  # the same token
    assert campaign_spend(campaign=campaign)["bonuses_cents"] == 150  # counted again
    assert 'id="no-failed-bonuses"' in client.get(reverse("bonuses-failed")).content.decode()

    again = client.post(reverse("bonus-retry", args=[bonus.pk]))  # a sent bonus is never sent twice
    assert again.status_code == 409 and "only a failed one is sent again" in again.content.decode()


def test_failed_bonuses_are_the_owners_only(client, mturk_api, django_capture_on_commit_callbacks):
    assignment = approved(external=True)
    mturk_api.add_client_error("send_bonus", service_error_code="RequestError", http_status_code=400)
    bonus = give(assignment, django_capture_on_commit_callbacks)
    client.force_login(user_with_role(Role.REQUESTER))
    assert 'id="no-failed-bonuses"' in client.get(reverse("bonuses-failed")).content.decode()
    assert client.get(reverse("bonuses-failed"), {"campaign": assignment.hit.campaign_id}).status_code == 404
    assert client.post(reverse("bonus-retry", args=[bonus.pk])).status_code == 404
    client.force_login(user_with_role(Role.WORKER))
    assert client.get(reverse("bonuses-failed")).status_code == 403
    assert Bonus.objects.get(pk=bonus.pk).status == PayoutStatus.FAILED
