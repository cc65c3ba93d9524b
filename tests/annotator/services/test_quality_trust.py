"""Worker trust service: automatic soft block, requester block/unblock (annotator/services/trust.py)."""

import pytest

from annotator.errors import ApplicationError
from annotator.models import FLAG_LOW_TRUST, AssignmentStatus, Role, TrustAction
from annotator.services.quality.scoring import assignment_score
from annotator.services.quality.trust import worker_block, worker_trust, worker_trust_refresh, worker_unblock
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import WorkerFactory, user_with_role

pytestmark = pytest.mark.django_db


def test_soft_block_after_enough_guessing_and_pending_work_goes_to_review():
    """A worker who misses half the gold over three HITs is soft-blocked; work awaiting approval is flagged."""
    worker = WorkerFactory()
    scored = []
    for candidate in ("yes", "no", "mostly_no"):
        hit = hit_with_gold()
        scored.append(
            assignment_score(assignment_id=submit(hit, worker=worker, candidate=candidate, gold_negative="yes").pk)
        )
    worker.refresh_from_db()
    assert (worker.gold_correct, worker.gold_total) == (3, 6)
    assert worker.soft_blocked and not worker.blocked
    event = worker.trust_events.get()
    assert event.action == TrustAction.SOFT_BLOCK and "3/6" in event.reason


def test_no_soft_block_on_too_little_evidence():
    worker = WorkerFactory()
    assignment_score(assignment_id=submit(hit_with_gold(), worker=worker, candidate="no", gold_negative="yes").pk)
    worker.refresh_from_db()
    assert not worker.soft_blocked  # 1 of 2: bad luck or guessing, too early to say


def test_soft_block_flags_work_waiting_for_auto_approval(django_capture_on_commit_callbacks):
    worker = WorkerFactory()
    good = assignment_score(assignment_id=submit(hit_with_gold(), worker=worker, candidate="no").pk)
    assert good.flags == [] and good.auto_approve_at is not None
    with django_capture_on_commit_callbacks(execute=True):  # the flagging runs once the block commits
        for _ in range(4):  # 6 of 10 gold right: P(guessing) = 0.98
            assignment_score(
                assignment_id=submit(hit_with_gold(), worker=worker, candidate="no", gold_positive="mostly_no").pk
            )
    good.refresh_from_db()
    assert good.flags == [FLAG_LOW_TRUST] and good.auto_approve_at is None
    assert good.status == AssignmentStatus.SUBMITTED


def test_requester_block_and_unblock_are_kept_with_reasons():
    requester = user_with_role(Role.REQUESTER)
    worker = WorkerFactory()
    with pytest.raises(ApplicationError):
        worker_block(worker=worker, actor=requester, reason="")
    worker = worker_block(worker=worker, actor=requester, reason="copies answers")
    assert worker.blocked and worker.blocked_reason == "copies answers"
    worker = worker_unblock(worker=worker, actor=requester, reason="explained on the forum")
    assert not worker.blocked
    history = [(e.action, e.actor, e.reason) for e in worker.trust_events.all()]
    assert history == [
        (TrustAction.BLOCK, requester, "copies answers"),
        (TrustAction.UNBLOCK, requester, "explained on the forum"),
    ]


def test_unblock_wins_until_fresh_evidence():
    """After a requester lifts a soft block, the rule waits for new gold answers before blocking again."""
    worker = WorkerFactory(gold_correct=3, gold_total=8)
    worker = worker_trust_refresh(worker_id=worker.pk)
    assert worker.soft_blocked
    worker_unblock(worker=worker, actor=user_with_role(Role.REQUESTER), reason="known good worker")
    assert not worker_trust_refresh(worker_id=worker.pk).soft_blocked


def test_trust_counts_approval_and_hits():
    worker = WorkerFactory()
    hit = hit_with_gold()
    a = submit(hit, worker=worker)
    a.status = AssignmentStatus.APPROVED
    a.save()
    trust = worker_trust(worker=worker)
    assert (trust.approved, trust.rejected, trust.hits_done, trust.approval_rate) == (1, 0, 1, 1.0)
