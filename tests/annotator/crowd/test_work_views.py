"""The worker's pages and JSON endpoints: ownership, no gold leak, CSRF, escaping, MTurk."""

import json
import re

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.crowd import mturk
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.crowd.services.workers import worker_for_user
from annotator.models import (
    Answer,
    Assignment,
    AssignmentStatus,
    Hit,
    PairSource,
    QualificationAttempt,
    QualificationItem,
    Role,
    Worker,
)
from tests.factories import RankingRunFactory, live_campaign_with_hits, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _mturk_arrivals_unverified(settings):
    """As in local development without MTurk keys; the mturk_api fixture turns verification on."""
    settings.MTURK_VERIFY_ARRIVALS = False


def worker_client(campaign=None, qualified=True):
    user = user_with_role(Role.WORKER)
    client = Client()
    client.force_login(user)
    worker = worker_for_user(user=user)
    if campaign is not None and qualified:
        QualificationAttempt.objects.create(
            worker=worker, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
        )
    return client, worker


def claim(client, campaign):
    response = client.post(reverse("work_claim", args=[campaign.pk]))
    assert response.status_code == 200, response.content  # the claim answers with the HIT page itself
    return Assignment.objects.get(pk=int(re.search(r"/assignments/(\d+)/", response["Content-Location"]).group(1)))


def post_json(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json", HTTP_ACCEPT="application/json")


def test_hit_page_shows_items_without_gold_roles_pair_ids_or_provenance():
    campaign = live_campaign_with_hits(hits=1, candidates=2)
    hit = campaign.hits.get()
    PairSource.objects.create(
        pair=hit.items.first().pair,
        run=RankingRunFactory(dataset=campaign.dataset),
        direction="i2t",
        rank=1,
        score=0.987654,
    )
    client, worker = worker_client(campaign)
    assignment = claim(client, campaign)
    html = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    assert html.count('class="item"') + html.count('class="item ') == 4
    for word in ("gold", "gold_positive", "gold_negative", "candidate", "is_original", "0.987654", "annotator-"):
        assert word not in html.lower(), word
    for item in hit.items.all():
        assert f'pair-{item.pair_id}"' not in html and f'data-pair="{item.pair_id}"' not in html
        assert item.pair.caption.text in html
    data = json.loads(re.search(r'<script id="page-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert set(data) == {
        "pageUrl",
        "answerUrl",
        "answersUrl",
        "assignmentId",
        "autosave",
        "submitUrl",
        "expiresAt",
        "answers",
        "editable",
        "campaignId",
    }


def test_autosave_and_reload_returns_own_answers_only():
    campaign = live_campaign_with_hits(hits=1, candidates=2, redundancy=2)
    client, worker = worker_client(campaign)
    other_client, other = worker_client(campaign)
    mine, theirs = claim(client, campaign), claim(other_client, campaign)
    assert mine.hit_id == theirs.hit_id
    tokens = list(hit_item_tokens(hit=mine.hit))
    response = post_json(
        other_client,
        reverse("work_answer", args=[theirs.pk]),
        {"item_token": tokens[0], "choice": "no", "comment": "THEIR-SECRET-COMMENT"},
    )
    assert response.status_code == 200
    response = post_json(
        client,
        reverse("work_answer", args=[mine.pk]),
        {
            "item_token": tokens[0],
            "choice": "mostly_no",
            "shortcomings": ["wrong_way"],
            "wrong_aspects": ["color"],
            "comment": "<script>alert(1)</script>",
            "seconds_spent": 5,
        },
    )
    assert response.json() == {"saved": True, "complete": True, "missing": None}
    html = client.get(reverse("work_hit", args=[mine.pk])).content.decode()
    assert "THEIR-SECRET-COMMENT" not in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'value="mostly_no" checked' in html and 'value="color" checked' in html


def test_another_workers_assignment_is_404_everywhere():
    campaign = live_campaign_with_hits(hits=2)
    client, worker = worker_client(campaign)
    other_client, _ = worker_client(campaign)
    assignment = claim(client, campaign)
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    assert other_client.get(reverse("work_hit", args=[assignment.pk])).status_code == 404
    assert (
        post_json(
            other_client, reverse("work_answer", args=[assignment.pk]), {"item_token": token, "choice": "yes"}
        ).status_code
        == 404
    )
    assert post_json(other_client, reverse("work_submit", args=[assignment.pk]), {"answers": []}).status_code == 404
    assert other_client.post(reverse("work_return", args=[assignment.pk])).status_code == 404
    assert not Answer.objects.exists()
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.RESERVED


def test_pages_need_a_worker_role():
    campaign = live_campaign_with_hits(hits=1)
    anonymous = Client()
    assert anonymous.get(reverse("work_home"))["Location"].startswith(reverse("login"))
    requester = Client()
    requester.force_login(user_with_role(Role.REQUESTER))
    assert requester.get(reverse("work_home")).status_code == 403
    assert requester.post(reverse("work_claim", args=[campaign.pk])).status_code == 403


def test_autosave_needs_csrf():
    campaign = live_campaign_with_hits(hits=1)
    _, worker = worker_client(campaign)
    client = Client(enforce_csrf_checks=True)
    client.force_login(worker.user)
    assignment = Assignment.objects.create(
        hit=campaign.hits.get(), worker=worker, expires_at=timezone.now() + timezone.timedelta(minutes=5)
    )
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    response = post_json(client, reverse("work_answer", args=[assignment.pk]), {"item_token": token, "choice": "yes"})
    assert response.status_code == 403
    assert not Answer.objects.exists()


@pytest.mark.parametrize(
    "body",
    ["not json", "[1, 2]", '{"item_token": "x", "choice": "yes"}', '{"item_token": null, "shortcomings": "wrong_way"}'],
)
def test_bad_autosave_input_is_a_400_with_a_message(body):
    campaign = live_campaign_with_hits(hits=1)
    client, _ = worker_client(campaign)
    assignment = claim(client, campaign)
    response = client.post(
        reverse("work_answer", args=[assignment.pk]),
        data=body,
        content_type="application/json",
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400
    assert response.json()["error"]


def test_submit_incomplete_says_what_is_missing_then_double_submit_is_one():
    campaign = live_campaign_with_hits(hits=2, candidates=1)
    client, worker = worker_client(campaign)
    assignment = claim(client, campaign)
    tokens = list(hit_item_tokens(hit=assignment.hit))
    url = reverse("work_submit", args=[assignment.pk])
    response = post_json(client, url, {"answers": [{"item_token": tokens[0], "choice": "partially_yes"}]})
    assert response.status_code == 400
    assert [m["item"] for m in response.json()["missing"]] == [1, 2, 3]
    answers = [{"item_token": t, "choice": "yes", "seconds_spent": 2} for t in tokens]
    first = post_json(client, url, {"answers": answers})
    second = post_json(client, url, {"answers": answers})
    assert first.status_code == second.status_code == 200
    assert first.json()["status"] == second.json()["status"] == "submitted"
    assert Assignment.objects.get(pk=assignment.pk).events.filter(to_status="submitted").count() == 1
    dashboard = client.get(reverse("work_home")).content.decode()
    assert re.search(r'id="stat-pending">1<', dashboard)


def test_auto_accept_hands_the_next_hit_after_submit():
    campaign = live_campaign_with_hits(hits=2, candidates=1)
    client, worker = worker_client(campaign)
    client.post(reverse("work_auto_accept"), {"enabled": "1"})
    assert Worker.objects.get(pk=worker.pk).auto_accept_next
    assignment = claim(client, campaign)
    answers = [{"item_token": t, "choice": "yes"} for t in hit_item_tokens(hit=assignment.hit)]
    response = post_json(client, reverse("work_submit", args=[assignment.pk]), {"answers": answers})
    next_id = int(re.search(r"/assignments/(\d+)/", response.json()["next_url"]).group(1))
    assert next_id != assignment.pk and Assignment.objects.get(pk=next_id).worker_id == worker.pk


def test_form_submit_without_javascript_works():
    campaign = live_campaign_with_hits(hits=1, candidates=1)
    client, worker = worker_client(campaign)
    assignment = claim(client, campaign)
    form = {}
    for token in hit_item_tokens(hit=assignment.hit):
        form[f"choice-{token}"] = "mostly_no"
        form[f"shortcomings-{token}"] = ["wrong_way", "grammar"]
        form[f"aspects-{token}"] = ["color"]
    response = client.post(reverse("work_submit", args=[assignment.pk]), form)
    assert response.status_code == 302
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.SUBMITTED
    assert all(a.wrong_aspects == ["color"] for a in Answer.objects.all())


def test_qualification_page_posts_answers_and_unlocks_start():
    campaign = live_campaign_with_hits(hits=1, qualification_items=2)
    client, worker = worker_client(campaign, qualified=False)
    assert client.post(reverse("work_claim", args=[campaign.pk]))["Location"] == reverse(
        "work_qualification", args=[campaign.pk]
    )
    html = client.get(reverse("work_qualification", args=[campaign.pk])).content.decode()
    assert "gold" not in html.lower()
    attempt = QualificationAttempt.objects.get(worker=worker)
    roles = dict(QualificationItem.objects.filter(campaign=campaign).values_list("pk", "role"))
    form = {f"q-{i}": ("yes" if roles[p] == "gold_positive" else "no") for i, p in enumerate(attempt.items)}
    response = client.post(reverse("work_qualification", args=[campaign.pk]), form)
    assert response.status_code == 302
    assert claim(client, campaign).status == AssignmentStatus.RESERVED


def test_signup_login_logout():
    client = Client()
    response = client.post(
        reverse("signup"),
        {"username": "newbie", "password": "a-long-passphrase", "password_again": "a-long-passphrase"},
    )
    assert response.status_code == 302 and response["Location"] == reverse("work_home")
    assert Worker.objects.filter(user__username="newbie").exists()
    assert client.get(reverse("work_home")).status_code == 200
    assert client.get(reverse("logout")).status_code == 405  # log-out is POST only
    client.post(reverse("logout"))
    assert client.get(reverse("work_home")).status_code == 302
    bad = client.post(reverse("login"), {"username": "newbie", "password": "wrong"})
    assert bad.status_code == 400
    good = client.post(reverse("login"), {"username": "newbie", "password": "a-long-passphrase"})
    assert good["Location"] == reverse("work_home")


def test_signup_with_invite_code(settings):
    settings.SIGNUP_INVITE_CODE = "crowd2026"
    client = Client()
    assert "Invite code" in client.get(reverse("signup")).content.decode()
    response = client.post(
        reverse("signup"),
        {
            "username": "x1y2",
            "password": "a-long-passphrase",
            "password_again": "a-long-passphrase",
            "invite_code": "nope",
        },
    )
    assert response.status_code == 400 and "invite code is not valid" in response.content.decode()
    assert not Worker.objects.exists()


def test_mturk_preview_then_accept_then_submit_posts_to_turk():
    campaign = live_campaign_with_hits(hits=1, candidates=1, qualification_items=0)
    hit = campaign.hits.get()
    Hit.objects.filter(pk=hit.pk).update(external_hit_id="3HITEXAMPLE")
    client = Client()
    preview = client.get("/mturk/", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "3HITEXAMPLE"})
    assert preview.status_code == 200 and "Preview" in preview.content.decode()
    assert "X-Frame-Options" not in preview and "frame-ancestors" in preview["Content-Security-Policy"]
    assert "gold" not in preview.content.decode().lower()
    arrival = {
        "assignmentId": "3ASSIGN1",
        "hitId": "3HITEXAMPLE",
        "workerId": "A2WORKER",
        "turkSubmitTo": "https://workersandbox.mturk.com",
    }
    response = client.get("/mturk/", arrival)
    assignment = Assignment.objects.get(external_assignment_id="3ASSIGN1")
    assert response["Location"] == reverse("work_hit", args=[assignment.pk])
    assert assignment.worker.external_id == "A2WORKER"
    assert client.get("/mturk/", arrival)["Location"] == response["Location"]  # idempotent
    answers = [{"item_token": t, "choice": "yes"} for t in hit_item_tokens(hit=hit)]
    submitted = post_json(client, reverse("work_submit", args=[assignment.pk]), {"answers": answers})
    done = client.get(submitted.json()["next_url"]).content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in done
    assert 'name="assignmentId" value="3ASSIGN1"' in done


def test_mturk_refuses_a_foreign_submit_address():
    campaign = live_campaign_with_hits(hits=1, qualification_items=0)
    Hit.objects.filter(campaign=campaign).update(external_hit_id="3H")
    response = Client().get(
        "/mturk/", {"assignmentId": "A", "hitId": "3H", "workerId": "W", "turkSubmitTo": "https://evil.example.org"}
    )
    assert response.status_code == 400
    assert Client().get("/mturk/", {"hitId": "nope"}).status_code == 404


def test_similarity_hit_page_has_a_worded_slider_without_numbers_and_saves_scores():
    campaign = live_campaign_with_hits(hits=1, candidates=1, scale="similarity")
    client, worker = worker_client(campaign)
    assignment = claim(client, campaign)
    html = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    assert html.count('type="range" min="0" max="5" step="0.01"') == 3
    assert "Perfectly matched" in html and "Completely unmatched" in html
    assert "The image and sentence are roughly matched" in html  # the Crisscrossed wording in the instructions
    assert 'name="choice-' not in html
    tokens = list(hit_item_tokens(hit=assignment.hit))
    assert (
        post_json(
            client, reverse("work_answer", args=[assignment.pk]), {"item_token": tokens[0], "score": 6}
        ).status_code
        == 400
    )
    response = post_json(
        client,
        reverse("work_submit", args=[assignment.pk]),
        {"answers": [{"item_token": t, "score": 3.3} for t in tokens]},
    )
    assert response.status_code == 200
    assert set(Answer.objects.values_list("score", flat=True)) == {3.3}


def test_incomplete_qualification_keeps_the_choices_and_says_what_is_missing():
    campaign = live_campaign_with_hits(hits=1, qualification_items=2)
    client, worker = worker_client(campaign, qualified=False)
    client.get(reverse("work_qualification", args=[campaign.pk]))
    response = client.post(reverse("work_qualification", args=[campaign.pk]), {"q-0": "mostly_no"})
    html = response.content.decode()
    assert response.status_code == 400 and "missing: 2" in html
    assert 'name="q-0" value="mostly_no" checked' in html
    assert QualificationAttempt.objects.get(worker=worker).passed is None


def test_no_hit_left_sends_the_worker_back_with_a_message():
    campaign = live_campaign_with_hits(hits=1, candidates=1)
    client, worker = worker_client(campaign)
    first = claim(client, campaign)
    answers = [{"item_token": t, "choice": "yes"} for t in hit_item_tokens(hit=first.hit)]
    post_json(client, reverse("work_submit", args=[first.pk]), {"answers": answers})
    response = client.post(reverse("work_claim", args=[campaign.pk]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("work_home")
    assert "no HIT left" in response.content.decode()


def test_mturk_worker_takes_the_qualification_first_then_returns_to_the_hit():
    campaign = live_campaign_with_hits(hits=1, candidates=1, qualification_items=2)
    Hit.objects.filter(campaign=campaign).update(external_hit_id="3HQ")
    client = Client()
    arrival = {"assignmentId": "3AQ", "hitId": "3HQ", "workerId": "AQWORKER", "turkSubmitTo": "https://www.mturk.com"}
    response = client.get("/mturk/", arrival)
    assert response["Location"].startswith(reverse("work_qualification", args=[campaign.pk]) + "?next=%2Fmturk%2F")
    page = client.get(response["Location"])
    assert page.status_code == 200 and "X-Frame-Options" not in page
    attempt = QualificationAttempt.objects.get(worker__external_id="AQWORKER")
    roles = dict(QualificationItem.objects.filter(campaign=campaign).values_list("pk", "role"))
    form = {f"q-{i}": ("yes" if roles[p] == "gold_positive" else "no") for i, p in enumerate(attempt.items)}
    back = client.post(response["Location"], form)
    assert back["Location"].startswith("/mturk/?")
    hit_page = client.get(back["Location"])
    assignment = Assignment.objects.get(external_assignment_id="3AQ")
    assert hit_page["Location"] == reverse("work_hit", args=[assignment.pk])
    # another MTurk worker cannot take over this MTurk assignment id
    intruder = client.get("/mturk/", {**arrival, "workerId": "OTHERWORKER"})
    assert intruder.status_code in (403, 302)
    assert Assignment.objects.filter(external_assignment_id="3AQ").get().worker.external_id == "AQWORKER"


def test_local_workers_pages_cannot_be_framed():
    campaign = live_campaign_with_hits(hits=1)
    client, _ = worker_client(campaign)
    assignment = claim(client, campaign)
    response = client.get(reverse("work_hit", args=[assignment.pk]))
    assert response["X-Frame-Options"] == "DENY"
    directives = dict(d.strip().split(" ", 1) for d in response["Content-Security-Policy"].split(";"))
    assert directives["frame-ancestors"] == "'self'" and directives["script-src"] == "'self'"


def test_worker_requests_stay_within_their_query_budget(django_assert_max_num_queries):
    """The HIT-serving latency (bench/hit_serving.py) rests on these budgets; an autosave is most of the traffic.

    Counted: the session row (the test settings keep sessions in the database; production reads them from the
    cache) and the test's own read of the claimed assignment. The user, their role and their Worker come in one
    query (annotator.crowd.auth). A first worker's requests go first, so on PostgreSQL the hot reads are already
    prepared on this connection (a PREPARE is one more statement, once per connection).
    """
    campaign = live_campaign_with_hits(hits=3, candidates=2)
    first, _ = worker_client(campaign)
    first_assignment = claim(first, campaign)
    first_page = first.get(reverse("work_hit", args=[first_assignment.pk])).content.decode()
    first_token = re.search(r'data-token="([0-9a-f]+)"', first_page).group(1)
    post_json(first, reverse("work_answer", args=[first_assignment.pk]), {"item_token": first_token, "choice": "no"})
    client, _ = worker_client(campaign)
    client.get(reverse("work_home"))  # the session row, once
    # session, user, savepoint, worker + campaign, own leases, next HIT, recount, has_room (this claim fills
    # the first HIT), the lease with its event (two inserts on SQLite), release, the test's read; then the
    # page the claim answers with: its stored answers (none) and the HIT's items
    with django_assert_max_num_queries(14):
        assignment = claim(client, campaign)
    with django_assert_max_num_queries(5):  # session, user, assignment, items, stored answers
        html = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    tokens = list(dict.fromkeys(re.findall(r'data-token="([0-9a-f]+)"', html)))
    url = reverse("work_answer", args=[assignment.pk])
    with django_assert_max_num_queries(5):
        assert post_json(client, url, {"item_token": tokens[0], "choice": "yes", "seconds_spent": 4}).status_code == 200
    with django_assert_max_num_queries(4):  # a second save of the same item replaces it
        saved = post_json(
            client,
            url,
            {
                "item_token": tokens[0],
                "choice": "mostly_no",
                "shortcomings": ["wrong_way"],
                "wrong_aspects": ["color"],
                "seconds_spent": 2,
            },
        )
    assert saved.json() == {"saved": True, "complete": True, "missing": None}
    answer = Answer.objects.get(assignment=assignment)
    assert (answer.choice, answer.shortcomings, answer.wrong_aspects, answer.seconds_spent) == (
        "mostly_no",
        ["wrong_way"],
        ["color"],
        4.0,
    )
    batch = [{"item_token": token, "choice": "yes"} for token in tokens]
    # session, user, assignment, every item in one statement (on PostgreSQL a PREPARE before it: the first
    # batch of this size on this connection)
    with django_assert_max_num_queries(5):
        saved = post_json(client, reverse("work_answers", args=[assignment.pk]), {"answers": batch})
    assert saved.json()["saved"] == len(tokens)
    assert Answer.objects.filter(assignment=assignment, choice="yes").count() == len(tokens)


def test_a_deactivated_workers_session_stops_working():
    campaign = live_campaign_with_hits(hits=1, candidates=2)
    client, worker = worker_client(campaign)
    assert client.get(reverse("work_home")).status_code == 200
    worker.user.is_active = False
    worker.user.save(update_fields=["is_active"])
    assert client.get(reverse("work_home")).status_code == 302  # back to the log-in page


# ---- MTurk arrival verification (MTURK_VERIFY_ARRIVALS, GetAssignment through botocore's Stubber) --------

NOT_SUBMITTED = "This operation can be called with a status of: Reviewable,Approved,Rejected (1596835865828)"


@pytest.fixture
def mturk_api(settings, monkeypatch):
    """Verification on; MTurk is a stubbed client: each GetAssignment must be queued, an unqueued call fails."""
    settings.MTURK_VERIFY_ARRIVALS = True
    client = boto3.client(
        "mturk",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        endpoint_url=mturk.SANDBOX_ENDPOINT,
    )
    with Stubber(client) as stubber:
        monkeypatch.setattr(mturk, "mturk_client", lambda **kwargs: client)
        yield stubber
        stubber.assert_no_pending_responses()


def mturk_says_accepted(stubber, assignment_id):
    """MTurk's answer for an accepted, not yet submitted assignment: it exists, its details are not given."""
    stubber.add_client_error(
        "get_assignment",
        service_error_code="RequestError",
        service_message=NOT_SUBMITTED,
        expected_params={"AssignmentId": assignment_id},
    )


def mturk_says_assignment(stubber, assignment_id, *, worker_id, hit_id, status="Submitted"):
    stubber.add_response(
        "get_assignment",
        {
            "Assignment": {
                "AssignmentId": assignment_id,
                "WorkerId": worker_id,
                "HITId": hit_id,
                "AssignmentStatus": status,
            },
            "HIT": {"HITId": hit_id},
        },
        {"AssignmentId": assignment_id},
    )


def mturk_hit(external_hit_id="3HITEXAMPLE", **campaign_kwargs):
    campaign = live_campaign_with_hits(hits=1, candidates=1, qualification_items=0, **campaign_kwargs)
    hit = campaign.hits.get()
    Hit.objects.filter(pk=hit.pk).update(external_hit_id=external_hit_id)
    hit.refresh_from_db()
    return hit


def arrival(assignment_id="3ASSIGN1", worker_id="A2WORKER", hit_id="3HITEXAMPLE"):
    return {
        "assignmentId": assignment_id,
        "hitId": hit_id,
        "workerId": worker_id,
        "turkSubmitTo": "https://workersandbox.mturk.com",
    }


def test_verified_mturk_arrival_works_end_to_end_and_mturk_is_asked_once_per_session(mturk_api):
    """Arrival (one GetAssignment) -> HIT page -> autosave -> submit -> the form posting to turkSubmitTo."""
    hit = mturk_hit()
    client = Client()
    preview = client.get("/mturk/", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "3HITEXAMPLE"})
    assert preview.status_code == 200  # no MTurk call for a preview
    mturk_says_accepted(mturk_api, "3ASSIGN1")  # the only answer queued: a second call would fail (503)
    response = client.get("/mturk/", arrival())
    assignment = Assignment.objects.get(external_assignment_id="3ASSIGN1")
    assert response.status_code == 302 and response["Location"] == reverse("work_hit", args=[assignment.pk])
    assert client.get("/mturk/", arrival())["Location"] == response["Location"]  # a reload: not asked again
    page = client.get(response["Location"])
    assert page.status_code == 200 and "frame-ancestors" in page["Content-Security-Policy"]
    tokens = list(hit_item_tokens(hit=hit))
    saved = post_json(client, reverse("work_answer", args=[assignment.pk]), {"item_token": tokens[0], "choice": "yes"})
    assert saved.status_code == 200 and saved.json()["saved"] is True
    submitted = post_json(
        client,
        reverse("work_submit", args=[assignment.pk]),
        {"answers": [{"item_token": t, "choice": "yes"} for t in tokens]},
    )
    assert submitted.status_code == 200
    done = client.get(submitted.json()["next_url"]).content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in done
    assert 'name="assignmentId" value="3ASSIGN1"' in done
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.SUBMITTED


def test_forged_worker_id_for_a_real_assignment_is_refused_and_creates_nothing(mturk_api):
    mturk_hit()
    mturk_says_assignment(mturk_api, "3ASSIGN1", worker_id="A2WORKER", hit_id="3HITEXAMPLE")
    client = Client()
    response = client.get("/mturk/", arrival(worker_id="AFORGED"))
    assert response.status_code == 403
    assert "MTurk does not confirm this assignment" in response.content.decode()
    assert "frame-ancestors" in response["Content-Security-Policy"]  # shown inside MTurk's frame
    assert not Worker.objects.filter(external_id="AFORGED").exists()
    assert not Assignment.objects.exists()
    assert "mturk_worker_id" not in client.session


@pytest.mark.parametrize("mturk_answer", ["hit_not_ours", "unknown_assignment"])
def test_an_assignment_mturk_does_not_give_for_our_hit_is_refused(mturk_api, mturk_answer):
    """An assignment of another HIT (not ours), or an assignment id MTurk does not know: 403, nothing made."""
    mturk_hit()
    if mturk_answer == "hit_not_ours":
        mturk_says_assignment(mturk_api, "3ASSIGN1", worker_id="A2WORKER", hit_id="3SOMEONEELSESHIT")
    else:
        mturk_api.add_client_error(
            "get_assignment",
            service_error_code="RequestError",
            service_message="Assignment 3ASSIGN1 does not exist. (1373477231604 s)",
        )
    response = Client().get("/mturk/", arrival())
    assert response.status_code == 403
    assert not Worker.objects.filter(external_id="A2WORKER").exists()
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("failure", ["service_fault", "unreachable"])
def test_mturk_failing_gives_a_503_saying_to_try_again_and_a_retry_works(mturk_api, failure):
    def unreachable(**kwargs):
        raise EndpointConnectionError(endpoint_url=mturk.SANDBOX_ENDPOINT)

    mturk_hit()
    client = Client()
    with pytest.MonkeyPatch.context() as patch:
        if failure == "service_fault":
            mturk_api.add_client_error("get_assignment", service_error_code="ServiceFault", http_status_code=500)
        else:
            patch.setattr(mturk_api.client, "get_assignment", unreachable)
        response = client.get("/mturk/", arrival())
    assert response.status_code == 503
    assert "try again" in response.content.decode()
    assert not Worker.objects.exists() and not Assignment.objects.exists()
    mturk_says_accepted(mturk_api, "3ASSIGN1")  # a failure is not remembered: the retry asks MTurk again
    assert client.get("/mturk/", arrival()).status_code == 302


def test_another_real_assignment_id_cannot_open_a_workers_lease(mturk_api):
    """MTurk cannot name the worker of an accepted assignment: the lease stays with its assignment id."""
    mturk_hit(redundancy=2)
    mturk_says_accepted(mturk_api, "3ASSIGNVICTIM")
    victim = Client()
    victim_page = victim.get("/mturk/", arrival(assignment_id="3ASSIGNVICTIM"))
    assert victim_page.status_code == 302
    mturk_says_accepted(mturk_api, "3ASSIGNOTHER")  # someone else's real, accepted assignment
    intruder = Client()
    response = intruder.get("/mturk/", arrival(assignment_id="3ASSIGNOTHER"))
    assert response.status_code == 403
    assert "mturk_worker_id" not in intruder.session
    assert intruder.get(victim_page["Location"]).status_code == 302  # to the log-in page, not the victim's HIT
    assert list(Assignment.objects.values_list("external_assignment_id", flat=True)) == ["3ASSIGNVICTIM"]


def test_an_assignment_already_submitted_on_mturk_opens_only_what_is_here(mturk_api):
    hit = mturk_hit()
    mturk_says_assignment(mturk_api, "3ASSIGN1", worker_id="A2WORKER", hit_id="3HITEXAMPLE", status="Approved")
    response = Client().get("/mturk/", arrival())
    assert response.status_code == 409 and "already submitted on MTurk" in response.content.decode()
    assert not Assignment.objects.exists()
    # the worker's own record of it (made at their first arrival) is shown again, read-only once submitted
    mturk_says_accepted(mturk_api, "3ASSIGN1")
    first = Client()
    assignment_url = first.get("/mturk/", arrival())["Location"]
    mturk_says_assignment(mturk_api, "3ASSIGN1", worker_id="A2WORKER", hit_id=hit.external_hit_id)
    assert Client().get("/mturk/", arrival())["Location"] == assignment_url
