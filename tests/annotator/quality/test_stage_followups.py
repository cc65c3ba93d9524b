"""The follow-ups per stage of a `both` campaign: the first (image-to-caption) stage follows
rationale_followups, the second (caption-to-image) stage2_rationale_followups, on the HIT page, in autosave
and in the submit's validation; the switch is refused on campaigns with one stage."""

import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.campaigns.services.lifecycle import campaign_create
from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.models import Answer, Role, Shortcoming
from tests.annotator.campaign_support import add_run, make_dataset
from tests.annotator.crowd.test_work_views import claim, post_json, worker_client
from tests.factories import live_campaign_with_hits, user_with_role

pytestmark = pytest.mark.django_db


def both_campaign(*, stage: str, stage2: bool):
    campaign = live_campaign_with_hits(
        hits=1, candidates=1, direction="both", rationale_followups=True, stage2_rationale_followups=stage2
    )
    campaign.hits.update(stage=stage)
    return campaign


def hit_page_and_submit(campaign, *, choice="partially_yes"):
    client, _worker = worker_client(campaign)
    assignment = claim(client, campaign)
    page = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    rules = json.loads(page.split('id="hit-rules" type="application/json">', 1)[1].split("</script>", 1)[0])
    tokens = list(hit_item_tokens(hit=assignment.hit))
    answers = [{"item_token": t, "choice": choice, "shortcomings": [], "seconds_spent": 2} for t in tokens]
    response = post_json(client, reverse("work_submit", args=[assignment.pk]), {"answers": answers})
    return page, rules, response, (client, assignment, tokens)


def test_the_second_stage_asks_no_follow_ups_by_default_as_eccv_does():
    page, rules, response, (client, assignment, tokens) = hit_page_and_submit(both_campaign(stage="t2i", stage2=False))
    assert rules["followups"] is False and rules["needsReasons"] == []
    assert 'name="shortcomings-__TOKEN__"' not in page  # no follow-up inputs for hit.js to add
    assert response.status_code == 200, response.content  # a middle answer needs no reason here
    assert response.json()["status"] == "submitted"


def test_the_first_stage_of_the_same_campaign_asks_them():
    page, rules, response, _ = hit_page_and_submit(both_campaign(stage="i2t", stage2=False))
    assert rules["followups"] is True and "partially_yes" in rules["needsReasons"]
    assert 'name="shortcomings-__TOKEN__"' in page
    assert response.status_code == 400
    assert {m["missing"] for m in response.json()["missing"]} == {"a reason (what is wrong with the description)"}


def test_switched_on_the_second_stage_asks_them_and_keeps_the_reasons():
    campaign = both_campaign(stage="t2i", stage2=True)
    _page, rules, response, (client, assignment, tokens) = hit_page_and_submit(campaign)
    assert rules["followups"] is True and response.status_code == 400
    answers = [
        {
            "item_token": t,
            "choice": "partially_yes",
            "shortcomings": [Shortcoming.MISSES_MAIN.value],
            "seconds_spent": 2,
        }
        for t in tokens
    ]
    assert post_json(client, reverse("work_submit", args=[assignment.pk]), {"answers": answers}).status_code == 200
    kept = list(Answer.objects.filter(assignment=assignment).values_list("shortcomings", flat=True))
    assert kept and all(reasons == [Shortcoming.MISSES_MAIN.value] for reasons in kept)


def test_reasons_sent_to_a_stage_without_follow_ups_are_dropped_on_autosave():
    campaign = both_campaign(stage="t2i", stage2=False)
    client, _worker = worker_client(campaign)
    assignment = claim(client, campaign)
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    saved = post_json(
        client,
        reverse("work_answer", args=[assignment.pk]),
        {"item_token": token, "choice": "mostly_no", "shortcomings": [Shortcoming.MISSES_MAIN.value]},
    )
    assert saved.status_code == 200 and saved.json()["complete"] is True
    assert Answer.objects.get(assignment=assignment).shortcomings == []


def test_the_switch_is_for_both_campaigns_only_in_the_service_the_form_and_the_api():
    owner = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=12)
    runs = [add_run(dataset=dataset, name="stage-run", seed=1, directions=("i2t", "t2i"))]
    with pytest.raises(ApplicationError, match="second stage are for `both`"):
        campaign_create(
            owner=owner, dataset=dataset, runs=runs, name="one", direction="i2t", stage2_rationale_followups=True
        )
    both = campaign_create(
        owner=owner, dataset=dataset, runs=runs, name="two", direction="both", stage2_rationale_followups=True
    )
    assert both.stage2_rationale_followups is True

    api = APIClient()
    api.force_authenticate(owner)
    assert api.get(f"/api/v1/campaigns/{both.pk}/").json()["stage2_rationale_followups"] is True
    payload = {"dataset": dataset.pk, "runs": [runs[0].pk], "name": "api", "direction": "i2t"}
    refused = api.post("/api/v1/campaigns/", {**payload, "stage2_rationale_followups": True}, format="json")
    assert refused.status_code == 400 and "second stage are for `both`" in refused.json()["error"]
    made = api.post(
        "/api/v1/campaigns/", {**payload, "direction": "both", "stage2_rationale_followups": True}, format="json"
    )
    assert made.status_code == 201, made.content
    assert made.json()["stage2_rationale_followups"] is True

    client = Client()
    client.force_login(owner)
    form = client.get(reverse("campaign-new")).content.decode()
    assert 'name="stage2_rationale_followups"' in form
