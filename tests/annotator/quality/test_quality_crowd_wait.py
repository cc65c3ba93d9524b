"""The crowd check waits for a pair's other answers before it condemns a worker on it (adaptive redundancy).

A careful worker who disagrees with the single other answer on a pair leaves the pair unsettled, so
adaptive redundancy will ask it again; until those answers are in, the disagreement says little. The check
then judges on settled pairs only (which may condemn but not clear), and decides on every pair once nothing
more is coming: the campaign finished, the pairs settled, or QUALITY_PEER_WAIT_HOURS passed.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.models import (
    FLAG_PEER_DISAGREEMENT,
    Answer,
    AssignmentStatus,
    CampaignStatus,
    HitItem,
    ItemRole,
)
from annotator.quality.services.peers import assignments_auto_approve_due
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import HitFactory, HitItemFactory

pytestmark = pytest.mark.django_db
SOON = timedelta(hours=2)


def _live_adaptive_hit(candidates: int = 16):
    hit = hit_with_gold(
        candidates=candidates, redundancy=1, adaptive_redundancy=True, status=CampaignStatus.LIVE, auto_approve_hours=1
    )
    return hit


def _answered(hit, *, says_yes: set[int], pairs: list[int]):
    """A scored assignment on `hit` answering "yes" to the pairs in `says_yes` and "no" to the other candidates
    (gold answered right)."""
    assignment = submit(hit, candidate="no")
    Answer.objects.filter(assignment=assignment, item__pair_id__in=[pairs[k] for k in says_yes]).update(choice="yes")
    return assignment_score(assignment_id=assignment.pk)


def _followup(campaign, pair_ids: list[int]):
    """A follow-up HIT asking `pair_ids` again (one assignment), with its own gold."""
    hit = HitFactory(campaign=campaign, assignments_required=1, followup_round=1)
    for pair_id in pair_ids:
        HitItem.objects.create(hit=hit, pair_id=pair_id, role=ItemRole.CANDIDATE, position=hit.items.count() + 1)
    HitItemFactory(hit=hit, role=ItemRole.GOLD_POSITIVE)
    HitItemFactory(hit=hit, role=ItemRole.GOLD_NEGATIVE)
    return hit


def _candidates(hit) -> list[int]:
    return list(hit.items.filter(role=ItemRole.CANDIDATE).order_by("position").values_list("pair_id", flat=True))


A_SAYS_YES = set(range(8))  # worker A: "yes" to pairs 0-7, "no" to 8-15
B_SAYS_YES = {0, 1, 2, 3, 8, 9, 10, 11}  # worker B: disagrees with A on pairs 4-11


def test_a_disagreement_with_one_other_answer_waits_for_the_pairs_next_answers():
    """Worker A and worker B (a follow-up HIT on the same pairs) disagree on half of sixteen pairs. Judged on
    the one other answer, A would be flagged (the next test); the disagreeing pairs are unsettled, so A waits.
    Two more answers side with A on those pairs: A is approved and B, now contradicted on settled pairs, is
    flagged."""
    hit = _live_adaptive_hit()
    pairs = _candidates(hit)
    first = _answered(hit, says_yes=A_SAYS_YES, pairs=pairs)
    second = _answered(_followup(hit.campaign, pairs), says_yes=B_SAYS_YES, pairs=pairs)

    assert assignments_auto_approve_due(now=timezone.now() + SOON) == 0
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.flags == [] and first.status == AssignmentStatus.SUBMITTED  # waiting, not flagged
    assert second.flags == [] and second.status == AssignmentStatus.SUBMITTED
    assert first.auto_approve_at > timezone.now() + SOON

    disputed = pairs[4:12]
    for _ in range(2):
        _answered(_followup(hit.campaign, disputed), says_yes={0, 1, 2, 3}, pairs=disputed)  # as A: 4-7 yes
    assignments_auto_approve_due(now=timezone.now() + timedelta(hours=5))
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == AssignmentStatus.APPROVED
    assert second.flags == [FLAG_PEER_DISAGREEMENT] and second.status == AssignmentStatus.SUBMITTED


def test_without_the_wait_the_same_disagreement_is_flagged_at_once():
    """The same two workers in a campaign whose pairs collect no more answers (finished): the check judges on
    what there is, and A, contradicted on eight of sixteen pairs by the only other answer, is flagged."""
    hit = _live_adaptive_hit()
    pairs = _candidates(hit)
    first = _answered(hit, says_yes=A_SAYS_YES, pairs=pairs)
    _answered(_followup(hit.campaign, pairs), says_yes=B_SAYS_YES, pairs=pairs)
    hit.campaign.status = CampaignStatus.FINISHED
    hit.campaign.save(update_fields=["status"])
    assignments_auto_approve_due(now=timezone.now() + SOON)
    first.refresh_from_db()
    assert first.flags == [FLAG_PEER_DISAGREEMENT]


def test_a_spammer_contradicted_on_settled_pairs_is_flagged_while_others_wait():
    """Two careful workers agree on sixteen pairs (settled); a guesser who contradicts them on twelve is flagged at
    once, though the pairs they made unsettled are still collecting answers."""
    hit = _live_adaptive_hit()
    pairs = _candidates(hit)
    _answered(hit, says_yes=set(), pairs=pairs)
    _answered(_followup(hit.campaign, pairs), says_yes=set(), pairs=pairs)
    _answered(_followup(hit.campaign, pairs), says_yes=set(), pairs=pairs)
    guesser = _answered(_followup(hit.campaign, pairs), says_yes=set(range(12)), pairs=pairs)
    assignments_auto_approve_due(now=timezone.now() + SOON)
    guesser.refresh_from_db()
    assert guesser.flags == [FLAG_PEER_DISAGREEMENT]


def test_the_wait_ends_when_no_more_answers_are_coming():
    """A worker whose pairs stay unsettled is decided once the campaign is finished, and in a live campaign
    once QUALITY_PEER_WAIT_HOURS have passed: never left waiting."""
    hit = _live_adaptive_hit()
    pairs = _candidates(hit)
    lone = _answered(hit, says_yes={0, 1, 2}, pairs=pairs)
    assert assignments_auto_approve_due(now=timezone.now() + SOON) == 0
    assert assignments_auto_approve_due(now=timezone.now() + timedelta(hours=1 + 72 + 2)) == 1
    lone.refresh_from_db()
    assert lone.status == AssignmentStatus.APPROVED

    hit = _live_adaptive_hit()
    pairs = _candidates(hit)
    other = _answered(hit, says_yes={0, 1, 2}, pairs=pairs)
    assert assignments_auto_approve_due(now=timezone.now() + SOON) == 0
    hit.campaign.status = CampaignStatus.FINISHED
    hit.campaign.save(update_fields=["status"])
    assert assignments_auto_approve_due(now=timezone.now() + 2 * SOON) == 1
    other.refresh_from_db()
    assert other.status == AssignmentStatus.APPROVED
