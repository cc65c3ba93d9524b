"""Collusion in the crowd check before approval: a shared answer sheet is caught, careful workers are not."""

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.models import FLAG_COLLUSION, AssignmentStatus
from annotator.quality.selectors.collusion import campaign_collusion
from annotator.quality.services.crowd_check import CrowdCheck
from annotator.quality.services.peers import assignments_auto_approve_due
from tests.annotator.quality_support import CANDIDATES, careful_submit, colluding_ring, hit_with_gold
from tests.factories import WorkerFactory

pytestmark = pytest.mark.django_db
LATER = timedelta(days=30)


@pytest.mark.parametrize("truth_offset", [0, 1, 2])
def test_a_shared_sheet_by_position_is_one_collusion_group_and_goes_to_review(truth_offset):
    """Today's code approved the eight assignments on the HITs only the two answered (each vouched for the
    other) and flagged the four beside careful workers: half their work paid, as in issue 32. Caught however
    the truth lines up with the sheet (each colluder is judged without the pairs the other answered: counted,
    they vouched for the pair's accuracy, and two of the three alignments went free)."""
    ring = colluding_ring(truth_offset=truth_offset)
    assert all(not a.flags for a in ring.colluder_work)  # gold right: nothing stood out at scoring
    groups = campaign_collusion(campaign=ring.campaign)
    assert [g.workers for g in groups] == [tuple(sorted(w.pk for w in ring.colluders))]
    by_position = [e for e in groups[0].evidence if e.test == "position"]
    hit_size = CANDIDATES + 2
    assert by_position and by_position[0].matched == by_position[0].compared == 2 * hit_size  # 2 HITs apart each

    assignments_auto_approve_due(now=timezone.now() + LATER)
    for assignment in [*ring.colluder_work, *ring.shared]:
        assignment.refresh_from_db()
        assert FLAG_COLLUSION in assignment.flags and assignment.status == AssignmentStatus.SUBMITTED
    for assignment in ring.careful_work:
        assignment.refresh_from_db()
        assert FLAG_COLLUSION not in assignment.flags


def test_colluders_are_not_each_others_peers():
    """On a HIT only the two colluders answered, each has no peer left to be judged against: the other's
    identical answers do not vouch for them."""
    ring = colluding_ring()
    check = CrowdCheck()
    one, other = ring.shared[:2]  # both on the same HIT
    assert check.partners(one) == {other.worker_id}
    this, _ = check.evidence(one)
    assert this.items == 0 and this.compared == 0


def test_independent_careful_workers_with_many_shared_pairs_are_not_flagged():
    """Two careful workers (92% and 95% right, a middle answer one time in four) answer the same eight HITs,
    128 shared pairs: they agree on most of them because both are right, and are paid."""
    rng = random.Random(5)
    first = hit_with_gold(candidates=CANDIDATES, redundancy=2)
    hits = [first] + [hit_with_gold(campaign=first.campaign, candidates=CANDIDATES) for _ in range(7)]
    one, two = WorkerFactory(), WorkerFactory()
    work = [
        careful_submit(hit, worker=worker, rng=rng, accuracy=accuracy)
        for hit in hits
        for worker, accuracy in ((one, 0.92), (two, 0.95))
    ]
    assert campaign_collusion(campaign=first.campaign) == []
    assignments_auto_approve_due(now=timezone.now() + LATER)
    for assignment in work:
        assignment.refresh_from_db()
        assert FLAG_COLLUSION not in assignment.flags
    assert sum(a.status == AssignmentStatus.APPROVED for a in work) >= len(work) - 1
