"""Tolerated gold misses, trust and the other workers' answers at auto-approval time."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.analysis.trust import is_trusted, soft_block_reason
from annotator.models import (
    FLAG_GOLD_FAILED,
    FLAG_PEER_DISAGREEMENT,
    AssignmentStatus,
    GoldFailAction,
    QualificationAttempt,
    WorkerStanding,
)
from annotator.quality.services.peers import assignment_peer_agreement, assignments_auto_approve_due
from annotator.quality.services.scoring import assignment_score
from annotator.quality.services.trust import trust_policy, worker_trust
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import WorkerFactory

pytestmark = pytest.mark.django_db
LATER = timedelta(days=30)


def _peers(hit, n=2, candidate="no"):
    return [assignment_score(assignment_id=submit(hit, candidate=candidate).pk) for _ in range(n)]


def test_without_tolerance_any_gold_miss_goes_to_review():
    hit = hit_with_gold(candidates=8, tolerated_gold_misses=0)
    assert assignment_score(assignment_id=submit(hit, candidate="no", gold_positive="mostly_no").pk).flags == [
        FLAG_GOLD_FAILED
    ]


def test_tolerated_miss_of_a_trusted_worker_is_forgiven_at_once():
    """A worker with a clean gold record at work (12/12 in earlier HITs): one slip in a HIT does not go to
    review."""
    hit = hit_with_gold(candidates=8, tolerated_gold_misses=1)
    worker = WorkerFactory()
    WorkerStanding.objects.create(worker=worker, requester=hit.campaign.owner, gold_correct=12, gold_total=12)
    assignment = assignment_score(
        assignment_id=submit(hit, worker=worker, candidate="no", gold_positive="mostly_no").pk
    )
    assert assignment.flags == [] and assignment.auto_approve_at is not None


def test_a_clean_qualification_alone_does_not_make_a_worker_trusted():
    """A test passed 6/6 says how the worker answers a test, not how they work; a failed test still counts
    against them (the soft block reads it)."""
    hit = hit_with_gold(candidates=8, tolerated_gold_misses=1)
    owner, policy = hit.campaign.owner, trust_policy()
    clean, failed = WorkerFactory(), WorkerFactory()
    items = [1, 2, 3, 4, 5, 6]
    QualificationAttempt.objects.create(worker=clean, campaign=hit.campaign, items=items, score=1.0, passed=True)
    QualificationAttempt.objects.create(worker=failed, campaign=hit.campaign, items=items, score=0.0, passed=False)
    assert not is_trusted(worker_trust(worker=clean, requester_id=owner.pk), policy)
    assert soft_block_reason(worker_trust(worker=failed, requester_id=owner.pk), policy)
    WorkerStanding.objects.create(worker=clean, requester=owner, gold_correct=12, gold_total=12)
    assert is_trusted(worker_trust(worker=clean, requester_id=owner.pk), policy)


def test_tolerated_miss_vouched_for_by_peers_is_approved():
    hit = hit_with_gold(candidates=16, tolerated_gold_misses=1, redundancy=3)
    _peers(hit)
    assignment = assignment_score(assignment_id=submit(hit, candidate="no", gold_positive="mostly_no").pk)
    assert assignment.flags == []  # unknown worker: waits for the peers
    assert assignment_peer_agreement(assignment=assignment) == (16, 16)
    assignments_auto_approve_due(now=timezone.now() + LATER)
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.APPROVED


def test_tolerated_miss_contradicted_by_peers_goes_to_review():
    hit = hit_with_gold(candidates=16, tolerated_gold_misses=1, redundancy=3)
    _peers(hit, candidate="no")
    assignment = assignment_score(assignment_id=submit(hit, candidate="yes", gold_positive="mostly_no").pk)
    assignments_auto_approve_due(now=timezone.now() + LATER)
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert set(assignment.flags) == {FLAG_PEER_DISAGREEMENT, FLAG_GOLD_FAILED}


def test_tolerated_miss_without_peers_goes_to_review_and_auto_reject_applies():
    hit = hit_with_gold(candidates=8, tolerated_gold_misses=1, gold_fail_action=GoldFailAction.REJECT)
    assignment = assignment_score(assignment_id=submit(hit, candidate="no", gold_positive="mostly_no").pk)
    assignments_auto_approve_due(now=timezone.now() + LATER)
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.REJECTED and FLAG_GOLD_FAILED in assignment.flags


def test_all_gold_right_but_disagreeing_with_everyone_goes_to_review():
    """A lucky guesser passes both gold items, but its candidate answers contradict the peers.

    Four careful peers on sixteen pairs: the crowd is sure of every pair without the guesser's answers,
    which is enough evidence to judge the guesser's accuracy (QUALITY_PEER_MIN_ITEMS)."""
    hit = hit_with_gold(candidates=16, redundancy=5)
    peers = _peers(hit, n=4, candidate="no")
    lucky = assignment_score(assignment_id=submit(hit, candidate="yes").pk)
    assert lucky.flags == []
    assert assignments_auto_approve_due(now=timezone.now() + LATER) == 4
    lucky.refresh_from_db()
    assert lucky.flags == [FLAG_PEER_DISAGREEMENT] and lucky.status == AssignmentStatus.SUBMITTED
    assert all(p.__class__.objects.get(pk=p.pk).status == AssignmentStatus.APPROVED for p in peers)


def test_approval_waits_for_peers_while_the_hit_collects_answers():
    """The first of three workers is due before the others answered: approval waits, then goes through
    once the two others agree with it on enough pairs (sixteen) to judge it."""
    hit = hit_with_gold(candidates=16, redundancy=3, auto_approve_hours=1)
    first = assignment_score(assignment_id=submit(hit, candidate="no").pk)
    soon = timezone.now() + timedelta(hours=2)
    assert assignments_auto_approve_due(now=soon) == 0
    first.refresh_from_db()
    assert first.status == AssignmentStatus.SUBMITTED and first.flags == [] and first.auto_approve_at > soon
    _peers(hit, candidate="no")
    assert assignments_auto_approve_due(now=timezone.now() + timedelta(hours=5)) == 3
    first.refresh_from_db()
    assert first.status == AssignmentStatus.APPROVED


def test_approval_does_not_wait_forever():
    hit = hit_with_gold(candidates=8, redundancy=3, auto_approve_hours=1)
    lone = assignment_score(assignment_id=submit(hit, candidate="no").pk)
    assert assignments_auto_approve_due(now=timezone.now() + timedelta(hours=1 + 72 + 1)) == 1
    lone.refresh_from_db()
    assert lone.status == AssignmentStatus.APPROVED


def test_too_little_evidence_does_not_clear_a_worker_found_careless_before():
    """A guesser flagged on one HIT (and rejected) then takes a short HIT nobody else answered: with too little
    evidence to judge it, their record on the campaign sends it to review instead of paying it."""
    from annotator.quality.services.decisions import assignment_reject

    hit = hit_with_gold(candidates=16, redundancy=5)
    _peers(hit, n=4, candidate="no")
    lucky = assignment_score(assignment_id=submit(hit, candidate="yes").pk)
    assignments_auto_approve_due(now=timezone.now() + LATER)
    lucky.refresh_from_db()
    assert lucky.flags == [FLAG_PEER_DISAGREEMENT]
    assignment_reject(assignment=lucky, reason="Disagrees with everyone.")

    short = hit_with_gold(campaign=hit.campaign, candidates=2)
    again = assignment_score(assignment_id=submit(short, worker=lucky.worker, candidate="yes").pk)
    stranger = assignment_score(assignment_id=submit(short, candidate="yes").pk)
    assignments_auto_approve_due(now=timezone.now() + LATER * 2)
    again.refresh_from_db()
    stranger.refresh_from_db()
    assert again.flags == [FLAG_PEER_DISAGREEMENT] and again.status == AssignmentStatus.SUBMITTED
    assert stranger.status == AssignmentStatus.APPROVED  # no record against them: too little evidence is no flag


def test_a_tolerated_miss_is_weighed_with_the_workers_gold_and_answers_together():
    """Seven candidates are too few comparisons to vouch for a gold miss on the candidates alone; with the
    HIT's two gold answers counted too (one right, one missed) the worker who agrees with both peers on every
    pair is excused, and one who contradicts them on most pairs is not."""
    hit = hit_with_gold(candidates=7, tolerated_gold_misses=1, redundancy=4)
    _peers(hit, n=2, candidate="no")
    careful = assignment_score(assignment_id=submit(hit, candidate="no", gold_positive="mostly_no").pk)
    guesser = assignment_score(assignment_id=submit(hit, candidate="yes", gold_positive="mostly_no").pk)
    assignments_auto_approve_due(now=timezone.now() + LATER)
    careful.refresh_from_db()
    guesser.refresh_from_db()
    assert careful.status == AssignmentStatus.APPROVED
    assert FLAG_GOLD_FAILED in guesser.flags and guesser.status == AssignmentStatus.SUBMITTED


def test_strong_evidence_on_fewer_comparisons_than_the_minimum_still_flags_a_guesser():
    """Six pairs are fewer comparisons than QUALITY_PEER_MIN_ITEMS, but four careful peers agree on each and the
    guesser contradicts them on all six: P(accuracy < 0.7) is past QUALITY_POSTERIOR_HIT_LEVEL, so the guesser
    is flagged instead of being paid for want of a longer HIT; a worker who agrees with the peers is approved."""
    hit = hit_with_gold(candidates=6, redundancy=6)
    _peers(hit, n=4, candidate="no")
    lucky = assignment_score(assignment_id=submit(hit, candidate="yes").pk)
    careful = assignment_score(assignment_id=submit(hit, candidate="no").pk)
    assignments_auto_approve_due(now=timezone.now() + LATER)
    lucky.refresh_from_db()
    careful.refresh_from_db()
    assert lucky.flags == [FLAG_PEER_DISAGREEMENT] and lucky.status == AssignmentStatus.SUBMITTED
    assert careful.status == AssignmentStatus.APPROVED
