"""Batched autosave (work_answers, annotator.crowd.services.answer_batch): many items in one request and one
statement, idempotent per item, CSRF-checked both as JSON and as the form a beacon sends."""

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.crowd.services.answer_batch import answers_save
from annotator.crowd.services.assignments import assignment_return
from annotator.models import Answer, AssignmentStatus
from tests.annotator.crowd.test_work_views import claim, post_json, worker_client
from tests.factories import live_campaign_with_hits

pytestmark = pytest.mark.django_db


def _claimed(candidates=3):
    campaign = live_campaign_with_hits(hits=1, candidates=candidates, qualification_items=0)
    client, worker = worker_client(campaign)
    assignment = claim(client, campaign)
    return client, worker, assignment, list(hit_item_tokens(hit=assignment.hit))


def test_a_batch_writes_every_item_in_one_statement_and_says_what_each_misses(settings):
    settings.DATABASE_TRANSACTION_POOLING = True  # plain statements (no PREPARE/EXECUTE) to count them
    client, worker, assignment, tokens = _claimed()
    entries = [{"item_token": tokens[0], "choice": "yes", "seconds_spent": 4}]
    entries.append({"item_token": tokens[1], "choice": "partially_yes"})  # a middle answer without its reason
    entries.append({"item_token": tokens[2], "choice": "no", "comment": "<b>dog</b>"})
    with CaptureQueriesContext(connection) as queries:
        missing = answers_save(assignment=assignment, worker=worker, entries=entries)
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE"))]
    assert len(writes) == 1, writes
    assert missing[tokens[0]] is None and missing[tokens[2]] is None
    assert missing[tokens[1]]
    stored = {a.item_id: a for a in Answer.objects.filter(assignment=assignment)}
    assert len(stored) == 3
    by_token = hit_item_tokens(hit=assignment.hit)
    assert stored[by_token[tokens[0]]].seconds_spent == 4.0
    assert stored[by_token[tokens[2]]].comment == "<b>dog</b>"


def test_a_batch_sent_twice_leaves_one_row_per_item_and_seconds_only_grow():
    client, worker, assignment, tokens = _claimed()
    answers_save(
        assignment=assignment, worker=worker, entries=[{"item_token": tokens[0], "choice": "yes", "seconds_spent": 9}]
    )
    entries = [
        {"item_token": tokens[0], "choice": "no", "seconds_spent": 3},  # a stale tab's time never lowers it
        {"item_token": tokens[0], "choice": "yes", "seconds_spent": 3},  # the last entry of an item wins
        {"item_token": tokens[1], "choice": "yes"},
    ]
    answers_save(assignment=assignment, worker=worker, entries=entries)
    answers_save(assignment=assignment, worker=worker, entries=entries)
    rows = list(Answer.objects.filter(assignment=assignment).order_by("item__position"))
    assert len(rows) == 2
    assert rows[0].choice == "yes" and rows[0].seconds_spent == 9.0


def test_one_bad_entry_refuses_the_batch_and_writes_nothing():
    client, worker, assignment, tokens = _claimed()
    for bad, words in (
        ([{"item_token": tokens[0], "choice": "yes"}, {"item_token": "nope", "choice": "yes"}], "not part"),
        ([{"item_token": tokens[0], "choice": "maybe"}], "Unknown answer"),
        ([], "non-empty"),
        ("yes", "non-empty"),
        ([{"item_token": tokens[0], "choice": "yes"}] * 101, "At most"),
    ):
        with pytest.raises(ApplicationError, match=words) as caught:
            answers_save(assignment=assignment, worker=worker, entries=bad)
        assert caught.value.status == 400
    assert not Answer.objects.filter(assignment=assignment).exists()


def test_a_batch_on_a_returned_hit_or_anothers_assignment_is_refused():
    client, worker, assignment, tokens = _claimed()
    _, other = worker_client(assignment.hit.campaign)
    with pytest.raises(ApplicationError) as caught:
        answers_save(assignment=assignment, worker=other, entries=[{"item_token": tokens[0], "choice": "yes"}])
    assert caught.value.status == 404
    assignment_return(assignment=assignment, worker=worker)
    with pytest.raises(ApplicationError) as caught:
        answers_save(assignment=assignment, worker=worker, entries=[{"item_token": tokens[0], "choice": "yes"}])
    assert caught.value.status == 409
    assert not Answer.objects.filter(assignment=assignment).exists()


def test_the_endpoint_takes_json_with_the_csrf_header():
    client, worker, assignment, tokens = _claimed()
    url = reverse("work_answers", args=[assignment.pk])
    response = post_json(client, url, {"answers": [{"item_token": t, "choice": "yes"} for t in tokens]})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["saved"] == len(tokens)
    assert body["items"][tokens[0]] == {"complete": True, "missing": None}
    assert Answer.objects.filter(assignment=assignment).count() == len(tokens)
    bad = post_json(client, url, {"answers": {"item_token": tokens[0]}})
    assert bad.status_code == 400 and "list" in bad.json()["error"]


def test_the_beacon_form_needs_the_csrf_token_in_its_body():
    """sendBeacon cannot send X-CSRFToken: the token travels in the form, and without it nothing is saved."""
    _, worker, assignment, tokens = _claimed()
    client = Client(enforce_csrf_checks=True)
    client.force_login(worker.user)
    page = client.get(reverse("work_hit", args=[assignment.pk]))
    token = page.cookies["csrftoken"].value if "csrftoken" in page.cookies else client.cookies["csrftoken"].value
    url = reverse("work_answers", args=[assignment.pk])
    answers = json.dumps([{"item_token": tokens[0], "choice": "yes"}])
    refused = client.post(url, {"answers": answers})
    assert refused.status_code == 403
    assert not Answer.objects.filter(assignment=assignment).exists()
    saved = client.post(url, {"answers": answers, "csrfmiddlewaretoken": token})
    assert saved.status_code == 200, saved.content
    assert Answer.objects.get(assignment=assignment).choice == "yes"
    garbled = client.post(url, {"answers": "[{", "csrfmiddlewaretoken": token}, HTTP_ACCEPT="application/json")
    assert garbled.status_code == 400


def test_the_claim_answers_with_the_hit_page_itself():
    """One round trip: the claim's answer is the HIT page (Content-Location names its own address)."""
    campaign = live_campaign_with_hits(hits=1, candidates=3, qualification_items=0)
    client, worker = worker_client(campaign)
    response = client.post(reverse("work_claim", args=[campaign.pk]))
    assert response.status_code == 200
    assignment = worker.assignments.get()
    assert response["Content-Location"] == reverse("work_hit", args=[assignment.pk])
    page = response.content.decode()
    assert 'id="hit-form"' in page
    data = json.loads(page.split('id="page-data" type="application/json">')[1].split("</script>")[0])
    assert data["pageUrl"] == reverse("work_hit", args=[assignment.pk])
    assert data["answersUrl"] == reverse("work_answers", args=[assignment.pk])
    again = client.post(reverse("work_claim", args=[campaign.pk]))  # a reload of the claim: the same lease
    assert again.status_code == 200 and again["Content-Location"] == response["Content-Location"]
    assert worker.assignments.count() == 1
    assert assignment.status == AssignmentStatus.RESERVED
    assert assignment.expires_at > timezone.now()
