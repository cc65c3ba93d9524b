"""The series the charts draw: throughput over time, approval and gold accuracy per worker with Wilson
intervals, answers by annotator and rank (ECCV Table B.2), error types per annotator (Table B.3) and the
time spent per item.

Read-only. Every series is plain lists of numbers and labels, handed to the page with json_script and drawn
by static/js/charts.js; each chart keeps a table beside it for people who read rather than look.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta
from itertools import pairwise

from annotator.analysis.trust import wilson_interval
from annotator.campaigns.models.campaign import Campaign, ItemRole, PairSource
from annotator.crowd.models.crowd import Answer, Assignment, AssignmentStatus, Shortcoming, WrongAspect
from annotator.crowd.models.money import Bonus, PayoutStatus
from annotator.quality.selectors.quality import DONE_STATUSES

CHOICE_LABELS = ["100% YES", "Partially YES", "Mostly NO", "100% NO"]
# Bins of seconds per item: [low, high) with the last one open.
SECONDS_BINS = [0, 2, 5, 10, 20, 30, 60, 120]
# Work spread over more than two days is counted per day, shorter spans per hour.
HOURLY_SPAN = timedelta(hours=48)


def _floor(moment: datetime, unit: str) -> datetime:
    moment = moment.replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if unit == "day" else moment


def throughput(*, campaign: Campaign) -> dict:
    """Assignments submitted and approved per hour (or per day when the work spans more than two days), and
    the running totals. Empty buckets between the first and the last are kept so the time axis is even."""
    rows = list(
        Assignment.objects.filter(hit__campaign=campaign, submitted_at__isnull=False).values_list(
            "submitted_at", "status", "decided_at"
        )
    )
    submitted = [at for at, _, _ in rows]
    approved = [decided or at for at, status, decided in rows if status == AssignmentStatus.APPROVED]
    moments = submitted + approved
    if not moments:
        return {key: [] for key in ("labels", "submitted", "approved", "total_submitted", "total_approved")} | {
            "unit": "hour"
        }
    unit = "day" if max(moments) - min(moments) > HOURLY_SPAN else "hour"
    step = timedelta(days=1) if unit == "day" else timedelta(hours=1)
    first, last = _floor(min(moments), unit), _floor(max(moments), unit)
    buckets = []
    while first <= last:
        buckets.append(first)
        first += step
    per_submitted = Counter(_floor(at, unit) for at in submitted)
    per_approved = Counter(_floor(at, unit) for at in approved)
    fmt = "%Y-%m-%d" if unit == "day" else "%Y-%m-%d %H:00"
    result = {"unit": unit, "labels": [], "submitted": [], "approved": [], "total_submitted": [], "total_approved": []}
    total_s = total_a = 0
    for bucket in buckets:
        total_s += per_submitted[bucket]
        total_a += per_approved[bucket]
        result["labels"].append(bucket.strftime(fmt) + " UTC")
        result["submitted"].append(per_submitted[bucket])
        result["approved"].append(per_approved[bucket])
        result["total_submitted"].append(total_s)
        result["total_approved"].append(total_a)
    return result


def spend_over_time(*, campaign: Campaign) -> dict:
    """The campaign's spend so far over time, against its budget, in cents with the platform fee: rewards
    of approved and pending (submitted, undecided) assignments at their submission, bonuses (but those MTurk
    refused) when given; per hour, or per day when it spans more than two days. The last point is
    annotator.campaigns.selectors.crowd_work.campaign_spend's total (up to the rounding of the fee per bucket: none, the
    fee is applied to the running total). `budget` is None without a cap."""
    submitted = list(
        Assignment.objects.filter(
            hit__campaign=campaign,
            submitted_at__isnull=False,
            status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED],
        ).values_list("submitted_at", flat=True)
    )
    given = Bonus.objects.filter(campaign=campaign).exclude(status=PayoutStatus.FAILED)
    bonuses = list(given.values_list("created_at", "amount_cents"))
    empty = {"unit": "hour", "labels": [], "spent": [], "budget": campaign.budget_cents}
    moments = submitted + [at for at, _ in bonuses]
    if not moments:
        return empty
    unit = "day" if max(moments) - min(moments) > HOURLY_SPAN else "hour"
    step = timedelta(days=1) if unit == "day" else timedelta(hours=1)
    cents = Counter()
    for at in submitted:
        cents[_floor(at, unit)] += campaign.reward_cents
    for at, amount in bonuses:
        cents[_floor(at, unit)] += amount
    # From the bucket before the first spend (nothing spent yet), so even one bucket of spend draws a line.
    bucket, last = _floor(min(moments), unit) - step, _floor(max(moments), unit)
    fmt = "%Y-%m-%d" if unit == "day" else "%Y-%m-%d %H:00"
    result = {**empty, "unit": unit}
    running = 0
    while bucket <= last:
        running += cents[bucket]
        result["labels"].append(bucket.strftime(fmt) + " UTC")
        result["spent"].append(round(running * (1 + campaign.platform_fee_percent / 100.0)))
        bucket += step
    return result


def worker_intervals(*, per_worker: list[dict]) -> dict:
    """Approval rate (of decided assignments) and gold accuracy per worker, each with its 95% Wilson interval;
    None where a worker has nothing decided or no gold answered. `per_worker` is campaign_quality's rows."""
    series = {"labels": [], "approval": [], "approval_interval": [], "gold": [], "gold_interval": []}
    for row in per_worker:
        decided = row["approved"] + row["rejected"]
        series["labels"].append(row["worker__pseudonym"])
        series["approval"].append(_round(row["approved"] / decided) if decided else None)
        series["approval_interval"].append(_pair(wilson_interval(row["approved"], decided)) if decided else None)
        series["gold"].append(_round(row["gold_accuracy"]) if row["gold_accuracy"] is not None else None)
        series["gold_interval"].append(_pair(row["gold_interval"]) if row["gold_interval"] else None)
    return series


def model_rate_charts(*, model_rates: list[dict]) -> list[dict]:
    """Table B.2 per annotator as stacked shares per rank: one dataset per answer, ranks on the axis."""
    charts = []
    for number, model in enumerate(model_rates, start=1):
        charts.append(
            {
                "id": f"chart-b2-{number}",
                "annotator": model["annotator"],
                "labels": [f"Rank {row['rank']}" for row in model["rows"]] + ["All"],
                "series": [
                    {
                        "label": label,
                        "data": [_round(row["shares"][i]) for row in model["rows"]]
                        + [_round(model["average"]["shares"][i])],
                    }
                    for i, label in enumerate(CHOICE_LABELS)
                ],
            }
        )
    return charts


def error_types_by_annotator(*, campaign: Campaign, max_rank: int = 5) -> dict:
    """Table B.3 as the paper has it, one row per annotator: the share of each shortcoming and of each wrong
    aspect among the approved answers to the pairs that annotator proposed (within its top `max_rank`).
    A pair two annotators proposed counts for both, as in Table B.2."""
    answers = list(
        Answer.objects.filter(
            assignment__hit__campaign=campaign,
            assignment__status=AssignmentStatus.APPROVED,
            item__role=ItemRole.CANDIDATE,
        ).values_list("item__pair_id", "shortcomings", "wrong_aspects")
    )
    by_pair: dict[int, tuple[Counter, Counter]] = defaultdict(lambda: (Counter(), Counter()))
    for pair_id, reasons, wrong in answers:
        by_pair[pair_id][0].update(reasons or [])
        by_pair[pair_id][1].update(wrong or [])
    names: dict[int, set[str]] = defaultdict(set)
    sources = PairSource.objects.filter(pair_id__in=list(by_pair), rank__lte=max_rank).values_list(
        "pair_id", "run__annotator__name"
    )
    for pair_id, name in sources:
        names[pair_id].add(name)
    table: dict[str, tuple[Counter, Counter]] = defaultdict(lambda: (Counter(), Counter()))
    for pair_id, (reasons, wrong) in by_pair.items():
        for name in names[pair_id]:
            table[name][0].update(reasons)
            table[name][1].update(wrong)
    return {
        "shortcomings": _per_annotator_shares(table, 0, Shortcoming.choices),
        "aspects": _per_annotator_shares(table, 1, WrongAspect.choices),
    }


def _per_annotator_shares(table: dict, index: int, choices) -> dict:
    rows = []
    for name in sorted(table):
        counts = table[name][index]
        n = sum(counts.values())
        rows.append({"annotator": name, "n": n, "shares": [_round(counts[v] / n) if n else 0.0 for v, _ in choices]})
    return {"labels": [label for _, label in choices], "rows": rows}


def seconds_per_item(*, campaign: Campaign) -> dict:
    """A histogram of the seconds workers spent per item in submitted and decided work."""
    seconds = Answer.objects.filter(
        assignment__hit__campaign=campaign, assignment__status__in=DONE_STATUSES
    ).values_list("seconds_spent", flat=True)
    counts = [0] * len(SECONDS_BINS)
    values = []
    for value in seconds:
        values.append(value)
        index = max(i for i, low in enumerate(SECONDS_BINS) if value >= low)
        counts[index] += 1
    labels = [f"{low}-{high} s" for low, high in pairwise(SECONDS_BINS)] + [f"{SECONDS_BINS[-1]} s +"]
    values.sort()
    median = _round(values[len(values) // 2]) if values else None
    return {"labels": labels, "counts": counts, "answers": len(values), "median": median}


def _round(value: float) -> float:
    return round(value, 4)


def _pair(interval: tuple[float, float]) -> list[float]:
    return [_round(interval[0]), _round(interval[1])]
