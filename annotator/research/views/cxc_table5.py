"""Crisscrossed Captions' Table 5 on a CxC label set's page: upload a model's similarity scores of the set's
rated pairs; they are scored by a worker with CxC's bootstrap Spearman's r and join the set's leaderboard."""

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_POST

from annotator.analysis.cxc_table5 import TASK_DIRECTION
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.labels.selectors.labelsets import labelset_get_readable
from annotator.research.services.cxc_table5 import cxc_evaluation_request, cxc_scores_read

READERS = (Role.REQUESTER, Role.RESEARCHER)
SCORE_FIELDS = ("sts_scores", "sis_scores", "sits_scores")


def _whole(value: str, *, what: str, default: int | None) -> int | None:
    if not (value or "").strip():
        return default
    try:
        return int(value)
    except ValueError:
        raise ApplicationError(f"{what} is a whole number.") from None


@role_required(*READERS)
@require_POST
def labelset_cxc_table5_view(request, label_set_id: int):
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    uploads = [
        (request.FILES[field].name, request.FILES[field].read()) for field in SCORE_FIELDS if field in request.FILES
    ]
    scores = cxc_scores_read(uploads)
    evaluation, created = cxc_evaluation_request(
        label_set=label_set,
        user=request.user,
        name=request.POST.get("name", ""),
        scores=scores,
        samples=_whole(request.POST.get("samples", ""), what="Bootstrap samples", default=None),
        seed=_whole(request.POST.get("seed", ""), what="The seed", default=0) or 0,
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
