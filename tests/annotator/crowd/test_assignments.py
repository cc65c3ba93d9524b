"""Leases: claim, autosave, submit, return, expiry."""

from unittest import mock

import pytest
from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.crowd.services.answers import answer_save, assignment_submit
from annotator.crowd.services.assignments import (
    assignment_claim,
    assignment_return,
    assignments_expire,
)
from annotator.models import (
    Answer,
    Assignment,
    AssignmentEvent,
    AssignmentStatus,
    CampaignStatus,
    QualificationAttempt,
    WorkerStanding,
)
from tests.factories import WorkerFactory, live_campaign_with_hits

pytestmark = pytest.mark.django_db


def qualified(campaign, worker=None):
    worker = worker or WorkerFactory()
    QualificationAttempt.objects.create(
        worker=worker, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
    )
    return worker


def full_answers(assignment, choice="yes"):
    return [
        {"item_token": token, "choice": choice, "seconds_spent": 3} for token in hit_item_tokens(hit=assignment.hit)
    ]


def test_claim_reserves_a_lease_with_expiry_and_event():
    campaign = live_campaign_with_hits(hits=2, lease_minutes=15)
    worker = qualified(campaign)
    before = timezone.now()
    assignment = assignment_claim(campaign=campaign, worker=worker)
    assert assignment.status == AssignmentStatus.RESERVED
    assert assignment.hit.campaign_id == campaign.pk
    minutes = (assignment.expires_at - before).total_seconds() / 60
    assert 14.9 < minutes < 15.1
    assert list(assignment.events.values_list("from_status", "to_status")) == [("", "reserved")]


def test_the_lease_and_its_events_are_the_rows_the_orm_writes():
    """On PostgreSQL the lease and each transition are written with their event in one SQL statement: the
    rows hold what the ORM's create and save would have written, and the instance matches its row."""
    campaign = live_campaign_with_hits(hits=1)
    worker = qualified(campaign)
    before = timezone.now()
    assignment = assignment_claim(campaign=campaign, worker=worker)
    stored = Assignment.objects.get(pk=assignment.pk)
    for field in Assignment._meta.concrete_fields:
        assert getattr(stored, field.attname) == getattr(assignment, field.attname), field.name
    assert stored.flags == [] and stored.reserved_at >= before and stored.submitted_at is None
    assert assignment._state.adding is False
    event = stored.events.get()
    assert (event.reason, event.actor_id, event.created_at >= before) == ("claimed", None, True)
    assignment_submit(assignment=assignment, worker=worker, answers=full_answers(assignment))
    stored.refresh_from_db()
    assert stored.status == AssignmentStatus.SUBMITTED and stored.submitted_at >= before
    assert list(stored.events.values_list("from_status", "to_status", "reason")) == [
        ("", "reserved", "claimed"),
        ("reserved", "submitted", "submitted"),
    ]


def test_claim_twice_returns_the_same_lease():
    campaign = live_campaign_with_hits(hits=3)
    worker = qualified(campaign)
    first = assignment_claim(campaign=campaign, worker=worker)
    second = assignment_claim(campaign=campaign, worker=worker)
    assert first.pk == second.pk
    assert Assignment.objects.filter(worker=worker).count() == 1


def test_claim_never_exceeds_redundancy_nor_gives_a_hit_twice():
    campaign = live_campaign_with_hits(hits=1, redundancy=2)
    workers = [qualified(campaign) for _ in range(3)]
    a1 = assignment_claim(campaign=campaign, worker=workers[0])
    a2 = assignment_claim(campaign=campaign, worker=workers[1])
    assert a1.hit_id == a2.hit_id
    with pytest.raises(ApplicationError) as error:
        assignment_claim(campaign=campaign, worker=workers[2])
    assert error.value.status == 404
    # the first worker submits and asks for more: the only HIT is already theirs
    assignment_submit(assignment=a1, worker=workers[0], answers=full_answers(a1))
    with pytest.raises(ApplicationError):
        assignment_claim(campaign=campaign, worker=workers[0])


def test_claim_respects_a_raised_assignments_required():
    campaign = live_campaign_with_hits(hits=1, redundancy=1)
    hit = campaign.hits.get()
    hit.assignments_required = 2  # raised by quality control for a low-confidence pair
    hit.save()
    a = assignment_claim(campaign=campaign, worker=qualified(campaign))
    b = assignment_claim(campaign=campaign, worker=qualified(campaign))
    assert a.hit_id == b.hit_id == hit.pk


def test_claim_refuses_unqualified_blocked_and_not_live():
    campaign = live_campaign_with_hits(hits=2)
    with pytest.raises(ApplicationError, match="qualification"):
        assignment_claim(campaign=campaign, worker=WorkerFactory())
    blocked = qualified(campaign, WorkerFactory(blocked=True))
    with pytest.raises(ApplicationError) as error:
        assignment_claim(campaign=campaign, worker=blocked)
    assert error.value.status == 403
    soft = qualified(campaign, WorkerFactory())
    WorkerStanding.objects.create(worker=soft, requester=campaign.owner, soft_blocked=True)
    with pytest.raises(ApplicationError, match="paused"):
        assignment_claim(campaign=campaign, worker=soft)
    campaign.status = CampaignStatus.PAUSED
    campaign.save()
    with pytest.raises(ApplicationError, match="not taking work"):
        assignment_claim(campaign=campaign, worker=qualified(campaign))
    assert Assignment.objects.count() == 0


def test_claim_respects_max_hits_per_worker():
    campaign = live_campaign_with_hits(hits=3, max_hits_per_worker=1)
    worker = qualified(campaign)
    first = assignment_claim(campaign=campaign, worker=worker)
    assignment_submit(assignment=first, worker=worker, answers=full_answers(first))
    with pytest.raises(ApplicationError, match="most HITs"):
        assignment_claim(campaign=campaign, worker=worker)


def test_autosave_keeps_partial_answers_and_drops_stale_followups():
    campaign = live_campaign_with_hits(hits=1)
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    answer_save(
        assignment=assignment,
        worker=worker,
        item_token=token,
        choice="mostly_no",
        shortcomings=["wrong_way"],
        wrong_aspects=["color"],
        seconds_spent=4.5,
    )
    saved = Answer.objects.get(assignment=assignment)
    assert (saved.choice, saved.shortcomings, saved.wrong_aspects, saved.seconds_spent) == (
        "mostly_no",
        ["wrong_way"],
        ["color"],
        4.5,
    )
    # changing to 100% YES drops the reasons; a stale tab cannot lower the time spent
    answer_save(
        assignment=assignment,
        worker=worker,
        item_token=token,
        choice="yes",
        shortcomings=["wrong_way"],
        wrong_aspects=["color"],
        seconds_spent=2,
    )
    saved.refresh_from_db()
    assert (saved.choice, saved.shortcomings, saved.wrong_aspects, saved.seconds_spent) == ("yes", [], [], 4.5)
    assert Answer.objects.filter(assignment=assignment).count() == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"choice": "maybe"}, "Unknown answer"),
        ({"choice": "mostly_no", "shortcomings": ["ugly"]}, "Unknown reason"),
        ({"choice": "mostly_no", "shortcomings": ["wrong_way"], "wrong_aspects": ["smell"]}, "Unknown aspect"),
        ({"choice": "yes", "comment": "x" * 2001}, "at most"),
        ({"choice": "yes", "seconds_spent": -1}, "non-negative"),
        ({"item_token": "not-a-token", "choice": "yes"}, "not part of this HIT"),
    ],
)
def test_autosave_refuses_bad_input_with_a_400(kwargs, message):
    campaign = live_campaign_with_hits(hits=1)
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    kwargs.setdefault("item_token", next(iter(hit_item_tokens(hit=assignment.hit))))
    with pytest.raises(ApplicationError, match=message) as error:
        answer_save(assignment=assignment, worker=worker, **kwargs)
    assert error.value.status == 400


def test_autosave_only_by_the_owner_and_only_while_reserved():
    campaign = live_campaign_with_hits(hits=2)
    worker, other = qualified(campaign), qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    with pytest.raises(ApplicationError) as error:
        answer_save(assignment=assignment, worker=other, item_token=token, choice="yes")
    assert error.value.status == 404
    later = timezone.now() + timezone.timedelta(minutes=campaign.lease_minutes + 1)
    with pytest.raises(ApplicationError, match="expired") as error:
        answer_save(assignment=assignment, worker=worker, item_token=token, choice="yes", now=later)
    assert error.value.status == 409
    assert not Answer.objects.exists()


def test_submit_requires_every_item_and_every_followup():
    campaign = live_campaign_with_hits(hits=1, candidates=2)
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    answers = full_answers(assignment)
    answers[0].update(choice="partially_yes")  # needs a reason
    answers[1].update(choice="mostly_no", shortcomings=["wrong_way"])  # needs aspects
    del answers[3]  # never answered
    with pytest.raises(ApplicationError) as error:
        assignment_submit(assignment=assignment, worker=worker, answers=answers)
    missing = error.value.extra["missing"]
    assert [m["item"] for m in missing] == [1, 2, 4]
    assert "reason" in missing[0]["missing"] and "wrong way" in missing[1]["missing"]
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.RESERVED


def test_followups_not_required_when_the_campaign_switches_them_off():
    campaign = live_campaign_with_hits(hits=1, rationale_followups=False)
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    submitted = assignment_submit(assignment=assignment, worker=worker, answers=full_answers(assignment, "mostly_no"))
    assert submitted.status == AssignmentStatus.SUBMITTED
    assert [a.shortcomings for a in Answer.objects.all()] == [[]] * 4


def test_similarity_campaign_needs_a_score_per_item():
    campaign = live_campaign_with_hits(hits=1, scale="similarity")
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    tokens = list(hit_item_tokens(hit=assignment.hit))
    with pytest.raises(ApplicationError, match="0 to 5"):
        answer_save(assignment=assignment, worker=worker, item_token=tokens[0], score=7)
    answers = [{"item_token": t, "score": 2.87} for t in tokens]
    assignment_submit(assignment=assignment, worker=worker, answers=answers)
    assert set(Answer.objects.values_list("score", flat=True)) == {2.87}


def test_double_submit_stores_one_submission_and_queues_scoring_once():
    campaign = live_campaign_with_hits(hits=1)
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    answers = full_answers(assignment)
    with mock.patch("annotator.crowd.services.answers.enqueue_on_commit") as enqueue:
        first = assignment_submit(assignment=assignment, worker=worker, answers=answers)
        second = assignment_submit(assignment=assignment, worker=worker, answers=answers)
    assert first.pk == second.pk and second.status == AssignmentStatus.SUBMITTED
    assert enqueue.call_count == 1
    assert enqueue.call_args.args == ("workers.tasks.quality.assignment_score_task", assignment.pk)
    assert AssignmentEvent.objects.filter(assignment=assignment, to_status="submitted").count() == 1
    assert Answer.objects.filter(assignment=assignment).count() == len(answers)


def test_submit_queues_gold_scoring_after_commit(django_capture_on_commit_callbacks):
    """The scoring task is sent only when the submit's transaction commits, and it scores the gold items."""
    campaign = live_campaign_with_hits(hits=1)
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assignment_submit(assignment=assignment, worker=worker, answers=full_answers(assignment))
    assert len(callbacks) == 1
    assignment.refresh_from_db()
    assert assignment.scored_at is not None and assignment.gold_total == 2


def test_return_frees_the_hit_for_another_worker_and_keeps_history():
    campaign = live_campaign_with_hits(hits=1)
    worker, other = qualified(campaign), qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    assignment_return(assignment=assignment, worker=worker)
    assignment_return(assignment=assignment, worker=worker)  # idempotent
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.RETURNED
    again = assignment_claim(campaign=campaign, worker=other)
    assert again.hit_id == assignment.hit_id
    with pytest.raises(ApplicationError):  # the same HIT never twice to one worker
        assignment_claim(campaign=campaign, worker=worker)
    assert [e.to_status for e in assignment.events.all()] == ["reserved", "returned"]


def test_expired_lease_is_kept_and_the_hit_reoffered():
    campaign = live_campaign_with_hits(hits=1, lease_minutes=10)
    worker, other = qualified(campaign), qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    answer_save(assignment=assignment, worker=worker, item_token=token, choice="yes")
    with pytest.raises(ApplicationError):
        assignment_claim(campaign=campaign, worker=other)
    assert assignments_expire(now=timezone.now() + timezone.timedelta(minutes=5)) == 0
    later = timezone.now() + timezone.timedelta(minutes=11)
    assert assignments_expire(now=later) == 1
    assert assignments_expire(now=later) == 0  # idempotent
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.EXPIRED
    assert Answer.objects.filter(assignment=assignment).count() == 1  # kept, not deleted
    assert [(e.from_status, e.to_status) for e in assignment.events.all()] == [
        ("", "reserved"),
        ("reserved", "expired"),
    ]
    reoffered = assignment_claim(campaign=campaign, worker=other, now=later)
    assert reoffered.hit_id == assignment.hit_id
    with pytest.raises(ApplicationError, match="expired"):
        assignment_submit(assignment=assignment, worker=worker, answers=full_answers(assignment))


def test_expire_task_runs_the_service():
    from workers.tasks.leases import assignments_expire_task

    campaign = live_campaign_with_hits(hits=1, lease_minutes=1)
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker, now=timezone.now() - timezone.timedelta(minutes=5))
    assert assignments_expire_task.delay().get() == 1
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.EXPIRED


def test_submit_writes_only_what_changed_and_accepts_a_repeated_item():
    """The final answers of a submit: unchanged autosaved answers stay, new and changed ones are written."""
    campaign = live_campaign_with_hits(hits=1, candidates=2)
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    tokens = list(hit_item_tokens(hit=assignment.hit))
    answer_save(assignment=assignment, worker=worker, item_token=tokens[0], choice="yes", seconds_spent=9)
    first = Answer.objects.get()
    answers = [{"item_token": t, "choice": "no", "seconds_spent": 1} for t in tokens]
    answers[0] = {"item_token": tokens[0], "choice": "yes", "seconds_spent": 2}  # unchanged (time cannot drop)
    answers.append({"item_token": tokens[3], "choice": "mostly_no", "shortcomings": ["grammar"]})  # twice
    assignment_submit(assignment=assignment, worker=worker, answers=answers)
    stored = {a.item_id: a for a in Answer.objects.all()}
    ids = list(hit_item_tokens(hit=assignment.hit).values())
    assert stored[ids[0]].updated_at == first.updated_at and stored[ids[0]].seconds_spent == 9
    assert [stored[i].choice for i in ids] == ["yes", "no", "no", "mostly_no"]
    assert stored[ids[3]].shortcomings == ["grammar"]


def has_room(hit):
    hit.refresh_from_db(fields=["has_room"])
    return hit.has_room


def test_a_full_hit_leaves_the_claim_scan_and_comes_back_when_a_slot_frees():
    from annotator.quality.services.decisions import assignment_reject

    campaign = live_campaign_with_hits(hits=2, redundancy=1, lease_minutes=10)
    first, second = campaign.hits.order_by("index")
    a = assignment_claim(campaign=campaign, worker=qualified(campaign))
    b = assignment_claim(campaign=campaign, worker=qualified(campaign))
    assert (a.hit_id, b.hit_id) == (first.pk, second.pk)
    assert not has_room(first) and not has_room(second)
    with pytest.raises(ApplicationError):
        assignment_claim(campaign=campaign, worker=qualified(campaign))

    assignment_return(assignment=a, worker=a.worker)  # a return frees the slot at once
    assert has_room(first)
    c = assignment_claim(campaign=campaign, worker=qualified(campaign))
    assert c.hit_id == first.pk and not has_room(first)

    later = timezone.now() + timezone.timedelta(minutes=11)  # so does an expired lease
    assert assignments_expire(now=later) == 2
    assert has_room(first) and has_room(second)
    d = assignment_claim(campaign=campaign, worker=qualified(campaign), now=later)
    assert d.hit_id == first.pk
    assignment_submit(assignment=d, worker=d.worker, answers=full_answers(d), now=later)
    assert not has_room(first)  # a submitted assignment still holds its slot
    assignment_reject(assignment=d, reason="wrong on both gold items")  # and a rejection frees it
    assert has_room(first)


def test_a_stale_has_room_costs_one_skip_not_a_slot():
    campaign = live_campaign_with_hits(hits=2, redundancy=1)
    first, second = campaign.hits.order_by("index")
    assignment_claim(campaign=campaign, worker=qualified(campaign))
    type(first).objects.filter(pk=first.pk).update(has_room=True)  # as if a free raced a claim
    b = assignment_claim(campaign=campaign, worker=qualified(campaign))
    assert b.hit_id == second.pk  # the claim still counts: the full HIT is skipped
    assert first.assignments.count() == 1
