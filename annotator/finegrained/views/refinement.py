"""Caption refinement pages: the requester's refinements (proposals, filter, launch, review, export), the
worker's correction HITs, a caption's history, and the renovated benchmark's files."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator.analysis.refinement import GENERATORS, word_diff
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_state, job_view
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.crowd.gate import worker_required
from annotator.datasets.models.dataset import Caption
from annotator.datasets.selectors.access import datasets_managed_by
from annotator.finegrained.models.refinement import (
    CorrectionAssignment,
    CorrectionStatus,
    Refinement,
    RefinementProposal,
    RefinementStatus,
)
from annotator.finegrained.selectors.access import can_read_caption_history, refinements_managed_by
from annotator.finegrained.selectors.coarse import RULES as COARSE_RULES
from annotator.finegrained.selectors.coarse import coarse_captions
from annotator.finegrained.selectors.refinement import (
    caption_versions,
    refinement_counts,
    refinement_review_queue,
    refinements_live_for_workers,
)
from annotator.finegrained.services.refinement.benchmark import (
    benchmark_check,
    benchmark_csv_chunks,
    benchmark_export,
    benchmark_json_chunks,
)
from annotator.finegrained.services.refinement.compare import benchmark_compare
from annotator.finegrained.services.refinement.corrections import (
    correction_claim,
    correction_decide,
    correction_return,
    correction_submit,
)
from annotator.finegrained.services.refinement.proposals import (
    SCORERS,
    proposals_generate,
    proposals_import,
    refinement_create,
    refinement_filter,
    refinement_finish,
    refinement_launch,
)
from annotator.labels.models.labelsets import LabelSet
from annotator.labels.selectors.access import label_sets_visible_to
from annotator.labels.selectors.labelsets import labelset_get_readable
from annotator.ranking.models.ranking import RunStatus
from annotator.ranking.selectors.access import runs_visible_to

MAX_SCENES_BYTES = 50 * 1024 * 1024


class RefinementForm(forms.Form):
    name = forms.CharField(max_length=200)
    dataset = forms.ModelChoiceField(queryset=None)
    scorer = forms.ChoiceField(choices=[(s, s) for s in SCORERS] + [("", "none (keep every proposal)")], required=False)
    reward_cents = forms.IntegerField(min_value=0, max_value=10_000, initial=5)

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = datasets_managed_by(user).filter(status="ready")


def _refinement_or_404(request, refinement_id: int):
    refinement = refinements_managed_by(request.user).select_related("dataset").filter(pk=refinement_id).first()
    if refinement is None:
        raise Http404("No such refinement is yours.")
    return refinement


@require_http_methods(["GET", "POST"])
@role_required(Role.REQUESTER)
def refinement_list(request):
    form = RefinementForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        refinement = refinement_create(
            dataset=data["dataset"],
            owner=request.user,
            name=data["name"],
            scorer=data["scorer"],
            reward_cents=data["reward_cents"],
        )
        return redirect("refinement-detail", refinement_id=refinement.pk)
    refinements = refinements_managed_by(request.user).select_related("dataset")
    status = 400 if request.method == "POST" else 200
    return render(request, "refinement/list.html", {"form": form, "refinements": refinements}, status=status)


@require_GET
@role_required(Role.REQUESTER)
def refinement_detail(request, refinement_id: int):
    refinement = _refinement_or_404(request, refinement_id)
    proposals = (
        RefinementProposal.objects.filter(refinement=refinement).select_related("caption").order_by("gold", "pk")[:200]
    )
    rows = [{"proposal": p, "diff": word_diff(p.original_text, p.text)} for p in proposals]
    benchmarks = LabelSet.objects.filter(dataset=refinement.dataset, report__renovated_benchmark=True).order_by(
        "-created_at"
    )[:10]
    job = job_view(refinement) if job_state(refinement) is not None else None
    context = {
        "refinement": refinement,
        "job": job,
        "counts": refinement_counts(refinement=refinement),
        "rows": rows,
        "review": refinement_review_queue(refinement=refinement),
        "generators": [(name, cls.description) for name, cls in sorted(GENERATORS.items())],
        "benchmarks": benchmarks,
        "coarse_rules": COARSE_RULES,
    }
    return render(request, "refinement/detail.html", context)


def _scenes_from_upload(upload) -> dict:
    if upload is None:
        return {}
    if upload.size > MAX_SCENES_BYTES:
        raise ApplicationError("The scenes file is too large.")
    try:
        scenes = json.loads(upload.read().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ApplicationError(
            "The scenes file is not JSON (use the scenes.json of the synthetic generator)."
        ) from None
    if not isinstance(scenes, list) or not all(isinstance(s, dict) and "image_id" in s for s in scenes):
        raise ApplicationError("The scenes file must be a list of scenes with image_id, background and groups.")
    return {str(scene["image_id"]): scene for scene in scenes}


@require_POST
@role_required(Role.REQUESTER)
def refinement_action(request, refinement_id: int, action: str):
    refinement = _refinement_or_404(request, refinement_id)
    if action == "upload":
        report = proposals_import(refinement=refinement, upload=request.FILES.get("file"))
        messages.success(request, f"{report['proposals']} proposals and {report['gold']} gold proposals imported.")
    elif action == "generate":
        context = {"scenes": _scenes_from_upload(request.FILES.get("scenes"))}
        try:
            context["gold_every"] = int(request.POST.get("gold_every") or 0)
        except ValueError:
            raise ApplicationError("Gold every n captions must be a whole number.") from None
        caption_ids = None
        if request.POST.get("only_coarse"):
            coarse = coarse_captions(refinement.dataset, rule=request.POST.get("coarse_rule") or "majority")
            caption_ids = [c.caption_id for c in coarse]
            if not caption_ids:
                raise ApplicationError("No caption of this dataset is coarse by its ranking runs.", status=409)
        report = proposals_generate(
            refinement=refinement,
            generator=request.POST.get("generator", ""),
            context=context,
            caption_ids=caption_ids,
        )
        messages.success(request, f"{report['proposals']} proposals and {report['gold']} gold proposals generated.")
    elif action == "filter":
        refinement_filter(refinement=refinement)
        messages.info(request, "The proposals are being scored.")
    elif action == "launch":
        refinement_launch(refinement=refinement)
        messages.success(request, "Workers can now take the correction HITs.")
    elif action == "finish":
        refinement_finish(refinement=refinement)
    elif action == "export":
        label_set = benchmark_export(
            dataset=refinement.dataset, user=request.user, name=request.POST.get("name") or "renovated"
        )
        messages.success(request, f"Exported {label_set.label}.")
    else:
        raise Http404("No such action.")
    return redirect("refinement-detail", refinement_id=refinement.pk)


@require_POST
@role_required(Role.REQUESTER)
def correction_review(request, correction_id: int):
    correction = get_object_or_404(
        CorrectionAssignment.objects.filter(proposal__refinement__in=refinements_managed_by(request.user)),
        pk=correction_id,
    )
    approve = request.POST.get("decision") == "approve"
    correction_decide(assignment=correction, user=request.user, approve=approve, reason=request.POST.get("reason", ""))
    messages.success(request, "Approved." if approve else "Rejected.")
    return redirect("refinement-detail", refinement_id=correction.proposal.refinement_id)


@require_GET
@role_required(Role.REQUESTER, Role.RESEARCHER)
def caption_history(request, caption_id: int):
    caption = get_object_or_404(Caption.objects.select_related("dataset", "image"), pk=caption_id)
    if not can_read_caption_history(request.user, caption.dataset):
        raise Http404("No such caption.")
    versions = caption_versions(caption=caption)
    rows = []
    previous = None
    for version in versions:
        rows.append({"version": version, "diff": word_diff(previous.text, version.text) if previous else None})
        previous = version
    return render(request, "refinement/history.html", {"caption": caption, "rows": rows})


@require_GET
@role_required(Role.REQUESTER, Role.RESEARCHER)
def benchmark_file(request, label_set_id: int, fmt: str):
    if fmt not in ("json", "csv"):
        raise Http404("The benchmark comes as .json or .csv.")
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    benchmark_check(label_set)
    if fmt == "json":
        chunks, content_type = benchmark_json_chunks(label_set=label_set), "application/json"
    else:
        chunks, content_type = benchmark_csv_chunks(label_set=label_set), "text/csv"
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="benchmark-{label_set.pk}-v{label_set.version}.{fmt}"'
    return response


@require_GET
@role_required(Role.REQUESTER, Role.RESEARCHER)
def benchmark_list(request):
    """The renovated benchmarks the caller may read, each with its old-versus-new comparison."""
    benchmarks = (
        label_sets_visible_to(request.user)
        .filter(report__renovated_benchmark=True)
        .select_related("dataset")
        .order_by("-created_at")
    )
    return render(request, "refinement/benchmarks.html", {"benchmarks": benchmarks})


@require_GET
@role_required(Role.REQUESTER, Role.RESEARCHER)
def benchmark_compare_page(request, label_set_id: int):
    """MSCOCO-FG Tables 4-6: each model's R@k on the old benchmark and on the renovated one."""
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    benchmark_check(label_set)
    runs = list(
        runs_visible_to(request.user)
        .filter(dataset_id=label_set.dataset_id, status=RunStatus.SUCCEEDED)
        .select_related("annotator")
        .order_by("annotator__name", "pk")
    )
    result = benchmark_compare(new=label_set, runs=runs)
    context = {
        "label_set": label_set,
        "result": result,
        "directions": [("t2i", "Caption to image (text-to-image retrieval)"), ("i2t", "Image to caption")],
        "metrics": ["r1", "r5", "r10"],
    }
    return render(request, "refinement/compare.html", context)


# ---- the worker's side -----------------------------------------------------------------------------


@require_GET
@worker_required
def work_corrections(request):
    return render(request, "refinement/work_list.html", {"refinements": refinements_live_for_workers()})


@require_POST
@worker_required
def work_correction_claim(request, refinement_id: int):
    refinement = get_object_or_404(Refinement.objects.filter(status=RefinementStatus.LIVE), pk=refinement_id)
    assignment = correction_claim(refinement=refinement, worker=request.worker)
    if assignment is None:
        messages.info(request, "There is nothing left to correct here. Thank you!")
        return redirect("work-corrections")
    return redirect("work-correction-hit", assignment_id=assignment.pk)


def _own_correction(request, assignment_id: int) -> CorrectionAssignment:
    assignment = (
        CorrectionAssignment.objects.select_related("proposal", "proposal__caption__image", "proposal__refinement")
        .filter(pk=assignment_id, worker=request.worker)
        .first()
    )
    if assignment is None:
        raise Http404("No such correction HIT.")
    return assignment


@require_GET
@worker_required
def work_correction_hit(request, assignment_id: int):
    assignment = _own_correction(request, assignment_id)
    proposal = assignment.proposal
    image = proposal.caption.image
    context = {
        "assignment": assignment,
        "refinement": proposal.refinement,
        "editable": assignment.status == CorrectionStatus.RESERVED,
        "original": proposal.original_text,
        "proposal_text": proposal.text,
        "diff": word_diff(proposal.original_text, proposal.text),
        "image_url": image.file.url if image.file else "",
        "text": assignment.text or proposal.text,
    }
    return render(request, "refinement/hit.html", context)


@require_POST
@worker_required
def work_correction_submit(request, assignment_id: int):
    assignment = _own_correction(request, assignment_id)
    if request.POST.get("action") == "accept":
        text = assignment.proposal.text
    else:
        text = request.POST.get("text", "")
    done = correction_submit(
        assignment=assignment, worker=request.worker, text=text, seconds_spent=request.POST.get("seconds_spent") or 0
    )
    word = "accepted" if done.action == "accept" else f"corrected ({done.edit_distance} characters changed)"
    messages.success(request, f"Saved: {word}.")
    if request.POST.get("next") == "stop":
        return redirect("work-corrections")
    return work_correction_claim(request, done.proposal.refinement_id)


@require_POST
@worker_required
def work_correction_return(request, assignment_id: int):
    assignment = _own_correction(request, assignment_id)
    correction_return(assignment=assignment, worker=request.worker)
    return redirect("work-corrections")


urlpatterns = [
    path("refinements/", refinement_list, name="refinement-list"),
    path("refinements/<int:refinement_id>/", refinement_detail, name="refinement-detail"),
    path("refinements/<int:refinement_id>/<str:action>/", refinement_action, name="refinement-action"),
    path("refinements/corrections/<int:correction_id>/review/", correction_review, name="correction-review"),
    path("captions/<int:caption_id>/history/", caption_history, name="caption-history"),
    path("benchmarks/<int:label_set_id>.<str:fmt>/", benchmark_file, name="benchmark-file"),
    path("research/benchmarks/", benchmark_list, name="benchmark-list"),
    path("research/benchmarks/<int:label_set_id>/compare/", benchmark_compare_page, name="benchmark-compare"),
    path("work/corrections/", work_corrections, name="work-corrections"),
    path("work/corrections/<int:refinement_id>/claim/", work_correction_claim, name="work-correction-claim"),
    path("work/corrections/hit/<int:assignment_id>/", work_correction_hit, name="work-correction-hit"),
    path("work/corrections/hit/<int:assignment_id>/submit/", work_correction_submit, name="work-correction-submit"),
    path("work/corrections/hit/<int:assignment_id>/return/", work_correction_return, name="work-correction-return"),
]
