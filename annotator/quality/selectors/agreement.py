"""Agreement and worker statistics of a campaign: Krippendorff's alpha overall and per annotator and rank,
and per worker: gold accuracy, accuracy against the crowd's posterior, speed, first-pass approval.

Answers counted: approved, or submitted and scored (the working answers: rejected work is left out).
Alpha is ordinal over the four answers and interval over the 0-5 scale. Reads only; no locks.
"""

from __future__ import annotations

import io
from collections import defaultdict
from statistics import median

from annotator.analysis.agreement import ORDINAL_CHOICES, krippendorff_alpha
from annotator.campaigns.models.campaign import Campaign, ItemRole, PairSource, Scale
from annotator.core.csvsafe import csv_writer
from annotator.crowd.models.crowd import Answer, Assignment, AssignmentEvent, AssignmentStatus
from annotator.quality.selectors.posterior import campaign_posterior, working_answers

WORKER_CSV_COLUMNS = [
    "worker",
    "assignments",
    "approved",
    "rejected",
    "first_pass_approval",
    "gold_correct",
    "gold_total",
    "gold_accuracy",
    "posterior_accuracy",
    "median_seconds_per_item",
    "flagged",
]


def _value(choice: str, score, scale: str):
    if scale == Scale.SIMILARITY:
        return score
    return ORDINAL_CHOICES.get(choice)


def campaign_agreement(*, campaign: Campaign) -> dict:
    """{"metric", "alpha", "units", "by_rank": [{"annotator", "rank", "alpha", "pairs"}]}."""
    metric = "interval" if campaign.scale == Scale.SIMILARITY else "ordinal"
    triples_by_pair = defaultdict(list)
    rows = Answer.objects.filter(working_answers(), item__hit__campaign=campaign, item__role=ItemRole.CANDIDATE)
    for pair_id, worker_id, choice, score in rows.values_list(
        "item__pair_id", "assignment__worker_id", "choice", "score"
    ):
        value = _value(choice, score, campaign.scale)
        if value is not None:
            triples_by_pair[pair_id].append((pair_id, worker_id, value))
    everything = [t for triples in triples_by_pair.values() for t in triples]
    by_rank = defaultdict(set)
    for pair_id, name, rank in PairSource.objects.filter(pair__campaign=campaign).values_list(
        "pair_id", "run__annotator__name", "rank"
    ):
        by_rank[(name, rank)].add(pair_id)
    ranks = []
    for (name, rank), pairs in sorted(by_rank.items()):
        triples = [t for pair in pairs for t in triples_by_pair.get(pair, [])]
        ranks.append(
            {
                "annotator": name,
                "rank": rank,
                "pairs": sum(1 for pair in pairs if len(triples_by_pair.get(pair, [])) >= 2),
                "alpha": krippendorff_alpha(triples, metric=metric),
            }
        )
    return {
        "metric": metric,
        "alpha": krippendorff_alpha(everything, metric=metric),
        "units": sum(1 for triples in triples_by_pair.values() if len(triples) >= 2),
        "by_rank": ranks,
    }


def campaign_worker_statistics(*, campaign: Campaign) -> list[dict]:
    """One row per worker who submitted work in the campaign (columns: WORKER_CSV_COLUMNS)."""
    assignments = list(
        Assignment.objects.filter(
            hit__campaign=campaign,
            status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED],
        ).values("pk", "worker_id", "worker__pseudonym", "status", "gold_correct", "gold_total", "flags")
    )
    first_decision = {}
    for assignment_id, to_status in (
        AssignmentEvent.objects.filter(
            assignment__hit__campaign=campaign,
            to_status__in=[AssignmentStatus.APPROVED, AssignmentStatus.REJECTED],
        )
        .order_by("created_at", "pk")
        .values_list("assignment_id", "to_status")
    ):
        first_decision.setdefault(assignment_id, to_status)
    seconds = defaultdict(list)
    for worker_id, spent in Answer.objects.filter(
        assignment__hit__campaign=campaign, assignment__submitted_at__isnull=False
    ).values_list("assignment__worker_id", "seconds_spent"):
        seconds[worker_id].append(spent)
    fit = campaign_posterior(campaign=campaign, approved_only=False) if assignments else None
    posterior_accuracy = {}
    if fit is not None and len(fit.workers):
        posterior_accuracy = dict(zip(fit.workers.tolist(), fit.worker_accuracy().tolist(), strict=True))
    rows: dict[int, dict] = {}
    for a in assignments:
        row = rows.setdefault(
            a["worker_id"],
            {
                "worker": a["worker__pseudonym"],
                "assignments": 0,
                "approved": 0,
                "rejected": 0,
                "first_pass": 0,
                "decided": 0,
                "gold_correct": 0,
                "gold_total": 0,
                "flagged": 0,
            },
        )
        row["assignments"] += 1
        row["approved"] += int(a["status"] == AssignmentStatus.APPROVED)
        row["rejected"] += int(a["status"] == AssignmentStatus.REJECTED)
        row["gold_correct"] += a["gold_correct"] or 0
        row["gold_total"] += a["gold_total"] or 0
        row["flagged"] += int(bool(a["flags"]))
        if a["pk"] in first_decision:
            row["decided"] += 1
            row["first_pass"] += int(first_decision[a["pk"]] == AssignmentStatus.APPROVED)
    result = []
    for worker_id, row in sorted(rows.items(), key=lambda item: item[1]["worker"]):
        decided = row.pop("decided")
        first_pass = row.pop("first_pass")
        row["first_pass_approval"] = round(first_pass / decided, 4) if decided else None
        row["gold_accuracy"] = round(row["gold_correct"] / row["gold_total"], 4) if row["gold_total"] else None
        accuracy = posterior_accuracy.get(worker_id)
        row["posterior_accuracy"] = None if accuracy is None else round(accuracy, 4)
        spent = seconds.get(worker_id)
        row["median_seconds_per_item"] = round(median(spent), 2) if spent else None
        result.append({column: row[column] for column in WORKER_CSV_COLUMNS})
    return result


def worker_statistics_csv(*, campaign: Campaign) -> str:
    """The per-worker statistics as CSV text (header: WORKER_CSV_COLUMNS; empty cells for unknowns)."""
    out = io.StringIO()
    writer = csv_writer(out, lineterminator="\n")
    writer.writerow(WORKER_CSV_COLUMNS)
    for row in campaign_worker_statistics(campaign=campaign):
        writer.writerow(["" if row[c] is None else row[c] for c in WORKER_CSV_COLUMNS])
    return out.getvalue()
