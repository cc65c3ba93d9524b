"""Builders shared by the quality-control tests: a HIT with gold items and a submitted assignment."""

import random
from dataclasses import dataclass

from django.utils import timezone

from annotator.models import Answer, Assignment, AssignmentStatus, ItemRole
from annotator.quality.services.scoring import assignment_score
from tests.factories import AssignmentFactory, CampaignFactory, HitFactory, HitItemFactory, WorkerFactory


def hit_with_gold(*, campaign=None, candidates: int = 4, **campaign_options):
    """A HIT with `candidates` candidate items, then one gold positive and one gold negative."""
    campaign = campaign or CampaignFactory(**campaign_options)
    hit = HitFactory(campaign=campaign, assignments_required=campaign.redundancy)
    roles = [ItemRole.CANDIDATE] * candidates + [ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE]
    for role in roles:
        HitItemFactory(hit=hit, role=role)
    return hit


def submit(hit, *, worker=None, candidate="yes", gold_positive="yes", gold_negative="no", seconds=5.0, score=None):
    """A submitted assignment with the given answers; `score` (a dict role->value) for similarity."""
    worker = worker or WorkerFactory()
    now = timezone.now()
    assignment = AssignmentFactory(hit=hit, worker=worker, status=AssignmentStatus.SUBMITTED, submitted_at=now)
    by_role = {
        ItemRole.CANDIDATE: candidate,
        ItemRole.GOLD_POSITIVE: gold_positive,
        ItemRole.GOLD_NEGATIVE: gold_negative,
    }
    for item in hit.items.all():
        value = by_role[item.role]
        if score is not None:
            Answer.objects.create(assignment=assignment, item=item, score=score[item.role], seconds_spent=seconds)
        else:
            Answer.objects.create(assignment=assignment, item=item, choice=value, seconds_spent=seconds)
    return assignment


def submit_choices(hit, *, worker, choices, seconds=5.0):
    """A submitted assignment answering the HIT's items, in position order, with `choices` (one per item)."""
    assignment = AssignmentFactory(
        hit=hit, worker=worker, status=AssignmentStatus.SUBMITTED, submitted_at=timezone.now()
    )
    for item, choice in zip(hit.items.order_by("position"), choices, strict=True):
        Answer.objects.create(assignment=assignment, item=item, choice=choice, seconds_spent=seconds)
    return assignment


CANDIDATES = 16


def _careful_choice(rng, accuracy: float, item, truth_offset: int = 0) -> str:
    if item.role != ItemRole.CANDIDATE:  # careful workers get the gold right
        return "yes" if item.role == ItemRole.GOLD_POSITIVE else "no"
    # A third of the candidates are positive, by position (ids depend on the tests run before; positions do
    # not), shifted by `truth_offset` so a test can try each way the truth lines up with a sheet.
    truth = (item.position + truth_offset) % 3 == 0
    says_positive = truth if rng.random() < accuracy else not truth
    extreme = rng.random() < 0.75
    return ("yes" if extreme else "partially_yes") if says_positive else ("no" if extreme else "mostly_no")


def careful_submit(hit, *, worker, rng, accuracy: float = 0.92, truth_offset: int = 0) -> Assignment:
    """A scored assignment of a careful worker: gold right, candidates right with `accuracy`."""
    choices = [_careful_choice(rng, accuracy, item, truth_offset) for item in hit.items.order_by("position")]
    return assignment_score(assignment_id=submit_choices(hit, worker=worker, choices=choices).pk)


@dataclass
class Ring:
    campaign: object
    colluders: tuple
    colluder_work: list  # on the HITs each did apart, beside careful workers
    shared: list  # the two colluders' assignments on the HITs only they answered
    careful_work: list


def colluding_ring(*, apart: int = 2, together: int = 4, truth_offset: int = 0) -> Ring:
    """Two workers answer from one shared sheet by position. Each does `apart` HITs the other does not (each
    also answered by two careful workers): A the first ones, B the next; then both do `together` HITs that
    nobody else answered, where each is the other's only peer. The sheet has the gold right at the HIT's last
    two positions (where these HITs keep their gold), so gold scoring passes every one."""
    rng = random.Random(11)
    first = hit_with_gold(candidates=CANDIDATES, redundancy=3)
    campaign = first.campaign
    hits = [first] + [hit_with_gold(campaign=campaign, candidates=CANDIDATES) for _ in range(2 * apart + together - 1)]
    sheet = [rng.choice(["yes", "no"]) for _ in range(CANDIDATES)] + ["yes", "no"]
    a, b = WorkerFactory(pseudonym="ring-a"), WorkerFactory(pseudonym="ring-b")
    careful = [WorkerFactory() for _ in range(4)]
    colluder_work, careful_work = [], []
    for index, hit in enumerate(hits[: 2 * apart]):
        colluder = a if index < apart else b
        colluder_work.append(assignment_score(assignment_id=submit_choices(hit, worker=colluder, choices=sheet).pk))
        for worker in careful[:2] if index % 2 else careful[2:]:
            careful_work.append(careful_submit(hit, worker=worker, rng=rng, truth_offset=truth_offset))
    shared = [
        assignment_score(assignment_id=submit_choices(hit, worker=w, choices=sheet).pk)
        for hit in hits[2 * apart :]
        for w in (a, b)
    ]
    return Ring(campaign, (a, b), colluder_work, shared, careful_work)
