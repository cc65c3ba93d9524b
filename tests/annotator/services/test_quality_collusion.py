"""Collusion in the crowd check before approval: a shared answer sheet is caught, careful workers are not."""

import random
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.models import FLAG_COLLUSION, Assignment, AssignmentStatus, ItemRole
from annotator.selectors.collusion import campaign_collusion
from annotator.services.quality.crowd_check import CrowdCheck
from annotator.services.quality.peers import assignments_auto_approve_due
from annotator.services.quality.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit_choices
from tests.factories import WorkerFactory

pytestmark = pytest.mark.django_db
LATER = timedelta(days=30)
CANDIDATES = 16


def _careful_choice(rng, accuracy: float, item) -> str:
    if item.role != ItemRole.CANDIDATE:  # careful workers get the gold right
        return "yes" if item.role == ItemRole.GOLD_POSITIVE else "no"
    truth = item.pair_id % 3 == 0  # a third of the candidates are positive
    says_positive = truth if rng.random() < accuracy else not truth
    extreme = rng.random() < 0.75
    return ("yes" if extreme else "partially_yes") if says_positive else ("no" if extreme else "mostly_no")


def _careful(hit, worker, rng, accuracy=0.92) -> Assignment:
    choices = [_careful_choice(rng, accuracy, item) for item in hit.items.order_by("position")]
    return assignment_score(assignment_id=submit_choices(hit, worker=worker, choices=choices).pk)


@dataclass
class Ring:
    campaign: object
    colluders: tuple
    colluder_work: list
    shared: tuple  # the two colluders' assignments on the HIT only they answered
    careful_work: list


def colluding_ring() -> Ring:
    """Two workers answer from one shared sheet by position: A does HITs 0-2, B HITs 3-5 (each also answered
    by two careful workers), and both do HIT 6, which nobody else answered. The sheet has the gold right at
    the HIT's last two positions (where these HITs keep their gold), so gold scoring passes every one."""
    rng = random.Random(11)
    first = hit_with_gold(candidates=CANDIDATES, redundancy=3)
    campaign = first.campaign
    hits = [first] + [hit_with_gold(campaign=campaign, candidates=CANDIDATES) for _ in range(6)]
    sheet = [rng.choice(["yes", "no"]) for _ in range(CANDIDATES)] + ["yes", "no"]
    a, b = WorkerFactory(pseudonym="ring-a"), WorkerFactory(pseudonym="ring-b")
    careful = [WorkerFactory() for _ in range(4)]
    colluder_work, careful_work = [], []
    for index, hit in enumerate(hits[:6]):
        colluder = a if index < 3 else b
        colluder_work.append(assignment_score(assignment_id=submit_choices(hit, worker=colluder, choices=sheet).pk))
        for worker in careful[:2] if index % 2 else careful[2:]:
            careful_work.append(_careful(hit, worker, rng))
    shared = tuple(assignment_score(assignment_id=submit_choices(hits[6], worker=w, choices=sheet).pk) for w in (a, b))
    return Ring(campaign, (a, b), colluder_work, shared, careful_work)


def test_a_shared_sheet_by_position_is_one_collusion_group_and_goes_to_review():
    ring = colluding_ring()
    assert all(not a.flags for a in ring.colluder_work)  # gold right: nothing stood out at scoring
    groups = campaign_collusion(campaign=ring.campaign)
    assert [g.workers for g in groups] == [tuple(sorted(w.pk for w in ring.colluders))]
    assert groups[0].strongest.test == "position"

    assignments_auto_approve_due(now=timezone.now() + LATER)
    for assignment in [*ring.colluder_work, *ring.shared]:
        assignment.refresh_from_db()
        assert FLAG_COLLUSION in assignment.flags and assignment.status == AssignmentStatus.SUBMITTED
    for assignment in ring.careful_work:
        assignment.refresh_from_db()
        assert FLAG_COLLUSION not in assignment.flags


def test_colluders_are_not_each_others_peers():
    """On the HIT only the two colluders answered, each has no peer left to be judged against: the other's
    identical answers do not vouch for them."""
    ring = colluding_ring()
    check = CrowdCheck()
    one, other = ring.shared
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
    work = [_careful(hit, worker, rng, accuracy) for hit in hits for worker, accuracy in ((one, 0.92), (two, 0.95))]
    assert campaign_collusion(campaign=first.campaign) == []
    assignments_auto_approve_due(now=timezone.now() + LATER)
    for assignment in work:
        assignment.refresh_from_db()
        assert FLAG_COLLUSION not in assignment.flags
    assert sum(a.status == AssignmentStatus.APPROVED for a in work) >= len(work) - 1
