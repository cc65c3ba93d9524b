"""Crisscrossed Captions' Table 5 on a CxC label set's page: upload a model's similarity scores of the set's
rated pairs, or choose one of Vericap's machine annotators to compute them; they are scored by a worker with
CxC's bootstrap Spearman's r and join the set's leaderboard. The panel on the set's page (the labels step's
page, through annotator/templatetags/research_panels.py) lists the set's Table 5 evaluations with their status."""

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_POST

from annotator.analysis.cxc_table5 import TASK_DIRECTION
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_view
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.labels.selectors.labelsets import labelset_get_readable
from annotator.research.selectors.cxc_table5 import labelset_cxc_evaluations
from annotator.research.services.cxc_table5 import (
    cxc_annotator_evaluation_request,
    cxc_annotator_kinds,
    cxc_evaluation_request,
    cxc_scores_read,
)

READERS = (Role.REQUESTER, Role.RESEARCHER)
SCORE_FIELDS = ("sts_scores", "sis_scores", "sits_scores")
FORMAT_TASK = {"cxc_sts": "sts", "cxc_sis": "sis", "cxc_sits": "sits"}


def _whole(value: str, *, what: str, default: int | None) -> int | None:
    if not (value or "").strip():
        return default
    try:
        return int(value)
    except ValueError:
        raise ApplicationError(f"{what} is a whole number.") from None


def cxc_table5_panel_context(*, request, label_set) -> dict:
    """What the Table 5 panel of a CxC label set's page shows: the form's choices and the set's evaluations,
    an annotator's with its job (the progress widget follows it while a worker computes the scores)."""
    rows = []
    for evaluation in labelset_cxc_evaluations(label_set=label_set, user=request.user):
        kind = (evaluation.settings or {}).get("annotator_kind", "")
        tasks = (evaluation.results or {}).get("cxc", {}).get("tasks", {})
        rows.append(
            {
                "evaluation": evaluation,
                "source": f"computed by {kind}" if kind else "uploaded scores",
                "job": job_view(evaluation) if kind else None,
                "tasks": list(tasks.values()),
            }
        )
    return {
        "label_set": label_set,
        "task": FORMAT_TASK.get(label_set.source_format, ""),
        "kinds": cxc_annotator_kinds(),
        "rows": rows,
        "watching": any(row["job"] and row["job"]["active"] for row in rows),
    }


@role_required(*READERS)
@require_POST
def labelset_cxc_table5_view(request, label_set_id: int):
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    uploads = [
        (request.FILES[field].name, request.FILES[field].read()) for field in SCORE_FIELDS if field in request.FILES
    ]
    kind = request.POST.get("annotator", "").strip()
    samples = _whole(request.POST.get("samples", ""), what="Bootstrap samples", default=None)
    seed = _whole(request.POST.get("seed", ""), what="The seed", default=0) or 0
    if kind:
        if uploads:
            raise ApplicationError("Upload the model's scores or choose an annotator to compute them, not both.")
        evaluation, created = cxc_annotator_evaluation_request(
            label_set=label_set,
            user=request.user,
            kind=kind,
            name=request.POST.get("name", ""),
            samples=samples,
            seed=seed,
        )
        if created:
            messages.success(
                request,
                f"Computing {kind}'s scores of the rated pairs in the background; {evaluation.name} joins the "
                "board when they are scored (its status is below).",
            )
        else:
            messages.info(
                request, f"{evaluation.name} was asked for on these ratings already (evaluation {evaluation.pk})."
            )
        return redirect(f"/research/labelsets/{label_set.pk}/#cxc-table5")
    scores = cxc_scores_read(uploads)
    evaluation, created = cxc_evaluation_request(
        label_set=label_set,
        user=request.user,
        name=request.POST.get("name", ""),
        scores=scores,
        samples=samples,
        seed=seed,
    )
    if created:
        messages.success(
            request, f"Scoring {evaluation.name} by CxC's bootstrap Spearman's r; it joins the board when done."
        )
    else:
        messages.info(request, f"{evaluation.name} was scored on these ratings already (evaluation {evaluation.pk}).")
    direction = TASK_DIRECTION[next(iter(scores))]
    return redirect(f"/research/leaderboard/labelset/{label_set.pk}/?direction={direction}&sort=cxc_spearman#board")


urlpatterns = [
    path(
        "research/labelsets/<int:label_set_id>/cxc-table5",
        labelset_cxc_table5_view,
        name="labelset-cxc-table5",
    ),
]
