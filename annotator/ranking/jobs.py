"""Ranking runs as jobs of the shared lifecycle (annotator.core.jobs)."""

from __future__ import annotations

from django.db.models import Max
from django.urls import reverse

from annotator.core.jobs import (
    RUN_STALE_AFTER,
    JobKind,
    JobState,
    epoch_time,
    job_kind_register,
    latest_moment,
    queued_stale_after,
)
from annotator.ranking.models.ranking import RUN_TRANSITIONS, RankingRun, RankingShard, RunStatus
from annotator.ranking.selectors.access import can_manage_run, runs_visible_to
from annotator.ranking.services.runs import ranking_run_retry


class RankingKind(JobKind):
    name, label, model, transitions = "ranking", "Ranking run", RankingRun, RUN_TRANSITIONS

    def retry(self, job):
        return ranking_run_retry(run=job)

    def last_alive(self, run):
        """A queued run: when it was queued. A running one: the heartbeat the coordinator writes into
        `progress`, its resume, its start, or the latest chunk any of its shards committed."""
        if run.status == RunStatus.QUEUED:
            return run.queued_at or run.created_at
        progress = run.progress or {}
        shard_beat = RankingShard.objects.filter(run_id=run.pk).aggregate(latest=Max("beat_at"))["latest"]
        alive = latest_moment(
            epoch_time(progress.get("beat_at")), epoch_time(progress.get("resumed_at")), run.started_at, shard_beat
        )
        return alive or run.created_at

    def stale_after(self, state):
        return queued_stale_after() if state == JobState.QUEUED else RUN_STALE_AFTER

    def progress(self, run):
        return run.chunks_done, run.chunks_total, "chunks"

    def page(self, run):
        return reverse("ranking-run", args=[run.pk])

    def visible(self, user):
        return runs_visible_to(user)

    def may_retry(self, user, run):
        return can_manage_run(user, run)


job_kind_register(RankingKind())
