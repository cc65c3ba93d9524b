"""Gold items judged: whether an answer to a gold item is right, and the gold pairs the crowd contradicts."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Exists, OuterRef, Q

from annotator.analysis.gold import gold_choice_right, gold_score_right
from annotator.campaigns.models.campaign import ItemRole, Scale
from annotator.crowd.models.crowd import FLAG_LOW_TRUST, FLAG_SAME_ANSWER, FLAG_TOO_FAST, Answer
from annotator.crowd.models.standing import WorkerStanding

GOLD_ROLES = (ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE)


def gold_answer_right(*, role: str, answer: Answer | None, campaign) -> bool:
    """Whether `answer` to a gold item of `role` is right under the campaign's scale and strictness."""
    if answer is None:
        return False
    if campaign.scale == Scale.SIMILARITY:
        return gold_score_right(role=role, score=answer.score, threshold=campaign.similarity_gold_threshold)
    return gold_choice_right(role=role, choice=answer.choice, strict=campaign.strict_gold)


def gold_pairs_disputed(*, campaign, pair_ids=None, exclude_assignment_id=None) -> dict[int, tuple[int, int]]:
    """Gold pairs the crowd contradicts: at least QUALITY_GOLD_DISPUTE_MIN_ANSWERS scored answers (not from
    workers blocked on the platform or blocked or soft-blocked by the campaign's owner, nor careless work;
    rejected work counts, as it may have been rejected for this very item), of which at least
    QUALITY_GOLD_DISPUTE_SHARE are "wrong". Such a gold item is more likely wrong than the workers (a random
    "negative" that truly matches, an original caption that does not describe its image): it stops counting
    in scoring and is listed on the quality page. Returns pair -> (wrong, n). A read; no locks."""
    min_answers = getattr(settings, "QUALITY_GOLD_DISPUTE_MIN_ANSWERS", 5)
    share = getattr(settings, "QUALITY_GOLD_DISPUTE_SHARE", 0.5)
    paused_by_owner = WorkerStanding.objects.filter(
        worker=OuterRef("assignment__worker"), requester_id=campaign.owner_id
    ).filter(Q(blocked=True) | Q(soft_blocked=True))
    answers = (
        Answer.objects.filter(
            item__hit__campaign=campaign, item__role__in=GOLD_ROLES, assignment__scored_at__isnull=False
        )
        .exclude(assignment__worker__blocked=True)
        .exclude(Exists(paused_by_owner))
        .select_related("item", "assignment")
    )
    if pair_ids is not None:
        answers = answers.filter(item__pair_id__in=list(pair_ids))
    if exclude_assignment_id is not None:
        answers = answers.exclude(assignment_id=exclude_assignment_id)
    tally: dict[int, list[int]] = {}
    careless = {FLAG_SAME_ANSWER, FLAG_TOO_FAST, FLAG_LOW_TRUST}
    for answer in answers:
        if careless & set(answer.assignment.flags or []):
            continue  # careless work says nothing about the gold item
        entry = tally.setdefault(answer.item.pair_id, [0, 0])
        entry[0] += int(not gold_answer_right(role=answer.item.role, answer=answer, campaign=campaign))
        entry[1] += 1
    return {pair: (wrong, n) for pair, (wrong, n) in tally.items() if n >= min_answers and wrong >= share * n}
