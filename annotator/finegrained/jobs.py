"""Pool imports, gallery enlargements and refinement filters as jobs of the shared lifecycle (annotator.core.jobs)."""

from __future__ import annotations

from django.urls import reverse

from annotator.core.jobs import (
    IMPORT_STALE_AFTER,
    RUN_STALE_AFTER,
    JobKind,
    JobState,
    job_kind_register,
    queued_stale_after,
)
from annotator.finegrained.models.pools import (
    ENLARGEMENT_TRANSITIONS,
    POOL_TRANSITIONS,
    EnlargementStatus,
    GalleryEnlargement,
    ImagePool,
    PoolStatus,
)
from annotator.finegrained.models.refinement import (
    REFINEMENT_TRANSITIONS,
    Refinement,
    RefinementStatus,
)
from annotator.finegrained.selectors.access import (
    can_manage_enlargement,
    can_manage_pool,
    can_manage_refinement,
    enlargements_visible_to,
    pools_visible_to,
    refinements_managed_by,
)
from annotator.finegrained.services.pools.enlargement import enlargement_retry
from annotator.finegrained.services.pools.imports import pool_import_retry
from annotator.finegrained.services.refinement.proposals import refinement_filter_retry


class PoolImportKind(JobKind):
    name, label, model, transitions = "pool", "Pool import", ImagePool, POOL_TRANSITIONS

    def retry(self, job):
        return pool_import_retry(pool=job)

    def state(self, pool):
        if pool.status == PoolStatus.IMPORTING:
            return JobState.QUEUED if (pool.report or {}).get("phase") == "queued" else JobState.RUNNING
        return JobState.FAILED if pool.status == PoolStatus.FAILED else JobState.DONE

    def last_alive(self, pool):
        return pool.updated_at

    def stale_after(self, state):
        return IMPORT_STALE_AFTER

    def progress(self, pool):
        return pool.images_done, pool.images_total, "images"

    def error(self, pool):
        if pool.status != PoolStatus.FAILED:
            return ""
        return "; ".join(str(error) for error in ((pool.report or {}).get("errors") or [])[:3])

    def page(self, pool):
        return reverse("pool-detail", args=[pool.pk])

    def visible(self, user):
        return pools_visible_to(user)

    def may_retry(self, user, pool):
        return can_manage_pool(user, pool)


class EnlargementKind(JobKind):
    """Scoring the pool against the targets; `proposed` is done (the preview waits for the add step)."""

    name, label, model, transitions = "enlargement", "Gallery enlargement", GalleryEnlargement, ENLARGEMENT_TRANSITIONS

    def retry(self, job):
        return enlargement_retry(enlargement=job)

    STATES = {
        EnlargementStatus.QUEUED: JobState.QUEUED,
        EnlargementStatus.RUNNING: JobState.RUNNING,
        EnlargementStatus.PROPOSED: JobState.DONE,
        EnlargementStatus.ADDED: JobState.DONE,
        EnlargementStatus.FAILED: JobState.FAILED,
    }

    def last_alive(self, enlargement):
        if enlargement.status == EnlargementStatus.RUNNING:
            return enlargement.started_at
        return enlargement.queued_at or enlargement.created_at

    def stale_after(self, state):
        return queued_stale_after() if state == JobState.QUEUED else RUN_STALE_AFTER

    def progress(self, enlargement):
        done = int(enlargement.status in (EnlargementStatus.PROPOSED, EnlargementStatus.ADDED))
        return done, 1, "scoring"

    def page(self, enlargement):
        return reverse("enlargement-detail", args=[enlargement.pk])

    def visible(self, user):
        return enlargements_visible_to(user)

    def may_retry(self, user, enlargement):
        return can_manage_enlargement(user, enlargement)


class RefinementFilterKind(JobKind):
    """Scoring a refinement's proposals (workers.tasks.refinement): `scoring` runs, a draft with an error
    failed, a scored refinement is done; a draft without an error is no job."""

    name, label, model, transitions = "refinement", "Proposal filter", Refinement, REFINEMENT_TRANSITIONS

    def retry(self, job):
        return refinement_filter_retry(refinement=job)

    def state(self, refinement):
        if refinement.status == RefinementStatus.SCORING:
            return JobState.RUNNING
        if refinement.status == RefinementStatus.DRAFT:
            return JobState.FAILED if refinement.error else None
        return JobState.DONE

    def last_alive(self, refinement):
        return refinement.queued_at or refinement.updated_at

    def stale_after(self, state):
        return RUN_STALE_AFTER

    def progress(self, refinement):
        return int(self.state(refinement) == JobState.DONE), 1, "scoring"

    def page(self, refinement):
        return reverse("refinement-detail", args=[refinement.pk])

    def visible(self, user):
        return refinements_managed_by(user)

    def may_retry(self, user, refinement):
        return can_manage_refinement(user, refinement)


job_kind_register(PoolImportKind())
job_kind_register(EnlargementKind())
job_kind_register(RefinementFilterKind())
