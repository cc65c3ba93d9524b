"""Gold scoring and the decision policy (annotator/quality/services/scoring.py, decisions.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.models import (
    FLAG_GOLD_FAILED,
    FLAG_SAME_ANSWER,
    FLAG_TOO_FAST,
    AssignmentEvent,
    AssignmentStatus,
    GoldFailAction,
    ItemRole,
    Scale,
    Worker,
)
from annotator.quality.services.peers import assignments_auto_approve_due
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("gold_positive", "gold_negative", "strict", "correct"),
    [
        ("yes", "no", False, 2),
        ("partially_yes", "mostly_no", False, 2),  # lenient: the middle answers count
        ("partially_yes", "mostly_no", True, 0),  # strict: extremes only
        ("mostly_no", "partially_yes", False, 0),
        ("yes", "mostly_no", True, 1),
    ],
)
def test_four_choice_gold_rules(gold_positive, gold_negative, strict, correct):
    """Gold positive right with yes/partially_yes, negative with no/mostly_no; strict accepts extremes only."""
    hit = hit_with_gold(strict_gold=strict)
    assignment = assignment_score(
        assignment_id=submit(hit, candidate="yes", gold_positive=gold_positive, gold_negative=gold_negative).pk
    )
    assert (assignment.gold_correct, assignment.gold_total) == (correct, 2)
    assert (FLAG_GOLD_FAILED in assignment.flags) == (correct < 2)


@pytest.mark.parametrize(("positive", "negative", "correct"), [(3.0, 2.9, 2), (2.5, 1.0, 1), (4.0, 3.5, 1)])
def test_similarity_gold_uses_threshold(positive, negative, correct):
    """Similarity campaigns: gold positive right at >= threshold, negative right below it."""
    hit = hit_with_gold(scale=Scale.SIMILARITY, similarity_gold_threshold=3.0)
    scores = {ItemRole.CANDIDATE: 2.0, ItemRole.GOLD_POSITIVE: positive, ItemRole.GOLD_NEGATIVE: negative}
    assignment = assignment_score(assignment_id=submit(hit, score=scores).pk)
    assert assignment.gold_correct == correct


def test_scoring_twice_changes_nothing():
    """Idempotent: the second run leaves the assignment, the worker's counters and the history as they were."""
    hit = hit_with_gold()
    assignment = submit(hit, candidate="no", gold_negative="yes")
    first = assignment_score(assignment_id=assignment.pk)
    worker = Worker.objects.get(pk=assignment.worker_id)
    events = AssignmentEvent.objects.count()
    second = assignment_score(assignment_id=assignment.pk)
    worker.refresh_from_db()
    assert (worker.gold_correct, worker.gold_total) == (1, 2)
    assert second.scored_at == first.scored_at
    assert second.flags == first.flags == [FLAG_GOLD_FAILED]
    assert AssignmentEvent.objects.count() == events


def test_all_gold_right_schedules_auto_approval_then_beat_approves():
    """All gold right: auto_approve_at = now + auto_approve_hours; the beat approves once it is due."""
    hit = hit_with_gold(auto_approve_hours=24)
    assignment = assignment_score(assignment_id=submit(hit, candidate="partially_yes").pk)
    assert assignment.status == AssignmentStatus.SUBMITTED and assignment.flags == []
    assert timedelta(hours=23.9) < assignment.auto_approve_at - timezone.now() <= timedelta(hours=24)
    assert assignments_auto_approve_due() == 0  # not due yet
    assert assignments_auto_approve_due(now=timezone.now() + timedelta(hours=25)) == 1
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.APPROVED
    assert assignment.events.last().reason.startswith("Automatic")


def test_zero_delay_approves_at_once():
    hit = hit_with_gold(auto_approve_hours=0)
    assignment = assignment_score(assignment_id=submit(hit, candidate="mostly_no").pk)
    assert assignment.status == AssignmentStatus.APPROVED


def test_gold_wrong_goes_to_review_by_default():
    """A wrong gold answer sends the assignment to review: flagged, no auto-approval, still submitted."""
    hit = hit_with_gold()
    assignment = assignment_score(assignment_id=submit(hit, gold_positive="no").pk)
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert assignment.flags == [FLAG_GOLD_FAILED] and assignment.auto_approve_at is None
    assert assignments_auto_approve_due(now=timezone.now() + timedelta(days=30)) == 0


def test_gold_wrong_auto_rejects_when_chosen():
    hit = hit_with_gold(gold_fail_action=GoldFailAction.REJECT)
    assignment = assignment_score(assignment_id=submit(hit, gold_positive="no").pk)
    assert assignment.status == AssignmentStatus.REJECTED
    event = assignment.events.get(to_status=AssignmentStatus.REJECTED)
    assert event.actor is None and "check questions" in event.reason


def test_too_fast_goes_to_review():
    hit = hit_with_gold(min_seconds_per_item=2.0)
    assignment = assignment_score(assignment_id=submit(hit, candidate="no", seconds=0.4).pk)
    assert assignment.flags == [FLAG_TOO_FAST] and assignment.status == AssignmentStatus.SUBMITTED


def test_same_answer_throughout_goes_to_review():
    """Always-yes fails the gold negative and is also flagged for answering the same throughout."""
    hit = hit_with_gold()
    assignment = assignment_score(assignment_id=submit(hit, candidate="yes", gold_negative="yes").pk)
    assert set(assignment.flags) == {FLAG_GOLD_FAILED, FLAG_SAME_ANSWER}


def test_reserved_assignment_is_not_scored():
    hit = hit_with_gold()
    assignment = submit(hit)
    assignment.status = AssignmentStatus.RESERVED
    assignment.submitted_at = None
    assignment.save()
    assert assignment_score(assignment_id=assignment.pk) is None
    assignment.refresh_from_db()
    assert assignment.scored_at is None


def test_a_gold_item_the_crowd_contradicts_stops_counting():
    """Five careful workers all call the gold negative a match: it is disputed, and the sixth worker who
    agrees with them is not failed for it (the gold item is more likely wrong than six workers)."""
    from annotator.quality.selectors.gold import gold_pairs_disputed
    from tests.factories import HitFactory, HitItemFactory

    first = hit_with_gold(redundancy=9)
    negative = first.items.get(role=ItemRole.GOLD_NEGATIVE)
    scored = [
        assignment_score(assignment_id=submit(first, candidate="no", gold_negative="partially_yes").pk)
        for _ in range(5)
    ]
    assert all(a.flags == [FLAG_GOLD_FAILED] for a in scored)
    assert gold_pairs_disputed(campaign=first.campaign) == {negative.pair_id: (5, 5)}
    second = HitFactory(campaign=first.campaign, assignments_required=1)
    for item in first.items.all():
        HitItemFactory(hit=second, position=item.position, pair=item.pair, role=item.role)
    sixth = assignment_score(assignment_id=submit(second, candidate="no", gold_negative="partially_yes").pk)
    assert (sixth.gold_correct, sixth.gold_total) == (1, 1) and sixth.flags == []
