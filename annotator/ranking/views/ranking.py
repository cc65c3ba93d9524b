"""Machine annotators on the web: start, watch, cancel and retry ranking runs; annotator diversity.

Reading (run pages, progress) is for whoever may see the dataset (annotator.core.selectors.access: a requester's own
datasets, a researcher's shared ones); starting, cancelling and retrying are for the dataset's requester.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_view
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.datasets.models.dataset import Dataset
from annotator.datasets.selectors.access import can_manage_dataset, datasets_visible_to
from annotator.ranking.models.ranking import AnnotatorKind, Direction, MachineAnnotator
from annotator.ranking.selectors.access import runs_visible_to
from annotator.ranking.selectors.ranking import (
    annotator_diversity,
    annotator_list,
    candidates_for_query,
    ranking_run_list,
    ranking_run_progress,
    ranking_run_shards,
)
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.checkpoints import open_clip_model_names
from annotator.ranking.services.kinds import (
    CHECKPOINT_KINDS,
    kind_choices,
    plugin_kinds,
    rankable_kinds,
)
from annotator.ranking.services.runs import ranking_run_cancel, ranking_run_start
from annotator.ranking.views.reranking import rerank_context, run_rerank

READERS = (Role.REQUESTER, Role.RESEARCHER)
BUILT_IN = (AnnotatorKind.MINILM_PIVOT, AnnotatorKind.TFIDF_PIVOT, AnnotatorKind.VISUAL)


def ready_kinds() -> list[str]:
    """Kinds that rank without a checkpoint (registered under their own name on first use): the built-in
    ones and every installed plugin's."""
    return [str(kind) for kind in BUILT_IN] + list(plugin_kinds())


def _require_manage(user, dataset: Dataset) -> None:
    if not can_manage_dataset(user, dataset):
        raise PermissionDenied("Only the requester who owns this dataset can run machine annotators on it.")


def ranking_panel_context(*, request, dataset: Dataset) -> dict:
    """What the ranking panel shows: runs with progress, the start form's choices, diversity."""
    runs = list(ranking_run_list(dataset=dataset)[:20])
    registered = list(annotator_list().filter(kind__in=rankable_kinds()))
    registered_names = {a.name for a in registered}
    plugins = plugin_kinds()
    return {
        "dataset": dataset,
        "runs": [(run, ranking_run_progress(run=run), job_view(run)) for run in runs],
        "annotators": registered,
        "built_in": [
            (kind, "plugin" if kind in plugins else "built in")
            for kind in ready_kinds()
            if kind not in registered_names
        ],
        "kinds": kind_choices(),
        "checkpoint_kinds": [
            (kind, label) for kind, label in kind_choices() if kind in CHECKPOINT_KINDS or kind in plugins
        ],
        "open_clip_models": open_clip_model_names(),
        "may_manage": can_manage_dataset(request.user, dataset),
        "diversity": annotator_diversity(dataset=dataset, direction=Direction.T2I),
        "request": request,
    }


@require_GET
@role_required(*READERS)
def dataset_ranking(request, dataset_id: int):
    dataset = get_object_or_404(datasets_visible_to(request.user), pk=dataset_id)
    return render(request, "ranking/dataset.html", ranking_panel_context(request=request, dataset=dataset))


def _back(request, fallback: str):
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(fallback)


@require_POST
@role_required(Role.REQUESTER)
def ranking_start(request, dataset_id: int):
    dataset = get_object_or_404(datasets_visible_to(request.user), pk=dataset_id)
    _require_manage(request.user, dataset)
    choice = request.POST.get("annotator", "")
    if choice.startswith("kind:"):
        kind = choice.removeprefix("kind:")
        if kind not in ready_kinds():
            raise ApplicationError("Choose an annotator from the list.")
        annotator = annotator_register(name=kind, kind=kind)
    else:
        try:
            annotator = MachineAnnotator.objects.get(pk=int(choice))
        except (ValueError, MachineAnnotator.DoesNotExist):
            raise ApplicationError("Choose an annotator from the list.") from None
    run = ranking_run_start(
        dataset=dataset, annotator=annotator, top_k=request.POST.get("top_k", 25), created_by=request.user
    )
    messages.success(request, f"Ranking with {annotator.name}: run {run.pk} is {run.get_status_display().lower()}.")
    return redirect("ranking-run", run_id=run.pk)


@require_POST
@role_required(Role.REQUESTER)
def annotator_create(request):
    model_name = request.POST.get("model", "").strip()
    annotator = annotator_register(
        name=request.POST.get("name", ""),
        kind=request.POST.get("kind", ""),
        checkpoint_path=request.POST.get("checkpoint_path", ""),
        config={"model": model_name} if model_name else None,
    )
    messages.success(request, f"Annotator {annotator.name} ({annotator.kind}) is registered.")
    return _back(request, "home")


@require_GET
@role_required(*READERS)
def run_detail(request, run_id: int):
    run = get_object_or_404(runs_visible_to(request.user).select_related("annotator", "dataset"), pk=run_id)
    default = Direction.I2I if run.annotator.kind == "visual" else Direction.T2I  # it ranks images only
    direction = request.GET.get("direction", default)
    if direction not in Direction.values:
        direction = default
    queries = run.dataset.captions if direction in (Direction.T2I, Direction.T2T) else run.dataset.images
    query = None
    try:
        query = queries.filter(pk=int(request.GET["query"])).first() if "query" in request.GET else queries.first()
    except ValueError:
        query = None
    may_manage = can_manage_dataset(request.user, run.dataset)
    context = {
        **rerank_context(run=run, may_manage=may_manage),
        "run": run,
        "progress": ranking_run_progress(run=run),
        "shards": ranking_run_shards(run=run),
        "job": job_view(run),
        "may_manage": may_manage,
        "direction": direction,
        "query": query,
        "candidates": candidates_for_query(run=run, direction=direction, query_id=query.pk) if query else [],
    }
    return render(request, "ranking/run.html", context)


@require_POST
@role_required(Role.REQUESTER)
def run_cancel(request, run_id: int):
    run = get_object_or_404(runs_visible_to(request.user).select_related("dataset"), pk=run_id)
    _require_manage(request.user, run.dataset)
    ranking_run_cancel(run=run)
    messages.success(request, f"Run {run.pk} is cancelled; a retry resumes where it stopped.")
    return _back(request, f"/ranking/runs/{run.pk}/")


urlpatterns = [
    path("datasets/<int:dataset_id>/ranking/", dataset_ranking, name="dataset-ranking"),
    path("datasets/<int:dataset_id>/rank/", ranking_start, name="ranking-start"),
    path("ranking/annotators/", annotator_create, name="annotator-register"),
    path("ranking/runs/<int:run_id>/", run_detail, name="ranking-run"),
    path("ranking/runs/<int:run_id>/cancel/", run_cancel, name="ranking-run-cancel"),
    path("ranking/runs/<int:run_id>/rerank/", run_rerank, name="ranking-run-rerank"),
]
