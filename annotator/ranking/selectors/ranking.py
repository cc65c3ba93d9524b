"""Reads for ranking runs: progress and ETA, runs of a dataset, candidates of a query, annotator diversity."""

import time

from django.db.models import Count, QuerySet

from annotator.analysis.diversity import diversity_matrices
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.ranking.models.ranking import (
    Candidate,
    Direction,
    MachineAnnotator,
    RankingRun,
    RankingShard,
    RunStatus,
    ShardStatus,
)


def ranking_run_progress(*, run: RankingRun, now: float | None = None) -> dict:
    """Status, percent done, and an ETA from the rate of this execution (not counting resumed work)."""
    now = time.time() if now is None else now
    total, done = run.chunks_total, run.chunks_done
    percent = 100.0 if run.status == RunStatus.SUCCEEDED else (100.0 * done / total if total else 0.0)
    eta = None
    progress = run.progress or {}
    resumed_at = progress.get("resumed_at")
    done_here = done - int(progress.get("done_at_resume", 0))
    if run.status == RunStatus.RUNNING and resumed_at and done_here > 0 and total > done:
        eta = (now - float(resumed_at)) / done_here * (total - done)
    return {
        "id": run.pk,
        "status": run.status,
        "stage": run.stage,
        "chunks_done": done,
        "chunks_total": total,
        "percent": round(percent, 1),
        "eta_seconds": None if eta is None else round(eta, 1),
        "device": run.device,
        "error": run.error,
        "top_k": run.top_k,
        "annotator": run.annotator.name,
        "dataset": run.dataset.name,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def ranking_run_shards(*, run: RankingRun) -> dict:
    """How the run's top-K work is spread: shards per status, and how many worker processes took part."""
    rows = RankingShard.objects.filter(run=run).values("status").annotate(n=Count("pk"))
    counts = {status: 0 for status in ShardStatus.values} | {row["status"]: row["n"] for row in rows}
    workers = RankingShard.objects.filter(run=run).exclude(worker="").values("worker").distinct().count()
    return {**counts, "total": sum(counts.values()), "workers": workers}


def ranking_run_list(*, dataset: Dataset | None = None) -> QuerySet[RankingRun]:
    runs = RankingRun.objects.select_related("annotator", "dataset").order_by("-created_at")
    return runs.filter(dataset=dataset) if dataset is not None else runs


def annotator_list() -> QuerySet[MachineAnnotator]:
    return MachineAnnotator.objects.order_by("name")


def candidates_for_query(*, run: RankingRun, direction: str, query_id: int, limit: int | None = None) -> list[dict]:
    """The ranked targets of one query, best first, with the caption text and image for display."""
    rows = list(
        Candidate.objects.filter(run=run, direction=direction, query_id=query_id)
        .order_by("rank")
        .values("target_id", "rank", "score")[: limit or run.top_k]
    )
    target_ids = [row["target_id"] for row in rows]
    if direction in (Direction.I2T, Direction.T2T):
        texts = dict(Caption.objects.filter(pk__in=target_ids).values_list("pk", "text"))
        for row in rows:
            row["text"] = texts.get(row["target_id"], "")
    else:
        images = Image.objects.in_bulk(target_ids)
        for row in rows:
            row["image"] = images.get(row["target_id"])
    return rows


def latest_succeeded_runs(*, dataset: Dataset) -> list[RankingRun]:
    """The newest succeeded run of each annotator on `dataset`."""
    seen, latest = set(), []
    for run in ranking_run_list(dataset=dataset).filter(status=RunStatus.SUCCEEDED):
        if run.annotator_id not in seen:
            seen.add(run.annotator_id)
            latest.append(run)
    return sorted(latest, key=lambda r: r.annotator.name)


def top_lists(*, run: RankingRun, direction: str, query_ids=None) -> dict[int, list[int]]:
    """query id -> target ids in rank order."""
    rows = Candidate.objects.filter(run=run, direction=direction)
    if query_ids is not None:
        rows = rows.filter(query_id__in=list(query_ids))
    lists: dict[int, list[int]] = {}
    for query_id, target_id in (
        rows.order_by("query_id", "rank").values_list("query_id", "target_id").iterator(chunk_size=10000)
    ):
        lists.setdefault(query_id, []).append(target_id)
    return lists


def annotator_diversity(
    *, dataset: Dataset, direction: str = Direction.T2I, k: int = 25, max_queries: int = 2000
) -> dict | None:
    """ECCV Table A.1 over the latest succeeded run of each annotator: Kendall's tau-b and average top-1 rank.

    Uses the queries every run of this direction ranked, at most `max_queries` of them (a fixed sample: the
    lowest ids after a seeded shuffle), so the dataset page stays fast on a large dataset. None with fewer
    than two runs.
    """
    # Only the runs that rank this direction (the visual annotator ranks image-image pairs alone).
    runs = [
        run
        for run in latest_succeeded_runs(dataset=dataset)
        if Candidate.objects.filter(run=run, direction=direction).exists()
    ]
    if len(runs) < 2:
        return None
    common = None
    for run in runs:
        ids = set(Candidate.objects.filter(run=run, direction=direction, rank=1).values_list("query_id", flat=True))
        common = ids if common is None else common & ids
    sample = sorted(common or ())
    if len(sample) > max_queries:
        import random

        sample = sorted(random.Random(0).sample(sample, max_queries))
    lists = [top_lists(run=run, direction=direction, query_ids=sample) for run in runs]
    per_run = [[lists_of.get(q, [])[:k] for q in sample] for lists_of in lists]
    result = diversity_matrices(per_run, k=k)
    result["annotators"] = [run.annotator.name for run in runs]
    result["runs"] = [run.pk for run in runs]
    result["direction"] = direction
    result["k"] = k
    return result
