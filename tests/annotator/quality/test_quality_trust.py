"""Worker trust service: automatic soft block, requester block/unblock (annotator.quality.services.trust),
all on the campaign owner's WorkerStanding."""

import pytest

from annotator.core.errors import ApplicationError
from annotator.models import FLAG_LOW_TRUST, AssignmentStatus, Role, TrustAction, WorkerStanding
from annotator.quality.services.scoring import assignment_score
from annotator.quality.services.trust import (
    worker_block,
    worker_trust,
    worker_trust_refresh,
    worker_unblock,
)
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import CampaignFactory, WorkerFactory, user_with_role

pytestmark = pytest.mark.django_db


def test_soft_block_after_enough_guessing_and_pending_work_goes_to_review():
    """A worker who misses two thirds of the gold over three HITs is soft-blocked."""
    worker, campaign = WorkerFactory(), CampaignFactory()
    scored = []
    for candidate, gold_positive in (("yes", "mostly_no"), ("no", "yes"), ("mostly_no", "yes")):
        hit = hit_with_gold(campaign=campaign)
        submitted = submit(hit, worker=worker, candidate=candidate, gold_positive=gold_positive, gold_negative="yes")
        scored.append(assignment_score(assignment_id=submitted.pk))
    worker.refresh_from_db()
    standing = WorkerStanding.objects.get(worker=worker, requester=campaign.owner)
    assert (standing.gold_correct, standing.gold_total) == (2, 6)
    assert standing.soft_blocked and "2/6" in standing.soft_block_reason
    assert not worker.blocked  # no platform block: another requester's campaigns stay open to the worker
    event = worker.trust_events.get()
    assert event.action == TrustAction.SOFT_BLOCK and "2/6" in event.reason and event.requester == campaign.owner


def test_no_soft_block_on_too_little_evidence():
    worker, hit = WorkerFactory(), hit_with_gold()
    assignment_score(assignment_id=submit(hit, worker=worker, candidate="no", gold_negative="yes").pk)
    standing = WorkerStanding.objects.get(worker=worker, requester=hit.campaign.owner)
    assert (standing.gold_correct, standing.gold_total) == (1, 2)
    assert not standing.soft_blocked  # 1 of 2: bad luck or guessing, too early to say


def test_soft_block_flags_work_waiting_for_auto_approval(django_capture_on_commit_callbacks):
    worker, campaign = WorkerFactory(), CampaignFactory()
    good = assignment_score(assignment_id=submit(hit_with_gold(campaign=campaign), worker=worker, candidate="no").pk)
    assert good.flags == [] and good.auto_approve_at is not None
    with django_capture_on_commit_callbacks(execute=True):  # the flagging runs once the block commits
        for gold_negative in ("no", "no", "no", "yes"):  # 5 of 10 gold right: P(guessing) = 0.98
            assignment_score(
                assignment_id=submit(
                    hit_with_gold(campaign=campaign),
                    worker=worker,
                    candidate="no",
                    gold_positive="mostly_no",
                    gold_negative=gold_negative,
                ).pk
            )
    good.refresh_from_db()
    assert good.flags == [FLAG_LOW_TRUST] and good.auto_approve_at is None
    assert good.status == AssignmentStatus.SUBMITTED


def test_requester_block_and_unblock_are_kept_with_reasons():
    requester = user_with_role(Role.REQUESTER)
    worker = WorkerFactory()
    with pytest.raises(ApplicationError):
        worker_block(worker=worker, requester=requester, actor=requester, reason="")
    standing = worker_block(worker=worker, requester=requester, actor=requester, reason="copies answers")
    assert standing.blocked and standing.blocked_reason == "copies answers" and standing.blocked_by == requester
    worker.refresh_from_db()
    assert not worker.blocked  # the requester's block, not a platform one
    standing = worker_unblock(worker=worker, requester=requester, actor=requester, reason="explained on the forum")
    assert not standing.blocked and standing.blocked_reason == ""
    history = [(e.action, e.actor, e.reason) for e in worker.trust_events.all()]
    assert history == [
        (TrustAction.BLOCK, requester, "copies answers"),
        (TrustAction.UNBLOCK, requester, "explained on the forum"),
    ]


def test_unblock_wins_until_fresh_evidence():
    """After a requester lifts a soft block, the rule waits for new gold answers before blocking again."""
    worker, requester = WorkerFactory(), user_with_role(Role.REQUESTER)
    WorkerStanding.objects.create(worker=worker, requester=requester, gold_correct=3, gold_total=8)
    assert worker_trust_refresh(worker_id=worker.pk, requester_id=requester.pk).soft_blocked
    worker_unblock(worker=worker, requester=requester, actor=requester, reason="known good worker")
    assert not worker_trust_refresh(worker_id=worker.pk, requester_id=requester.pk).soft_blocked


def test_trust_counts_approval_and_hits():
    worker = WorkerFactory()
    hit = hit_with_gold()
    a = submit(hit, worker=worker)
    a.status = AssignmentStatus.APPROVED
    a.save()
    trust = worker_trust(worker=worker, requester_id=hit.campaign.owner_id)
    assert (trust.approved, trust.rejected, trust.hits_done, trust.approval_rate) == (1, 0, 1, 1.0)
