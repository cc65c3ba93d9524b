"""Quality-control reads for requesters: the review queue, one assignment beside gold and peers, stats.

Everything here is for the campaign's owner (or a requester it is shared with); the views check that
before calling. Gold roles and other workers' answers appear here and nowhere a worker can reach.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from django.db.models import Count, Q, QuerySet

from annotator.analysis.trust import wilson_interval
from annotator.campaigns.models.campaign import Campaign, CampaignStatus, HitItem, ItemRole, PairSource
from annotator.campaigns.selectors.campaigns import campaign_list_managed
from annotator.crowd.models.crowd import Answer, Assignment, AssignmentStatus, Shortcoming, WrongAspect
from annotator.crowd.models.standing import WorkerStanding
from annotator.quality.selectors.gold import gold_pairs_disputed

DONE_STATUSES = [AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED]
# ECCV Caption Table B.1: workers bucketed by how many HITs they completed.
HIT_BUCKETS = [
    ("1", 1, 1),
    ("2-5", 2, 5),
    ("6-10", 6, 10),
    ("11-15", 11, 15),
    ("16-25", 16, 25),
    ("more than 25", 26, None),
]
CHOICE_ORDER = ["yes", "partially_yes", "mostly_no", "no"]


def campaign_list_for_review(*, user) -> QuerySet[Campaign]:
    """The campaigns `user` manages that have had work, each with how many submissions await a decision;
    those with the most waiting first."""
    waiting = Count("hits__assignments", filter=Q(hits__assignments__status=AssignmentStatus.SUBMITTED), distinct=True)
    return (
        campaign_list_managed(user=user)
        .filter(status__in=[CampaignStatus.LIVE, CampaignStatus.PAUSED, CampaignStatus.FINISHED])
        .annotate(waiting=waiting)
        .order_by("-waiting", "-created_at", "-id")
    )


def review_queue(*, campaign: Campaign) -> QuerySet:
    """Submitted assignments that scoring (or a block) sent to review, oldest first."""
    return (
        Assignment.objects.filter(hit__campaign=campaign, status=AssignmentStatus.SUBMITTED, scored_at__isnull=False)
        .exclude(flags=[])
        .select_related("worker", "hit")
        .order_by("submitted_at", "pk")
    )


def review_awaiting_auto_approval(*, campaign: Campaign) -> QuerySet:
    """Submitted, scored, unflagged assignments that approve themselves unless the requester decides first,
    oldest first (the requester may open one and approve or reject it now)."""
    return (
        Assignment.objects.filter(
            hit__campaign=campaign, status=AssignmentStatus.SUBMITTED, scored_at__isnull=False, flags=[]
        )
        .select_related("worker", "hit")
        .order_by("submitted_at", "pk")
    )


def review_counts(*, campaign: Campaign) -> dict:
    """How many assignments wait for review, for auto-approval, and how many were decided."""
    qs = Assignment.objects.filter(hit__campaign=campaign)
    return {
        "flagged": review_queue(campaign=campaign).count(),
        "awaiting_auto_approval": review_awaiting_auto_approval(campaign=campaign).count(),
        "unscored": qs.filter(status=AssignmentStatus.SUBMITTED, scored_at__isnull=True).count(),
        "approved": qs.filter(status=AssignmentStatus.APPROVED).count(),
        "rejected": qs.filter(status=AssignmentStatus.REJECTED).count(),
    }


def assignment_review_detail(*, assignment: Assignment) -> dict:
    """One assignment for review: per item the worker's answer, the gold answer (for gold items) and the
    other workers' answers to the same pair in this campaign; plus the decision history."""
    campaign = assignment.hit.campaign
    items = list(
        HitItem.objects.filter(hit_id=assignment.hit_id)
        .select_related("pair__image", "pair__caption", "pair__other_image", "pair__other_caption")
        .order_by("position")
    )
    own = {a.item_id: a for a in Answer.objects.filter(assignment=assignment)}
    pair_ids = [item.pair_id for item in items]
    others = defaultdict(list)
    rows = (
        Answer.objects.filter(item__pair_id__in=pair_ids, assignment__hit__campaign=campaign)
        .exclude(assignment=assignment)
        .exclude(
            assignment__status__in=[AssignmentStatus.RESERVED, AssignmentStatus.RETURNED, AssignmentStatus.EXPIRED]
        )
        .select_related("assignment__worker", "item")
        .order_by("assignment__worker__pseudonym")
    )
    for answer in rows:
        others[answer.item.pair_id].append(
            {
                "worker": answer.assignment.worker.pseudonym,
                "status": answer.assignment.status,
                "value": _answer_value(answer, campaign),
            }
        )
    disputed = gold_pairs_disputed(
        campaign=campaign,
        pair_ids=[item.pair_id for item in items if item.role in (ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE)],
    )
    entries = []
    # Numbered as the worker saw them (annotator.crowd.selectors.hits.hit_worker_items), whatever the stored positions.
    for number, item in enumerate(items, start=1):
        answer = own.get(item.id)
        gold = _gold_expectation(item.role, campaign)
        entries.append(
            {
                "position": number,
                "item": item,
                "pair": item.pair,
                "role": item.role,
                "is_gold": item.role in (ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE),
                "gold": gold,
                "answer": _answer_value(answer, campaign) if answer else "(no answer)",
                "answer_obj": answer,
                "gold_right": _gold_right(item.role, answer, campaign) if gold else None,
                "others": others.get(item.pair_id, []),
                "disputed": disputed.get(item.pair_id),
            }
        )
    return {
        "assignment": assignment,
        "campaign": campaign,
        "entries": entries,
        "events": list(assignment.events.select_related("actor").order_by("created_at", "id")),
        "seconds_total": round(sum(a.seconds_spent for a in own.values()), 1),
    }


def _answer_value(answer: Answer | None, campaign: Campaign) -> str:
    if answer is None:
        return ""
    if campaign.scale == "similarity":
        return "" if answer.score is None else f"{answer.score:g}"
    label = dict(Answer._meta.get_field("choice").choices).get(answer.choice, answer.choice)
    reasons = [dict(Shortcoming.choices).get(s, s) for s in answer.shortcomings or []]
    aspects = [dict(WrongAspect.choices).get(s, s) for s in answer.wrong_aspects or []]
    extra = "; ".join(filter(None, [", ".join(reasons), ", ".join(aspects)]))
    return f"{label} ({extra})" if extra else label


def _gold_expectation(role: str, campaign: Campaign) -> str:
    if role not in (ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE):
        return ""
    if campaign.scale == "similarity":
        sign = ">=" if role == ItemRole.GOLD_POSITIVE else "<"
        return f"score {sign} {campaign.similarity_gold_threshold:g}"
    if role == ItemRole.GOLD_POSITIVE:
        return "100% YES" if campaign.strict_gold else "100% YES or Partially YES"
    return "100% NO" if campaign.strict_gold else "100% NO or Mostly NO"


def _gold_right(role: str, answer: Answer | None, campaign: Campaign) -> bool:
    from annotator.analysis.gold import gold_choice_right, gold_score_right

    if answer is None:
        return False
    if campaign.scale == "similarity":
        return gold_score_right(role=role, score=answer.score, threshold=campaign.similarity_gold_threshold)
    return gold_choice_right(role=role, choice=answer.choice, strict=campaign.strict_gold)


def campaign_quality(*, campaign: Campaign) -> dict:
    """The campaign quality page: approval overall and per worker, Table B.1 buckets, B.2 and B.3."""
    done = Assignment.objects.filter(hit__campaign=campaign, status__in=DONE_STATUSES)
    per_worker = list(
        done.values("worker_id", "worker__pseudonym", "worker__blocked")
        .annotate(
            submitted=Count("pk"),
            approved=Count("pk", filter=Q(status=AssignmentStatus.APPROVED)),
            rejected=Count("pk", filter=Q(status=AssignmentStatus.REJECTED)),
            flagged=Count("pk", filter=~Q(flags=[])),
        )
        .order_by("-submitted", "worker__pseudonym")
    )
    # The owner's own record of each worker: their block, soft block and the gold earned on their campaigns.
    standings = {
        standing.worker_id: standing
        for standing in WorkerStanding.objects.filter(
            requester_id=campaign.owner_id, worker_id__in=[row["worker_id"] for row in per_worker]
        )
    }
    for row in per_worker:
        standing = standings.get(row["worker_id"])
        row["platform_blocked"] = row.pop("worker__blocked")
        row["blocked"] = bool(standing and standing.blocked)
        row["soft_blocked"] = bool(standing and standing.soft_blocked)
        row["blocked_reason"] = standing.blocked_reason if standing else ""
        decided = row["approved"] + row["rejected"]
        row["approval_rate"] = row["approved"] / decided if decided else None
        correct, total = (standing.gold_correct, standing.gold_total) if standing else (0, 0)
        row["gold"] = f"{correct}/{total}"
        row["gold_accuracy"] = correct / total if total else None
        row["gold_interval"] = wilson_interval(correct, total) if total else None
    submitted = sum(row["submitted"] for row in per_worker)
    approved = sum(row["approved"] for row in per_worker)
    rejected = sum(row["rejected"] for row in per_worker)
    buckets = []
    for label, low, high in HIT_BUCKETS:
        rows = [r for r in per_worker if r["submitted"] >= low and (high is None or r["submitted"] <= high)]
        b_submitted = sum(r["submitted"] for r in rows)
        b_approved = sum(r["approved"] for r in rows)
        buckets.append(
            {
                "label": label,
                "workers": len(rows),
                "submitted": b_submitted,
                "approved": b_approved,
                "ratio": (b_approved / b_submitted) if b_submitted else None,
            }
        )
    return {
        "submitted": submitted,
        "approved": approved,
        "rejected": rejected,
        "approval_rate": approved / (approved + rejected) if approved + rejected else None,
        "per_worker": per_worker,
        "buckets": buckets,
        "model_rates": model_answer_rates(campaign=campaign),
        "error_types": error_types(campaign=campaign),
        "counts": review_counts(campaign=campaign),
        "disputed_gold": disputed_gold(campaign=campaign),
    }


def disputed_gold(*, campaign: Campaign) -> list[dict]:
    """Gold items the crowd contradicts (see selectors.gold.gold_pairs_disputed), with their pairs."""
    from annotator.campaigns.models.campaign import Pair

    disputed = gold_pairs_disputed(campaign=campaign)
    pairs = Pair.objects.select_related("image", "caption").in_bulk(list(disputed))
    roles = dict(
        HitItem.objects.filter(hit__campaign=campaign, pair_id__in=list(disputed)).values_list("pair_id", "role")
    )
    return [
        {"pair": pairs[pk], "role": roles.get(pk, ""), "wrong": wrong, "answers": n}
        for pk, (wrong, n) in sorted(disputed.items())
        if pk in pairs
    ]


def _approved_candidate_answers(campaign: Campaign) -> QuerySet:
    return Answer.objects.filter(
        assignment__hit__campaign=campaign,
        assignment__status=AssignmentStatus.APPROVED,
        item__role=ItemRole.CANDIDATE,
    )


def model_answer_rates(*, campaign: Campaign, max_rank: int = 5) -> list[dict]:
    """ECCV Table B.2: for each annotator (run) and rank, the share of its proposals answered each choice."""
    answers = list(_approved_candidate_answers(campaign).values_list("item__pair_id", "choice"))
    by_pair = defaultdict(Counter)
    for pair_id, choice in answers:
        if choice:
            by_pair[pair_id][choice] += 1
    sources = PairSource.objects.filter(pair_id__in=list(by_pair), rank__lte=max_rank).select_related("run__annotator")
    table: dict[str, dict[int, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for source in sources:
        table[f"{source.run.annotator.name} ({source.direction})"][source.rank].update(by_pair[source.pair_id])
    result = []
    for name in sorted(table):
        rows, total = [], Counter()
        for rank in sorted(table[name]):
            counts = table[name][rank]
            total.update(counts)
            rows.append({"rank": rank, **_shares(counts)})
        result.append({"annotator": name, "rows": rows, "average": _shares(total)})
    return result


def _shares(counts: Counter) -> dict:
    n = sum(counts.values())
    return {"n": n, "shares": [(counts[c] / n if n else 0.0) for c in CHOICE_ORDER]}


def error_types(*, campaign: Campaign) -> dict:
    """ECCV Table B.3: shares of the shortcomings and of the wrong aspects in approved answers."""
    shortcomings, aspects = Counter(), Counter()
    for reasons, wrong in _approved_candidate_answers(campaign).values_list("shortcomings", "wrong_aspects"):
        shortcomings.update(reasons or [])
        aspects.update(wrong or [])
    n_short, n_aspect = sum(shortcomings.values()), sum(aspects.values())
    return {
        "shortcomings": [
            (label, shortcomings[value], shortcomings[value] / n_short if n_short else 0.0)
            for value, label in Shortcoming.choices
        ],
        "aspects": [
            (label, aspects[value], aspects[value] / n_aspect if n_aspect else 0.0)
            for value, label in WrongAspect.choices
        ],
    }
