"""The ranking run and shard lifecycle: claim, heartbeat owners, finish, fail, reopen, dispatch.

A run is QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED (RUN_TRANSITIONS); its query rows are cut into
shards (RankingShard, SHARD_TRANSITIONS) that any `gpu` worker claims under the row lock and commits chunk by
chunk. Every status write of a run or a shard outside the start, cancel and retry requests (runs.py) is here;
workers/ranking/pipeline.py does the model work and calls these.
"""

from __future__ import annotations

import os
import socket
import time

from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from annotator.core import task_names
from annotator.core.jobs import job_stalled, shard_stale_after
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_on_commit
from annotator.ranking.models.ranking import (
    RUN_TRANSITIONS,
    SHARD_TRANSITIONS,
    Direction,
    RankingRun,
    RankingShard,
    RunStatus,
    ShardStatus,
)

DIRECTIONS = (Direction.I2T, Direction.T2I, Direction.T2T, Direction.I2I)


# Which id space each direction's queries and targets live in.
SPACES = {
    Direction.I2T: ("images", "texts"),
    Direction.T2I: ("texts", "images"),
    Direction.T2T: ("texts", "texts"),
    Direction.I2I: ("images", "images"),
}


def run_chunks_done(run: RankingRun) -> int:
    """Encoded units recorded on the run plus the committed chunks of all its shards."""
    progress = run.progress or {}
    encoded = int(progress.get("texts", 0)) + int(progress.get("images", 0))
    ranked = RankingShard.objects.filter(run_id=run.pk).aggregate(total=Sum("chunks_done"))["total"] or 0
    return encoded + int(ranked)


def shard_ranges(plan: dict) -> list[dict]:
    """The shards of a plan: per direction, runs of `chunks_per_shard` chunks of query rows."""
    sizes, per_shard = plan["sizes"], int(plan["chunks_per_shard"])
    shards = []
    for direction in plan["directions"]:
        rows, n_chunks = int(plan["rows_per_chunk"][direction]), int(plan[direction])
        n_queries, n_targets = sizes[SPACES[direction][0]], sizes[SPACES[direction][1]]
        for first in range(0, n_chunks, per_shard):
            chunks = min(per_shard, n_chunks - first)
            start, stop = first * rows, min(n_queries, (first + chunks) * rows)
            shards.append(
                {
                    "direction": direction,
                    "start": start,
                    "stop": stop,
                    "chunk_first": first,
                    "chunks": chunks,
                    "cost": float(stop - start) * n_targets,
                }
            )
    return shards


def shards_create(run: RankingRun, plan: dict) -> None:
    """Create the plan's shards that do not exist yet (idempotent: unique run, direction, start)."""
    now = timezone.now()
    RankingShard.objects.bulk_create(
        [RankingShard(run_id=run.pk, queued_at=now, **shard) for shard in shard_ranges(plan)],
        ignore_conflicts=True,
    )


def shards_reopen(run_id: int) -> int:
    """Queue again the shards of a resumed run that failed or whose worker went silent; returns how many."""
    stale_before = timezone.now() - shard_stale_after()
    return (
        RankingShard.objects.filter(run_id=run_id)
        .filter(Q(status=ShardStatus.FAILED) | Q(status=ShardStatus.RUNNING, beat_at__lt=stale_before))
        .update(status=ShardStatus.QUEUED, task_id="", queued_at=timezone.now())
    )


def shards_pending(run_id: int, *, order: str) -> list[int]:
    """Ids of the shards not done: in plan order (in-process), or heaviest first (handed out to workers)."""
    shards = RankingShard.objects.filter(run_id=run_id).exclude(status=ShardStatus.DONE)
    if order == "plan":
        position = {direction: index for index, direction in enumerate(DIRECTIONS)}
        rows = sorted(shards.values_list("pk", "direction", "start"), key=lambda r: (position[r[1]], r[2]))
        return [pk for pk, _d, _s in rows]
    return list(shards.order_by("-cost", "pk").values_list("pk", flat=True))


def shards_dispatch(run_id: int) -> list[int]:
    """Send one `ranking_shard_task` per queued shard to the `gpu` queue, heaviest first (a short tail)."""
    ids = list(
        RankingShard.objects.filter(run_id=run_id, status=ShardStatus.QUEUED)
        .order_by("-cost", "pk")
        .values_list("pk", flat=True)
    )
    RankingShard.objects.filter(pk__in=ids).update(queued_at=timezone.now())
    for shard_id in ids:
        enqueue_on_commit(task_names.RANKING_SHARD, shard_id)
    return ids


def shard_stalled(shard: RankingShard, *, now=None) -> bool:
    alive = shard.beat_at or shard.started_at
    return alive is None or alive <= (now or timezone.now()) - shard_stale_after()


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def shard_claim(shard_id: int, *, task_id: str | None) -> RankingShard | None:
    """QUEUED -> RUNNING for this task (attempts + 1); None when there is nothing to do.

    Under the shard's row lock: a done or failed shard, or one of a run that is not running, is left alone;
    a running shard belongs to the task that claimed it, so a duplicate message does nothing unless the
    shard went silent for the stale time (its worker died): then this task takes it over and the old one,
    if it still lives, stops at its next chunk. In-process calls (task_id None) always take it.
    """
    with transaction.atomic():
        shard = RankingShard.objects.select_for_update().filter(pk=shard_id).first()
        if shard is None or shard.status in (ShardStatus.DONE, ShardStatus.FAILED):
            return None
        if RankingRun.objects.filter(pk=shard.run_id).values_list("status", flat=True).first() != RunStatus.RUNNING:
            return None
        if (
            shard.status == ShardStatus.RUNNING
            and task_id is not None
            and shard.task_id not in ("", task_id)
            and not shard_stalled(shard)
        ):
            return None
        if shard.status == ShardStatus.QUEUED:
            check_transition(
                transitions=SHARD_TRANSITIONS, current=shard.status, target=ShardStatus.RUNNING, what="ranking shard"
            )
        now = timezone.now()
        shard.status = ShardStatus.RUNNING
        shard.task_id = task_id or ""
        shard.worker = worker_name()[:200]
        shard.attempts += 1
        shard.started_at = shard.started_at or now
        shard.beat_at = now
        shard.error = ""
        shard.save(update_fields=["status", "task_id", "worker", "attempts", "started_at", "beat_at", "error"])
    return shard


def shard_release(shard_id: int, *, task_id: str | None) -> None:
    """Its run stopped (cancelled, failed): a shard this task holds goes back to queued for a later retry."""
    with transaction.atomic():
        RankingShard.objects.filter(pk=shard_id, status=ShardStatus.RUNNING, task_id=task_id or "").update(
            status=ShardStatus.QUEUED, task_id=""
        )


def shard_fail(shard_id: int, message: str) -> None:
    """The shard failed (an error, not a lost worker): it and its run are marked failed; Retry resumes."""
    with transaction.atomic():
        shard = RankingShard.objects.select_for_update().get(pk=shard_id)
        if shard.status == ShardStatus.RUNNING:
            shard.status, shard.error = ShardStatus.FAILED, message[:2000]
            shard.save(update_fields=["status", "error"])
        run_fail(shard.run_id, f"shard {shard.direction} [{shard.start}, {shard.stop}): {message}")


def shard_finish(shard_id: int, *, task_id: str | None) -> RankingShard | None:
    """Every chunk of the shard is committed: RUNNING -> DONE, then the run succeeds if it was the last one.

    Takes SELECT ... FOR UPDATE on the shard's row, then (its own transaction) on the run's in
    run_finish_if_complete. None, and nothing written, when this task no longer holds the shard: it is not
    running or another task took it over (the sweep handed it on); the caller stops. A second call for a done
    shard is such a call.
    """
    with transaction.atomic():
        shard = RankingShard.objects.select_for_update().get(pk=shard_id)
        if shard.status != ShardStatus.RUNNING or shard.task_id != (task_id or ""):
            return None
        check_transition(
            transitions=SHARD_TRANSITIONS, current=shard.status, target=ShardStatus.DONE, what="ranking shard"
        )
        shard.status = ShardStatus.DONE
        shard.finished_at = shard.beat_at = timezone.now()
        shard.save(update_fields=["status", "finished_at", "beat_at"])
    run_finish_if_complete(shard.run_id)
    return shard


def run_finish_if_complete(run_id: int) -> str:
    """Mark a running run succeeded once every shard is done (whoever finishes last); its status."""
    with transaction.atomic():
        run = RankingRun.objects.select_for_update().get(pk=run_id)
        plan = (run.progress or {}).get("plan")
        if run.status != RunStatus.RUNNING or not plan:
            return run.status
        encoded = int(run.progress.get("texts", 0)) >= int(plan["texts"]) and int(run.progress.get("images", 0)) >= int(
            plan["images"]
        )
        if not encoded or RankingShard.objects.filter(run_id=run_id).exclude(status=ShardStatus.DONE).exists():
            return run.status
        check_transition(
            transitions=RUN_TRANSITIONS, current=run.status, target=RunStatus.SUCCEEDED, what="ranking run"
        )
        run.status = RunStatus.SUCCEEDED
        run.stage = "done"
        run.chunks_done = run_chunks_done(run)
        run.finished_at = timezone.now()
        run.progress["beat_at"] = time.time()
        run.save(update_fields=["status", "stage", "chunks_done", "finished_at", "progress"])
        return run.status


def run_claim(run_id: int, *, device: str, task_id: str | None = None) -> RankingRun | None:
    """QUEUED -> RUNNING, or RUNNING again (a redelivered task of a killed worker resumes). None: nothing to do.

    Locks the run row; a finished, failed or cancelled run is left as it is (the task is idempotent). A
    running run belongs to the task that claimed it (`task_id`, kept in progress): a redelivery of that same
    task resumes it, another task (a duplicate the sweep queued while the message was only late) does
    nothing unless the run stalled (annotator.core.jobs.job_stalled); then it takes the run over and the
    old task, if it still lives, stops at its next unit. In-process calls (task_id None) always resume.
    """
    with transaction.atomic():
        run = RankingRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return None
        owner = (run.progress or {}).get("task_id")
        if (
            run.status == RunStatus.RUNNING
            and task_id is not None
            and owner not in (None, task_id)
            and not job_stalled(run)
        ):
            return None
        if task_id is not None:
            run.progress = {**(run.progress or {}), "task_id": task_id}
        if run.status == RunStatus.QUEUED:
            check_transition(
                transitions=RUN_TRANSITIONS, current=run.status, target=RunStatus.RUNNING, what="ranking run"
            )
            run.status = RunStatus.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.device = device
        run.error = ""
        run.save(update_fields=["status", "started_at", "device", "error", "progress"])
    return RankingRun.objects.select_related("annotator", "dataset").get(pk=run_id)


def run_fail(run_id: int, message: str) -> None:
    with transaction.atomic():
        run = RankingRun.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.RUNNING:
            return
        run.status = RunStatus.FAILED
        run.error = message[:2000]
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
