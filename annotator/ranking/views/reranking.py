"""Re-ranking on the web: re-score a finished run's top K with a cross-encoder or a vision-language judge (from the
run's page)."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.datasets.selectors.access import can_manage_dataset
from annotator.ranking.models.ranking import MachineAnnotator, RunStatus
from annotator.ranking.selectors.access import runs_visible_to
from annotator.ranking.services.reranking import RERANKING_KINDS, rerank_run_start


def rerank_context(*, run, may_manage: bool) -> dict:
    """What the run page's re-ranking form offers: the registered cross-encoders and judges, for a succeeded run."""
    offer = may_manage and run.status == RunStatus.SUCCEEDED
    cross_encoders = list(MachineAnnotator.objects.filter(kind__in=RERANKING_KINDS).order_by("name"))
    return {"cross_encoders": cross_encoders if offer else [], "reranked_by": list(run.reranked_by.order_by("pk"))}


@require_POST
@role_required(Role.REQUESTER)
def run_rerank(request, run_id: int):
    run = get_object_or_404(runs_visible_to(request.user).select_related("dataset"), pk=run_id)
    if not can_manage_dataset(request.user, run.dataset):
        raise PermissionDenied("Only the requester who owns this dataset can re-rank its runs.")
    try:
        annotator = MachineAnnotator.objects.get(pk=int(request.POST.get("annotator", "")))
    except (ValueError, MachineAnnotator.DoesNotExist):
        raise ApplicationError("Choose a cross-encoder or a vision-language judge from the list.") from None
    rerank = rerank_run_start(
        source=run, annotator=annotator, top_k=request.POST.get("top_k", run.top_k), created_by=request.user
    )
    messages.success(request, f"Re-ranking run {run.pk} with {annotator.name}: run {rerank.pk} is {rerank.status}.")
    return redirect("ranking-run", run_id=rerank.pk)
