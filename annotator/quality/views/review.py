"""Requester pages for quality control: the review queue, one assignment, bulk decisions, the campaign
quality page (approval rates, ECCV Tables B.1-B.3, policy, aggregation, worker blocks). Post-processing
(ECCV App. C) is the labels step's page (annotator/labels/views/cleanup.py), under /review/ too.

Requester-only; a requester reaches only their own campaigns (and those shared with them): any other id
is a 404, the same answer as for an id that does not exist. Every change is a POST with CSRF that calls
a service; service errors render as a 4xx page. Routes live under /review/ (the campaign area owns
/campaigns/<id>/<action>/).
"""

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotator.analysis.posterior import COVERAGE_TARGET, SHORTFALL_LEVEL
from annotator.campaigns.models.campaign import LABEL_MODELS
from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.campaigns.services.policy import campaign_policy_update
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.queue import enqueue_on_commit
from annotator.core.views.access import role_required
from annotator.crowd.models.crowd import FLAG_LABELS, Assignment, Worker
from annotator.quality.models.decisions import ExternalDecision
from annotator.quality.selectors.collusion import campaign_collusion_review
from annotator.quality.selectors.external_decisions import (
    external_decisions_failed,
    external_decisions_unsent_count,
)
from annotator.quality.selectors.posterior import campaign_calibration
from annotator.quality.selectors.quality import (
    assignment_review_detail,
    campaign_list_for_review,
    campaign_quality,
    review_awaiting_auto_approval,
    review_counts,
    review_queue,
)
from annotator.quality.selectors.redundancy import campaign_redundancy
from annotator.quality.services.decisions import (
    assignment_approve,
    assignment_reject,
    assignments_bulk_decide,
)
from annotator.quality.services.external_decisions import external_decision_retry
from annotator.quality.services.peers import assignment_peer_agreement
from annotator.quality.services.trust import (
    worker_block,
    worker_standing,
    worker_trust,
    worker_unblock,
)
from annotator.quality.views.judging import campaign_judge

QUEUE_PAGE_SIZE = 200


def _campaign(request, campaign_id: int):
    campaign = campaigns_managed_by(request.user).filter(pk=campaign_id).first()
    if campaign is None:
        raise Http404("No such campaign.")
    return campaign


def _assignment(request, assignment_id: int) -> Assignment:
    assignment = Assignment.objects.select_related("hit__campaign", "worker").filter(pk=assignment_id).first()
    if assignment is None or not campaigns_managed_by(request.user).filter(pk=assignment.hit.campaign_id).exists():
        raise Http404("No such assignment.")
    return assignment


def _flag_labels(flags) -> list[str]:
    return [FLAG_LABELS.get(flag, flag) for flag in flags or []]


@require_GET
@role_required(Role.REQUESTER)
def review_index(request):
    """Where the nav's Review goes: the requester's launched campaigns with the submissions awaiting review."""
    return render(request, "review/index.html", {"campaigns": campaign_list_for_review(user=request.user)})


@require_GET
@role_required(Role.REQUESTER)
def review_queue_page(request, campaign_id: int):
    campaign = _campaign(request, campaign_id)
    rows = [
        {"assignment": a, "flags": _flag_labels(a.flags)} for a in review_queue(campaign=campaign)[:QUEUE_PAGE_SIZE]
    ]
    return render(
        request,
        "review/queue.html",
        {
            "campaign": campaign,
            "rows": rows,
            "awaiting": review_awaiting_auto_approval(campaign=campaign)[:QUEUE_PAGE_SIZE],
            "counts": review_counts(campaign=campaign),
            "limit": QUEUE_PAGE_SIZE,
            "failed_decisions": external_decisions_failed(campaign=campaign)[:QUEUE_PAGE_SIZE],
            "unsent_decisions": external_decisions_unsent_count(campaign=campaign),
            "collusion": campaign_collusion_review(campaign=campaign),
            # Worker ids (the platform's and MTurk's) only to the campaign's owner; a requester it is shared
            # with sees pseudonyms.
            "show_worker_ids": request.user.pk == campaign.owner_id,
        },
    )


@require_GET
@role_required(Role.REQUESTER)
def review_assignment_page(request, assignment_id: int):
    assignment = _assignment(request, assignment_id)
    detail = assignment_review_detail(assignment=assignment)
    agreeing, compared = assignment_peer_agreement(assignment=assignment)
    owner_id = assignment.hit.campaign.owner_id
    trust = worker_trust(worker=assignment.worker, requester_id=owner_id)
    return render(
        request,
        "review/assignment.html",
        {
            **detail,
            "flags": _flag_labels(assignment.flags),
            "agreement": {"agreeing": agreeing, "compared": compared},
            "trust": trust,
            "standing": worker_standing(worker=assignment.worker, requester_id=owner_id),
            "can_decide": assignment.status in ("submitted", "approved", "rejected"),
        },
    )


@require_POST
@role_required(Role.REQUESTER)
def review_decide(request, assignment_id: int):
    assignment = _assignment(request, assignment_id)
    decision = request.POST.get("decision")
    reason = request.POST.get("reason", "").strip()
    if decision == "approve":
        assignment_approve(assignment=assignment, actor=request.user, reason=reason)
        messages.success(request, f"Assignment {assignment.pk} approved.")
    elif decision == "reject":
        assignment_reject(assignment=assignment, actor=request.user, reason=reason)
        messages.success(request, f"Assignment {assignment.pk} rejected; its HIT is offered to another worker.")
    else:
        raise ApplicationError("Choose approve or reject.")
    nxt = review_queue(campaign=assignment.hit.campaign).exclude(pk=assignment.pk).first()
    if nxt is not None and request.POST.get("next") == "1":
        return redirect("review-assignment", assignment_id=nxt.pk)
    return redirect("review-queue", campaign_id=assignment.hit.campaign_id)


@require_POST
@role_required(Role.REQUESTER)
def review_bulk(request, campaign_id: int):
    campaign = _campaign(request, campaign_id)
    try:
        ids = sorted({int(value) for value in request.POST.getlist("assignment")})
    except ValueError:
        raise ApplicationError("The selection is not valid.") from None
    allowed = set(Assignment.objects.filter(pk__in=ids, hit__campaign=campaign).values_list("pk", flat=True))
    if set(ids) - allowed:
        raise ApplicationError("Some selected assignments are not part of this campaign.", status=404)
    decision = request.POST.get("decision")
    if decision not in ("approve", "reject"):
        raise ApplicationError("Choose approve or reject.")
    changed = assignments_bulk_decide(
        assignment_ids=ids, approve=decision == "approve", actor=request.user, reason=request.POST.get("reason", "")
    )
    verb = "approved" if decision == "approve" else "rejected"
    messages.success(request, f"{changed} assignment{'s' if changed != 1 else ''} {verb}.")
    return redirect("review-queue", campaign_id=campaign.pk)


@require_POST
@role_required(Role.REQUESTER)
def mturk_decision_retry(request, decision_id: int):
    """Send a decision MTurk did not accept again (the Retry button of the review queue)."""
    decision = ExternalDecision.objects.select_related("assignment").filter(pk=decision_id).first()
    if decision is None:
        raise Http404("No such decision.")
    assignment = _assignment(request, decision.assignment_id)  # 404 unless the requester's campaign
    external_decision_retry(decision=decision)
    messages.success(request, f"The {decision.decision} of assignment {assignment.pk} is being sent to MTurk again.")
    return redirect("review-queue", campaign_id=assignment.hit.campaign_id)


@require_GET
@role_required(Role.REQUESTER)
def quality_page(request, campaign_id: int):
    campaign = _campaign(request, campaign_id)
    return render(
        request,
        "review/quality.html",
        {
            "campaign": campaign,
            "q": campaign_quality(campaign=campaign),
            "redundancy": campaign_redundancy(campaign=campaign),
            "calibration": campaign_calibration(campaign=campaign),
            "coverage_target": COVERAGE_TARGET,
            "shortfall_level": SHORTFALL_LEVEL,
            "label_models": LABEL_MODELS,
        },
    )


@require_POST
@role_required(Role.REQUESTER)
def quality_policy(request, campaign_id: int):
    """The Quality page's policy form: the same service as PATCH /api/v1/campaigns/{id}/policy/. Only the
    fields the form sends are changed (a checkbox form sends its hidden "present" marker)."""
    campaign = _campaign(request, campaign_id)
    changes = {}
    for name in POLICY_NUMBERS:
        raw = request.POST.get(name)
        if raw is None:
            continue
        try:
            changes[name] = float(raw) if name in POLICY_FLOATS else int(raw)
        except ValueError:
            raise ApplicationError(f"{name.replace('_', ' ').capitalize()} must be a number.") from None
    if "label_model" in request.POST:
        changes["label_model"] = request.POST["label_model"]
    if request.POST.get("switches") == "1":
        for name in ("machine_prior", "adaptive_redundancy"):
            changes[name] = request.POST.get(name) == "on"
    campaign_policy_update(campaign=campaign, actor=request.user, **changes)
    messages.success(request, "Quality policy saved; it applies to work scored from now on.")
    return redirect("review-quality", campaign_id=campaign.pk)


POLICY_NUMBERS = (
    "tolerated_gold_misses",
    "settle_probability",
    "settle_min_answers",
    "max_answers_per_pair",
    "gold_light_share",
)
POLICY_FLOATS = ("settle_probability", "gold_light_share")


@require_POST
@role_required(Role.REQUESTER)
def quality_aggregate(request, campaign_id: int):
    campaign = _campaign(request, campaign_id)
    enqueue_on_commit(task_names.LABELS_AGGREGATE, campaign.pk)
    if settings.CELERY_TASK_ALWAYS_EAGER:  # no broker (make demo): the task ran in this request, after commit
        messages.success(request, "Labels recomputed from the approved answers (no task queue here: done in place).")
    else:
        messages.success(request, "Aggregation queued: labels are recomputed from the approved answers.")
    return redirect("review-quality", campaign_id=campaign.pk)


@require_POST
@role_required(Role.REQUESTER)
def worker_block_view(request, campaign_id: int, worker_id: int, action: str):
    campaign = _campaign(request, campaign_id)
    # A requester acts on the workers who worked on their campaigns, nobody else.
    worker = Worker.objects.filter(pk=worker_id, assignments__hit__campaign=campaign).distinct().first()
    if worker is None:
        raise Http404("No such worker in this campaign.")
    reason = request.POST.get("reason", "")
    # The decision is the campaign owner's: it holds on the owner's campaigns and nowhere else.
    if action == "block":
        worker_block(worker=worker, requester=campaign.owner, actor=request.user, reason=reason)
        messages.success(
            request,
            f"Worker {worker.pseudonym} blocked from this requester's campaigns; their pending work goes to review.",
        )
    elif action == "unblock":
        worker_unblock(worker=worker, requester=campaign.owner, actor=request.user, reason=reason)
        messages.success(request, f"Worker {worker.pseudonym} may take this requester's HITs again.")
    else:
        raise Http404("No such action.")
    return redirect("review-quality", campaign_id=campaign.pk)


urlpatterns = [
    path("review/", review_index, name="review-index"),
    path("review/campaigns/<int:campaign_id>/", review_queue_page, name="review-queue"),
    path("review/campaigns/<int:campaign_id>/bulk", review_bulk, name="review-bulk"),
    path("review/campaigns/<int:campaign_id>/quality/", quality_page, name="review-quality"),
    path("review/campaigns/<int:campaign_id>/judge", campaign_judge, name="review-judge"),
    path("review/campaigns/<int:campaign_id>/policy", quality_policy, name="review-policy"),
    path("review/campaigns/<int:campaign_id>/aggregate", quality_aggregate, name="review-aggregate"),
    path(
        "review/campaigns/<int:campaign_id>/workers/<int:worker_id>/<str:action>",
        worker_block_view,
        name="review-worker",
    ),
    path("review/assignments/<int:assignment_id>/", review_assignment_page, name="review-assignment"),
    path("review/assignments/<int:assignment_id>/decide", review_decide, name="review-decide"),
    path("review/mturk-decisions/<int:decision_id>/retry", mturk_decision_retry, name="review-mturk-retry"),
]
