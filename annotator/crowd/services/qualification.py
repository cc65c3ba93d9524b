"""The qualification test before a worker's first HIT of a campaign: items of its qualification pool.

The pool (annotator.campaigns.services.qualification_pool) is set aside when the campaign is built and never
appears in a HIT, so the test reveals nothing about the HITs' gold. A retake draws items the worker has
not been shown before, the least shown first. The browser gets the items by their index in the attempt
(0, 1, ...) and what a worker sees of the pair; which answer is right stays on the server. Attempts are
kept; a failed one may be retaken after campaign.qualification_cooldown_minutes.
"""

import math
import random

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotator.analysis.gold import gold_choice_right, gold_score_right, qualification_passed, qualification_score
from annotator.campaigns.models.campaign import Campaign, CampaignStatus, Scale
from annotator.campaigns.models.gold import QualificationItem, QualificationRole
from annotator.core.errors import ApplicationError
from annotator.crowd.models.crowd import Choice, QualificationAttempt, Worker
from annotator.crowd.selectors.work import campaign_requires_qualification, worker_may_take_work


def _cooldown_left(*, campaign: Campaign, worker: Worker, now) -> float:
    last = (
        QualificationAttempt.objects.filter(campaign=campaign, worker=worker, passed=False)
        .order_by("-finished_at")
        .first()
    )
    if last is None or last.finished_at is None:
        return 0.0
    ready_at = last.finished_at + timezone.timedelta(minutes=campaign.qualification_cooldown_minutes)
    return max(0.0, (ready_at - now).total_seconds())


def _pick_items(*, campaign: Campaign, worker: Worker, attempt_number: int) -> list[int]:
    """Qualification item ids for a new attempt: positives in the campaign's share, items this worker has
    not been shown first, then the least shown; ties broken by a seeded shuffle. The pool holds no caption
    twice (annotator.campaigns.services.qualification_pool), so neither does a test."""
    shown_before = set()
    for items in QualificationAttempt.objects.filter(campaign=campaign, worker=worker).values_list("items", flat=True):
        shown_before.update(items or [])
    pool = list(
        QualificationItem.objects.filter(campaign=campaign, withdrawn=False).values_list("pk", "role", "times_shown")
    )
    rng = random.Random(f"qualification:{campaign.pk}:{worker.pk}:{attempt_number}")
    rng.shuffle(pool)
    pool.sort(key=lambda row: (row[0] in shown_before, row[2]))
    positives = [pk for pk, role, _n in pool if role == QualificationRole.GOLD_POSITIVE]
    negatives = [pk for pk, role, _n in pool if role == QualificationRole.GOLD_NEGATIVE]
    wanted = min(campaign.qualification_items, len(pool))
    # The pool's share of matching items, and at least one of each role where the pool has both, so the
    # balanced score (annotator.analysis.gold.qualification_score) sees both.
    take_pos = min(len(positives), max(wanted - len(negatives), round(wanted * campaign.qualification_positive_share)))
    if negatives and wanted > 1:
        take_pos = min(take_pos, wanted - 1)
    take_pos = max(take_pos, 1 if positives else 0)
    take_neg = min(len(negatives), wanted - take_pos)
    chosen = positives[:take_pos] + negatives[:take_neg]
    rng.shuffle(chosen)
    return chosen


def qualification_start(*, campaign: Campaign, worker: Worker, now=None) -> QualificationAttempt:
    """Start (or resume) the worker's qualification attempt for a campaign.

    Locks the Worker row (FOR UPDATE) so two tabs get one attempt. Idempotent: an unfinished attempt is
    returned as it is. Refuses (409) when already passed or not required, (429) during the retake
    cool-down, saying when it ends.
    """
    now = now or timezone.now()
    with transaction.atomic():
        worker = Worker.objects.select_for_update().get(pk=worker.pk)
        if campaign.status != CampaignStatus.LIVE:
            raise ApplicationError("This campaign is not taking work right now.", status=409)
        if not worker_may_take_work(worker=worker, campaign=campaign):  # platform block, or the owner's
            raise ApplicationError("Your account may not take new HITs.", status=403)
        if not campaign_requires_qualification(campaign=campaign):
            raise ApplicationError("This campaign has no qualification test.", status=409)
        attempts = QualificationAttempt.objects.filter(campaign=campaign, worker=worker)
        if attempts.filter(passed=True).exists():
            raise ApplicationError("You have already passed this qualification.", status=409)
        open_attempt = attempts.filter(passed__isnull=True).order_by("-started_at").first()
        if open_attempt is not None:
            return open_attempt
        wait = _cooldown_left(campaign=campaign, worker=worker, now=now)
        if wait > 0:
            minutes = math.ceil(wait / 60)
            raise ApplicationError(
                f"You can retake the qualification in {minutes} minute{'s' if minutes != 1 else ''}.",
                extra={"retry_after_seconds": int(wait)},
                status=429,
            )
        items = _pick_items(campaign=campaign, worker=worker, attempt_number=attempts.count())
        QualificationItem.objects.filter(pk__in=items).update(times_shown=F("times_shown") + 1)
        return QualificationAttempt.objects.create(worker=worker, campaign=campaign, items=items, answers={})


def _clean_qualification_answer(*, campaign: Campaign, value) -> str | float:
    if campaign.scale == Scale.SIMILARITY:
        try:
            score = float(value)
        except (TypeError, ValueError):
            raise ApplicationError("Every rating must be a number from 0 to 5.") from None
        if not math.isfinite(score) or not 0 <= score <= 5:
            raise ApplicationError("Every rating must be a number from 0 to 5.")
        return score
    if value not in Choice.values:
        raise ApplicationError(f"Unknown answer {value!r}.")
    return value


def qualification_submit(
    *, attempt: QualificationAttempt, worker: Worker, answers: dict, now=None
) -> QualificationAttempt:
    """Score an attempt: `answers` maps item index ("0", "1", ...) to a choice (or a 0-5 score).

    Locks the attempt row (FOR UPDATE). Idempotent: a finished attempt is returned unchanged (a double
    submit cannot score twice). Every item must be answered (400 otherwise, naming the missing ones).
    """
    now = now or timezone.now()
    with transaction.atomic():
        locked = QualificationAttempt.objects.select_for_update().filter(pk=attempt.pk).first()
        if locked is None or locked.worker_id != worker.pk:
            raise ApplicationError("No such qualification attempt.", status=404)
        if locked.passed is not None:
            return locked
        campaign = locked.campaign
        if not isinstance(answers, dict):
            raise ApplicationError("Answers must map item numbers to answers.")
        cleaned, missing = {}, []
        for index in range(len(locked.items)):
            value = answers.get(str(index))
            if value in (None, ""):
                missing.append(index + 1)
                continue
            cleaned[str(index)] = _clean_qualification_answer(campaign=campaign, value=value)
        if missing:
            raise ApplicationError(
                "Answer every question first (missing: " + ", ".join(map(str, missing)) + ").",
                extra={"missing": missing},
            )
        roles = dict(QualificationItem.objects.filter(pk__in=locked.items).values_list("pk", "role"))
        right_by_role = {role: [0, 0] for role in QualificationRole.values}
        for index, pair_id in enumerate(locked.items):
            role = roles.get(pair_id)
            value = cleaned[str(index)]
            if role is None:
                continue  # the item left the pool since the attempt started (a rebuild): not counted
            if campaign.scale == Scale.SIMILARITY:
                right = gold_score_right(role=role, score=value, threshold=campaign.similarity_gold_threshold)
            else:
                right = gold_choice_right(role=role, choice=value, strict=campaign.strict_gold)
            right_by_role[role][0] += int(right)
            right_by_role[role][1] += 1
        locked.answers = cleaned
        locked.score = qualification_score(right_by_role={role: tuple(n) for role, n in right_by_role.items()})
        locked.passed = qualification_passed(score=locked.score, pass_mark=campaign.qualification_pass_mark)
        locked.finished_at = now
        locked.save(update_fields=["answers", "score", "passed", "finished_at"])
        return locked
