"""The crowd worker's pages: dashboard, "start working", qualification, the HIT page, MTurk arrival.

Thin: every write is a service in annotator/services/{assignments,qualification,workers}.py, every read
a selector in annotator/crowd/selectors/work.py. A worker reaches only their own assignments (404 otherwise).
What a browser receives about items comes from hit_worker_items (never a pair id, a role or provenance).
"""

import json
from functools import wraps
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from annotator.campaigns.models.campaign import Campaign, CampaignStatus, Hit, Scale
from annotator.campaigns.models.gold import QualificationItem
from annotator.core.errors import ApplicationError
from annotator.core.middleware import wants_json
from annotator.crowd import mturk
from annotator.crowd.gate import (
    SESSION_MTURK_WORKER,
    mturk_frame_ok,
    worker_required,
)
from annotator.crowd.models.crowd import Assignment, AssignmentStatus, QualificationAttempt
from annotator.crowd.selectors import work as work_selectors
from annotator.crowd.selectors import worker_notices
from annotator.crowd.selectors.money import worker_bonuses_and_messages
from annotator.crowd.services import answer_batch
from annotator.crowd.services import answers as answer_services
from annotator.crowd.services import assignments as assignment_services
from annotator.crowd.services import qualification as qualification_services
from annotator.crowd.services.workers import (
    worker_for_external,
    worker_set_auto_accept,
)
from annotator.crowd.views import hit_page
from annotator.crowd.views.hit_page import hit_context, scale_context, similarity_wording

MTURK_PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_SUBMIT_HOSTS = {"www.mturk.com", "workersandbox.mturk.com"}
SESSION_MTURK_SUBMIT_TO = "mturk_submit_to"
SESSION_MTURK_VERIFIED = "mturk_verified"  # "assignmentId|workerId|hitId" of arrivals MTurk confirmed
SESSION_MTURK_VERIFIED_KEEP = 20


def _campaign_kind(campaign: Campaign) -> str:
    return {"t2t": "caption_caption", "i2i": "image_image"}.get(campaign.direction, "image_caption")


def _own_assignment(request, assignment_id: int):
    assignment = work_selectors.assignment_for_worker(worker=request.worker, assignment_id=assignment_id)
    if assignment is None:
        raise Http404("No such assignment.")
    return assignment


# ---- dashboard and campaigns -------------------------------------------------------------------


@require_GET
@worker_required
def work_home(request):
    campaigns = work_selectors.campaigns_open_for_worker(worker=request.worker)
    for row in campaigns:
        row["estimate"] = worker_notices.campaign_pay_estimate(campaign=row["campaign"])
    recent = list(work_selectors.worker_recent_assignments(worker=request.worker))
    rejections = worker_notices.assignment_rejection_reasons(
        assignment_ids=[a.pk for a in recent if a.status == AssignmentStatus.REJECTED]
    )
    context = {
        "worker": request.worker,
        "stats": work_selectors.worker_dashboard(worker=request.worker),
        "campaigns": campaigns,
        "money": worker_bonuses_and_messages(worker=request.worker),
        "recent": [
            {
                "assignment": a,
                "rejection_reason": rejections.get(a.pk, "") if a.status == AssignmentStatus.REJECTED else None,
            }
            for a in recent
        ],
        "rejection_advice": worker_notices.REJECTION_ADVICE
        if any(a.status == AssignmentStatus.REJECTED for a in recent)
        else "",
    }
    return render(request, "work/home.html", context)


@require_POST
@worker_required
def work_auto_accept(request):
    enabled = request.POST.get("enabled") in ("1", "on", "true")
    worker_set_auto_accept(worker=request.worker, enabled=enabled)
    messages.success(
        request,
        "The next HIT will open by itself after each submit."
        if enabled
        else "After each submit you go back to your page.",
    )
    return redirect("work_home")


def _live_campaign(campaign_id: int) -> Campaign:
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    if campaign.status not in (CampaignStatus.LIVE, CampaignStatus.PAUSED, CampaignStatus.FINISHED):
        raise Http404("No such campaign.")
    return campaign


@require_GET
@worker_required
def work_campaign(request, campaign_id: int):
    """The "Start working" page: what the task is, the qualification state, the start button."""
    campaign = _live_campaign(campaign_id)
    block = worker_notices.worker_block_notice(worker=request.worker, campaign=campaign)
    context = {
        "campaign": campaign,
        "qualification": work_selectors.qualification_state(campaign=campaign, worker=request.worker),
        "refusal": block,
        "may_take_work": block is None,
        "estimate": worker_notices.campaign_pay_estimate(campaign=campaign),
        "similarity": campaign.scale == Scale.SIMILARITY,
        "wording": similarity_wording(_campaign_kind(campaign)),
        "worker": request.worker,
        **scale_context(campaign),
    }
    return render(request, "work/campaign.html", context)


@require_POST
@worker_required
def work_claim(request, campaign_id: int):
    # The service reads the campaign once (with the owner's standing and the qualification) and answers
    # 404 for a draft or an unknown id: no lookup here.
    try:
        assignment = assignment_services.assignment_claim(campaign=Campaign(pk=campaign_id), worker=request.worker)
    except ApplicationError as error:
        if error.extra.get("reason") == "no_campaign":
            raise Http404("No such campaign.") from None
        if error.extra.get("reason") == "qualification":
            return redirect("work_qualification", campaign_id=campaign_id)
        if error.status in (403, 404, 409):  # nothing left, a limit reached, paused: say so on the dashboard
            messages.warning(request, error.message)
            return redirect("work_home")
        raise
    return _claimed_page(request, assignment)


def _claimed_page(request, assignment: Assignment):
    """The HIT page itself as the claim's answer: claim and first page in one round trip. Content-Location
    names the page's own address (hit.js puts it in the address bar, so a reload is a GET of the page)."""
    page = _hit_page(request, assignment)
    page["Content-Location"] = reverse("work_hit", args=[assignment.pk])
    page["Cache-Control"] = "no-store"
    return page


# ---- qualification ----------------------------------------------------------------------------


def _qualification_items(attempt: QualificationAttempt) -> list[dict]:
    pairs = QualificationItem.objects.select_related("image", "caption", "other_image", "other_caption").in_bulk(
        attempt.items
    )
    return [
        {"index": index, "number": index + 1, **work_selectors.pair_display(pair=pairs[pair_id])}
        for index, pair_id in enumerate(attempt.items)
        if pair_id in pairs
    ]


@worker_required
def work_qualification(request, campaign_id: int):
    campaign = _live_campaign(campaign_id)
    state = work_selectors.qualification_state(campaign=campaign, worker=request.worker)
    if state in ("passed", "not_required"):
        return redirect("work_campaign", campaign_id=campaign.pk)
    if worker_notices.worker_block_notice(worker=request.worker, campaign=campaign) is not None:
        return redirect("work_campaign", campaign_id=campaign.pk)  # a test leads nowhere: the page says why
    attempt = qualification_services.qualification_start(campaign=campaign, worker=request.worker)
    status = 200
    error = None
    if request.method == "POST":
        answers = {key[len("q-") :]: value for key, value in request.POST.items() if key.startswith("q-")}
        try:
            attempt = qualification_services.qualification_submit(
                attempt=attempt, worker=request.worker, answers=answers
            )
        except ApplicationError as exc:
            error, status = exc.message, exc.status
        else:
            if attempt.passed:
                messages.success(request, f"You passed the test ({attempt.score:.0%}). You can start working.")
                target = request.GET.get("next", "")
                if target.startswith("/mturk/") and url_has_allowed_host_and_scheme(
                    target, allowed_hosts={request.get_host()}
                ):
                    return redirect(target)  # back to the MTurk HIT the worker accepted
                return redirect("work_campaign", campaign_id=campaign.pk)
            messages.error(
                request,
                f"Not passed this time ({attempt.score:.0%}, {campaign.qualification_pass_mark:.0%}"
                f" needed). You can try again in {campaign.qualification_cooldown_minutes} minutes.",
            )
            return redirect("work_campaign", campaign_id=campaign.pk)
    items = _qualification_items(attempt)
    if request.method == "POST":  # keep what the worker already chose when something was missing
        for item in items:
            item["chosen"] = request.POST.get(f"q-{item['index']}", "")
    context = {
        "campaign": campaign,
        "attempt": attempt,
        "items": items,
        "error": error,
        "wording": similarity_wording(_campaign_kind(campaign)),
        **scale_context(campaign),
    }
    return render(request, "work/qualification.html", context, status=status)


# ---- the HIT page -----------------------------------------------------------------------------


@require_GET
@worker_required
def work_hit(request, assignment_id: int):
    return _hit_page(request, _own_assignment(request, assignment_id))


def _hit_page(request, assignment: Assignment):
    answers = work_selectors.assignment_answers_for_worker(assignment=assignment)
    editable = assignment.status == AssignmentStatus.RESERVED and not assignment_is_expired(assignment)
    if editable:
        page = hit_page.hit_page_editable(request, assignment=assignment, answers=answers)
        if page is not None:
            return page
    items = work_selectors.hit_items_for_leased_worker(hit=assignment.hit)
    context = hit_context(
        campaign=assignment.hit.campaign,
        items=items,
        answers=answers,
        mode="edit" if editable else "view",
        stage=assignment.hit.stage,
    )
    context.update(
        expired=assignment_is_expired(assignment),
        rejection=worker_notices.assignment_rejection(assignment=assignment),
        **hit_page.assignment_page_context(
            assignment=assignment,
            page_data=hit_page.hit_page_data(assignment=assignment, answers=answers, editable=editable),
        ),
    )
    return render(request, "work/hit.html", context)


def assignment_is_expired(assignment) -> bool:
    return assignment.status == AssignmentStatus.RESERVED and assignment.expires_at <= timezone.now()


def _json_body(request) -> dict:
    try:
        body = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise ApplicationError("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise ApplicationError("The request body must be a JSON object.")
    return body


@require_POST
@worker_required
def work_answer(request, assignment_id: int):
    """Autosave one item (JSON in, JSON out). CSRF-protected like every POST."""
    # The service locks the row and answers 404 unless it is this worker's: no separate lookup here.
    assignment = Assignment(pk=assignment_id)
    body = _json_body(request)
    for key in ("shortcomings", "wrong_aspects"):
        if body.get(key) is not None and not isinstance(body.get(key), list):
            raise ApplicationError(f"{key} must be a list.")
    answer = answer_services.answer_save(
        assignment=assignment,
        worker=request.worker,
        item_token=str(body.get("item_token") or ""),
        choice=body.get("choice") if isinstance(body.get("choice"), str) else "",
        score=body.get("score"),
        shortcomings=body.get("shortcomings"),
        wrong_aspects=body.get("wrong_aspects"),
        comment=body.get("comment") if isinstance(body.get("comment"), str) else "",
        seconds_spent=body.get("seconds_spent"),
    )
    hit = answer.assignment.hit
    missing = answer_services.answer_missing(campaign=hit.campaign, answer=answer, stage=hit.stage)
    return JsonResponse({"saved": True, "complete": missing is None, "missing": missing})


@require_POST
@worker_required
def work_answers(request, assignment_id: int):
    """Autosave several items at once (hit.js's batches). JSON `{"answers": [...]}` with the X-CSRFToken
    header, or a form with `answers` (the same list as JSON) and `csrfmiddlewaretoken`: what
    `navigator.sendBeacon` sends when the page is closed, since a beacon cannot carry a header."""
    if request.content_type == "application/json":
        entries = _json_body(request).get("answers")
    else:
        try:
            entries = json.loads(request.POST.get("answers") or "null")
        except ValueError:
            raise ApplicationError("answers must be a JSON list.") from None
    missing = answer_batch.answers_save(assignment=Assignment(pk=assignment_id), worker=request.worker, entries=entries)
    return JsonResponse(
        {"saved": len(missing), "items": {token: {"complete": m is None, "missing": m} for token, m in missing.items()}}
    )


def _answers_from_form(post) -> list[dict]:
    """The no-JavaScript submit: fields choice-<token>, score-<token>, shortcomings-<token>, ... ."""
    tokens = {
        key.split("-", 1)[1]
        for key in post
        if "-" in key and key.split("-", 1)[0] in ("choice", "score", "shortcomings", "aspects", "comment", "seconds")
    }
    return [
        {
            "item_token": token,
            "choice": post.get(f"choice-{token}", ""),
            "score": post.get(f"score-{token}") or None,
            "shortcomings": post.getlist(f"shortcomings-{token}"),
            "wrong_aspects": post.getlist(f"aspects-{token}"),
            "comment": post.get(f"comment-{token}", ""),
            "seconds_spent": post.get(f"seconds-{token}") or None,
        }
        for token in sorted(tokens)
    ]


def _next_url_after_submit(request, assignment) -> str:
    if request.worker.external_id:
        return reverse("mturk_done", args=[assignment.pk])
    if request.worker.auto_accept_next:
        try:
            following = assignment_services.assignment_claim(campaign=assignment.hit.campaign, worker=request.worker)
        except ApplicationError as error:
            messages.info(request, f"Submitted. {error.message}")
            return reverse("work_home")
        messages.success(request, "Submitted - it is pending review. Here is your next HIT.")
        return reverse("work_hit", args=[following.pk])
    messages.success(request, "Submitted - it is pending review. Thank you!")
    return reverse("work_home")


@require_POST
@worker_required
def work_submit(request, assignment_id: int):
    """Submit the HIT (JSON from hit.js, or the plain form). Idempotent: a second submit changes nothing."""
    if request.content_type == "application/json":
        answers = _json_body(request).get("answers") or []
        if not isinstance(answers, list):
            raise ApplicationError("answers must be a list.")
    else:
        answers = _answers_from_form(request.POST)
    # The service locks the row and answers 404 unless it is this worker's: no separate lookup here. It
    # stamps a submission it makes now with `now`, so anything else was submitted (or decided) before.
    now = timezone.now()
    assignment = answer_services.assignment_submit(
        assignment=Assignment(pk=assignment_id), worker=request.worker, answers=answers, now=now
    )
    already = not (assignment.status == AssignmentStatus.SUBMITTED and assignment.submitted_at == now)
    next_url = (
        reverse("work_home")
        if already and not request.worker.external_id
        else (_next_url_after_submit(request, assignment))
    )
    if wants_json(request):
        return JsonResponse({"status": assignment.status, "next_url": next_url})
    return redirect(next_url)


@require_POST
@worker_required
def work_return(request, assignment_id: int):
    assignment = _own_assignment(request, assignment_id)
    assignment_services.assignment_return(assignment=assignment, worker=request.worker)
    messages.info(request, "You returned the HIT; someone else will do it.")
    return redirect("work_home")


# ---- Amazon Mechanical Turk (ExternalQuestion) --------------------------------------------------


def _valid_turk_submit_to(value: str) -> str:
    parts = urlsplit(value or "")
    if parts.scheme != "https" or parts.hostname not in MTURK_SUBMIT_HOSTS:
        raise ApplicationError("turkSubmitTo must be MTurk's own address.")
    return f"https://{parts.hostname}"


def mturk_framed(view):
    """Every response of the arrival page (errors included) may be shown in MTurk's iframe."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        return mturk_frame_ok(view(request, *args, **kwargs))

    return wrapped


def _verify_arrival(request, *, hit: Hit, assignment_id: str, worker_id: str) -> None:
    """With MTURK_VERIFY_ARRIVALS, confirm an accepted assignment with MTurk once per session.

    Raises ApplicationError (403, 409, 503) before any Worker or Assignment exists for the arrival. Later
    arrivals with the same ids in this session (a reload, the return from the qualification test) are not
    asked again; autosaves and submits never come here (the session names the worker).
    """
    if not settings.MTURK_VERIFY_ARRIVALS:
        return
    key = f"{assignment_id}|{worker_id}|{hit.external_hit_id}"
    verified = request.session.get(SESSION_MTURK_VERIFIED, [])
    if key in verified:
        return
    status = mturk.mturk_arrival_verify(hit=hit, assignment_id=assignment_id, worker_id=worker_id)
    if status in mturk.ASSIGNMENT_FINISHED:
        # Submitted on MTurk already: only our record of it can be shown, nothing new is leased.
        if not Assignment.objects.filter(external_assignment_id=assignment_id, hit=hit).exists():
            raise ApplicationError(
                "This assignment was already submitted on MTurk; there is nothing left to do.", status=409
            )
    elif (
        Assignment.objects.filter(hit=hit, worker__external_id=worker_id, status=AssignmentStatus.RESERVED)
        .exclude(external_assignment_id=assignment_id)
        .exists()
    ):
        # MTurk cannot say whose an accepted assignment is, and a worker has one assignment per HIT: another
        # real assignment id must not open this worker's lease (assignment_claim_external would return it).
        raise ApplicationError(mturk.ARRIVAL_REFUSED, status=403)
    request.session[SESSION_MTURK_VERIFIED] = (verified + [key])[-SESSION_MTURK_VERIFIED_KEEP:]


@require_GET
@mturk_framed
def mturk_arrival(request):
    """MTurk's iframe: preview (read-only) before accept; after accept, the worker's lease on this HIT."""
    hit_id = request.GET.get("hitId", "").strip()
    if not hit_id:
        raise ApplicationError("hitId is missing.")
    hit = Hit.objects.select_related("campaign").filter(external_hit_id=hit_id).first()
    if hit is None:
        raise ApplicationError("This HIT is not known here.", status=404)
    assignment_id = request.GET.get("assignmentId", "").strip()
    if not assignment_id or assignment_id == MTURK_PREVIEW_ID:
        # Instructions only: anyone can preview every HIT, and items met in two previews would mark
        # themselves as gold. The items come after the worker accepts.
        context = hit_context(campaign=hit.campaign, items=[], answers={}, mode="preview", stage=hit.stage)
        return render(request, "work/hit.html", context)
    submit_to = _valid_turk_submit_to(request.GET.get("turkSubmitTo", ""))
    worker_id = request.GET.get("workerId", "").strip()
    _verify_arrival(request, hit=hit, assignment_id=assignment_id, worker_id=worker_id)
    worker = worker_for_external(external_id=worker_id)
    request.session[SESSION_MTURK_WORKER] = worker.pk
    request.session[SESSION_MTURK_SUBMIT_TO] = submit_to
    request.worker = worker
    if not work_selectors.worker_is_qualified(campaign=hit.campaign, worker=worker):
        return redirect(
            reverse("work_qualification", args=[hit.campaign_id]) + "?" + urlencode({"next": request.get_full_path()})
        )
    assignment = assignment_services.assignment_claim_external(
        hit=hit, worker=worker, external_assignment_id=assignment_id
    )
    return redirect("work_hit", assignment_id=assignment.pk)


@require_GET
@worker_required
def mturk_done(request, assignment_id: int):
    """After our submit: post the assignment id to MTurk's externalSubmit, as MTurk requires."""
    assignment = _own_assignment(request, assignment_id)
    if assignment.status == AssignmentStatus.RESERVED or not assignment.external_assignment_id:
        raise Http404("Nothing to send to MTurk.")
    submit_to = request.session.get(SESSION_MTURK_SUBMIT_TO) or "https://www.mturk.com"
    return render(
        request,
        "work/mturk_submit.html",
        {
            "action": f"{submit_to}/mturk/externalSubmit",
            "assignment": assignment,
        },
    )


urlpatterns = [
    path("work/", work_home, name="work_home"),
    path("work/auto-accept", work_auto_accept, name="work_auto_accept"),
    path("work/campaigns/<int:campaign_id>/", work_campaign, name="work_campaign"),
    path("work/campaigns/<int:campaign_id>/claim", work_claim, name="work_claim"),
    path("work/campaigns/<int:campaign_id>/qualification/", work_qualification, name="work_qualification"),
    path("work/assignments/<int:assignment_id>/", work_hit, name="work_hit"),
    path("work/assignments/<int:assignment_id>/answer", work_answer, name="work_answer"),
    path("work/assignments/<int:assignment_id>/answers", work_answers, name="work_answers"),
    path("work/assignments/<int:assignment_id>/submit", work_submit, name="work_submit"),
    path("work/assignments/<int:assignment_id>/return", work_return, name="work_return"),
    path("work/assignments/<int:assignment_id>/mturk-done", mturk_done, name="mturk_done"),
    path("mturk/", mturk_arrival, name="mturk_arrival"),
]
