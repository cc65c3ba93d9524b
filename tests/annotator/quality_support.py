"""Builders shared by the quality-control tests: a HIT with gold items and a submitted assignment."""

from django.utils import timezone

from annotator.models import Answer, AssignmentStatus, ItemRole
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
