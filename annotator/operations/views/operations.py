"""The operations page: is everything up, what is late and why, what the sweep did (docs/operations.md)."""

from django.shortcuts import render
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from annotator.core.models.accounts import Role
from annotator.core.resilience.health import system_health
from annotator.core.views.access import role_required
from annotator.operations.selectors.operations import (
    late_jobs,
    late_reason,
    late_unscored_by_campaign,
    recent_sweeps,
    sweep_totals,
)
from annotator.operations.services.sweep import stale_times


@require_GET
@never_cache
@role_required(Role.REQUESTER)
def operations_page(request):
    """Requesters see their own late work; staff see everyone's. Health and queues are the same for all."""
    health = system_health()
    stale = stale_times()
    unscored = late_unscored_by_campaign(user=request.user, stale=stale)
    for row in unscored:
        row["why"] = late_reason(kind="scoring", health=health)
    jobs = late_jobs(user=request.user, stale=stale)
    for job in jobs:
        job["why"] = late_reason(kind=job["kind"], health=health, requeue=job["requeue"])
    context = {
        "health": health,
        "checks": sorted(health.checks.items()),
        "unscored": unscored,
        "jobs": jobs,
        "sweeps": recent_sweeps(),
        "totals": sweep_totals(),
        "score_after_seconds": int(stale.score_after.total_seconds()),
    }
    return render(request, "operations/page.html", context)


urlpatterns = [path("operations/", operations_page, name="operations")]
