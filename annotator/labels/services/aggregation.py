"""Labels: aggregate approved answers of a campaign into one Label per pair and method."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from annotator.analysis.aggregation import (
    AggregatedLabel,
    Vote,
    crowdkit_model,
    dawid_skene,
    gold_weighted_vote,
    majority_vote,
    mean_score,
)
from annotator.analysis.posterior import Z90
from annotator.campaigns.models.campaign import Campaign, Hit, HitItem, HitStatus, Scale
from annotator.core.errors import ApplicationError
from annotator.crowd.models.crowd import Answer, AssignmentStatus
from annotator.crowd.models.standing import WorkerStanding
from annotator.labels.models.labels import AggregationMethod, Label

FOUR_CHOICE_METHODS = [
    AggregationMethod.POSTERIOR,
    AggregationMethod.MAJORITY,
    AggregationMethod.GOLD_WEIGHTED,
    AggregationMethod.DAWID_SKENE,
]
# Slower crowd-kit models, computed when a campaign chooses one (or when asked for by name).
OPTIONAL_METHODS = [AggregationMethod.GLAD, AggregationMethod.MACE, AggregationMethod.WAWA]
SIMILARITY_METHODS = [AggregationMethod.MEAN]


def primary_method(campaign: Campaign) -> str:
    """The method whose labels decide extra answers, flags and default exports: the campaign's label model."""
    if campaign.scale == Scale.SIMILARITY:
        return AggregationMethod.MEAN
    return campaign.label_model if campaign.label_model != AggregationMethod.MEAN else AggregationMethod.POSTERIOR


def _posterior_labels(*, campaign: Campaign, votes: list[Vote]) -> dict[int, AggregatedLabel]:
    """The posterior's labels (annotator.quality.selectors.posterior, approved answers): P(positive) with its 90%
    interval; the choice is the most given answer on the posterior's side (ties to the milder one)."""
    from annotator.quality.selectors.posterior import campaign_posterior

    fit = campaign_posterior(campaign=campaign, approved_only=True)
    tallies: dict[int, dict[str, int]] = {}
    for vote in votes:
        if vote.choice:
            tally = tallies.setdefault(vote.pair_id, {})
            tally[vote.choice] = tally.get(vote.choice, 0) + 1
    low, high = fit.interval(Z90 * campaign.posterior_inflation)  # widened when the gold check asks
    labels = {}
    for row, pair_id in enumerate(fit.pairs.tolist()):
        if fit.answers[row] == 0 or pair_id not in tallies:
            continue
        probability = float(fit.probability[row])
        is_positive = probability > 0.5
        side = ("yes", "partially_yes") if is_positive else ("mostly_no", "no")
        tally = tallies[pair_id]
        choice = max(side, key=lambda c: (tally.get(c, 0), c in ("partially_yes", "mostly_no")))
        labels[pair_id] = AggregatedLabel(
            choice=choice,
            score=None,
            is_positive=is_positive,
            is_positive_strict=is_positive and choice == "yes",
            confidence=max(probability, 1.0 - probability),
            answer_count=int(fit.answers[row]),
            probability=probability,
            probability_low=float(low[row]),
            probability_high=float(high[row]),
        )
    return labels


def _approved_votes(*, campaign: Campaign) -> list[Vote]:
    rows = Answer.objects.filter(
        assignment__hit__campaign=campaign, assignment__status=AssignmentStatus.APPROVED
    ).values_list("item__pair_id", "assignment__worker_id", "choice", "score")
    return [Vote(pair_id=p, worker_id=w, choice=c or "", score=s) for p, w, c, s in rows]


def _aggregate(method: str, votes: list[Vote], campaign: Campaign):
    if method == AggregationMethod.POSTERIOR:
        return _posterior_labels(campaign=campaign, votes=votes)
    if method in OPTIONAL_METHODS:
        return crowdkit_model(str(method), votes)
    if method == AggregationMethod.MAJORITY:
        return majority_vote(votes)
    if method == AggregationMethod.GOLD_WEIGHTED:
        worker_ids = {vote.worker_id for vote in votes}
        # Each worker's gold record on the campaign owner's campaigns, never another requester's.
        gold = {pk: (0, 0) for pk in worker_ids} | {
            pk: (c, t)
            for pk, c, t in WorkerStanding.objects.filter(
                requester_id=campaign.owner_id, worker_id__in=worker_ids
            ).values_list("worker_id", "gold_correct", "gold_total")
        }
        return gold_weighted_vote(votes, gold=gold)
    if method == AggregationMethod.DAWID_SKENE:
        return dawid_skene(votes)
    if method == AggregationMethod.MEAN:
        return mean_score(votes, positive_at=campaign.positive_at)
    raise ApplicationError(f"Unknown aggregation method {method!r}.")


def _methods_for(*, campaign: Campaign, method: str | None) -> list[str]:
    if campaign.scale == Scale.SIMILARITY:
        allowed = SIMILARITY_METHODS
    else:
        allowed = FOUR_CHOICE_METHODS + OPTIONAL_METHODS
    if method is None:
        chosen = primary_method(campaign)
        return [m for m in allowed if m not in OPTIONAL_METHODS or m == chosen]
    if method not in allowed:
        names = ", ".join(str(m) for m in allowed)
        raise ApplicationError(f"Method {method!r} does not apply to a {campaign.scale} campaign; use one of {names}.")
    return [method]


def labels_aggregate(*, campaign: Campaign, method: str | None = None) -> dict:
    """Aggregate the campaign's APPROVED answers into Labels (all methods of its scale, or `method`).

    First the posterior is checked on the campaign's gold (campaign_calibration_refresh), which may widen
    its intervals and raise the stopping bar of adaptive redundancy.
    Upserts on the (pair, method) unique constraint and removes this method's labels of pairs that no
    longer have approved answers, so it is idempotent and safe to re-run after any decision.
    More answers where they are needed: with campaign.adaptive_redundancy, unsettled pairs get follow-up
    HITs (annotator.quality.services.followups.followups_plan). Otherwise pairs whose primary-method confidence is
    below campaign.confidence_threshold get one more assignment on their HITs (Hit.assignments_required + 1,
    never above redundancy + extra_assignment_cap), only on HITs that have all the answers they asked
    for, so re-running it before those arrive raises nothing twice. Takes SELECT ... FOR UPDATE on the HIT
    rows it raises (and on the campaign row when planning follow-ups). Returns counts per method, the
    extras and the follow-up report.
    """
    methods = _methods_for(campaign=campaign, method=method)
    if AggregationMethod.POSTERIOR in methods:
        from annotator.quality.services.calibration import campaign_calibration_refresh

        campaign_calibration_refresh(campaign=campaign)
    votes = _approved_votes(campaign=campaign)
    report: dict = {"answers": len(votes), "labels": {}, "extra_assignments": 0, "followups": {}}
    primary = primary_method(campaign)
    low_confidence: set[int] = set()
    for name in methods:
        labels = _aggregate(name, votes, campaign)
        rows = [
            Label(
                pair_id=pair_id,
                method=name,
                choice=label.choice,
                score=label.score,
                is_positive=label.is_positive,
                is_positive_strict=label.is_positive_strict,
                confidence=min(max(label.confidence, 0.0), 1.0),
                answer_count=label.answer_count,
                probability=None if label.probability is None else min(max(label.probability, 0.0), 1.0),
                probability_low=label.probability_low,
                probability_high=label.probability_high,
                score_low=label.score_low,
                score_high=label.score_high,
            )
            for pair_id, label in labels.items()
        ]
        with transaction.atomic():
            Label.objects.filter(pair__campaign=campaign, method=name).exclude(pair_id__in=list(labels)).delete()
            Label.objects.bulk_create(
                rows,
                batch_size=2000,
                update_conflicts=True,
                unique_fields=["pair", "method"],
                update_fields=[
                    "choice",
                    "score",
                    "is_positive",
                    "is_positive_strict",
                    "confidence",
                    "answer_count",
                    "probability",
                    "probability_low",
                    "probability_high",
                    "score_low",
                    "score_high",
                    "updated_at",
                ],
            )
        report["labels"][str(name)] = len(rows)
        if name == primary:
            low_confidence = {
                pair_id for pair_id, label in labels.items() if label.confidence < campaign.confidence_threshold
            }
    if campaign.adaptive_redundancy:
        from annotator.quality.services.followups import followups_plan

        report["followups"] = followups_plan(campaign=campaign)
    elif low_confidence and campaign.extra_assignment_cap > 0:
        report["extra_assignments"] = hits_request_extra_assignment(campaign=campaign, pair_ids=low_confidence)
    return report


def hits_request_extra_assignment(*, campaign: Campaign, pair_ids: set[int]) -> int:
    """Ask for one more assignment on the complete HITs holding `pair_ids` (as candidates), up to the cap.

    Locks each Hit row (SELECT ... FOR UPDATE). Idempotent per round: a HIT still waiting for an answer it
    asked for is left alone. Returns how many HITs were raised.
    """
    cap = campaign.redundancy + campaign.extra_assignment_cap
    hit_ids = set(
        HitItem.objects.filter(hit__campaign=campaign, pair_id__in=pair_ids, role="candidate").values_list(
            "hit_id", flat=True
        )
    )
    raised = 0
    for hit_id in sorted(hit_ids):
        with transaction.atomic():
            hit = Hit.objects.select_for_update().get(pk=hit_id)
            if hit.status == HitStatus.CANCELLED or hit.assignments_required >= cap:
                continue
            approved = hit.assignments.filter(status=AssignmentStatus.APPROVED).count()
            if approved < hit.assignments_required:
                continue
            Hit.objects.filter(pk=hit_id).update(
                assignments_required=F("assignments_required") + 1, status=HitStatus.OPEN, has_room=True
            )
            raised += 1
    return raised


def campaigns_aggregate_stale(*, limit: int = 20) -> list[int]:
    """Aggregate live or paused campaigns with a decision newer than their newest label (beat task).

    Each campaign goes through labels_aggregate (idempotent upsert); returns the ids aggregated.
    """
    from django.db.models import Max

    from annotator.campaigns.models.campaign import CampaignStatus
    from annotator.crowd.models.crowd import Assignment

    done = []
    campaigns = Campaign.objects.filter(status__in=[CampaignStatus.LIVE, CampaignStatus.PAUSED]).order_by("pk")
    for campaign in campaigns:
        last_decision = Assignment.objects.filter(hit__campaign=campaign, decided_at__isnull=False).aggregate(
            t=Max("decided_at")
        )["t"]
        if last_decision is None:
            continue
        last_label = Label.objects.filter(pair__campaign=campaign).aggregate(t=Max("updated_at"))["t"]
        if last_label is not None and last_label >= last_decision:
            continue
        labels_aggregate(campaign=campaign)
        done.append(campaign.pk)
        if len(done) >= limit:
            break
    return done
