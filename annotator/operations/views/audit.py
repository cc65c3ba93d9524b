"""The audit log (/account/audit/): blocks, unblocks, decision overrides, tokens, lock-outs, retired gold.

Staff see every event; a requester sees their own actions, what touches their own record and what happened
on the campaigns they may review; anyone else sees only the events about their own account
(annotator.operations.selectors.audit). It reads who manages which campaign, so it sits
with the operations page above every step, not in core.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from annotator.core.models.audit import AuditEvent
from annotator.core.selectors.access import is_requester
from annotator.operations.selectors.audit import audit_events_visible

PAGE_SIZE = 200


@login_required
@require_GET
def audit_page(request):
    events = audit_events_visible(user=request.user)
    everything = is_requester(request.user)
    action = request.GET.get("action", "")
    if action:
        events = events.filter(action=action)
    return render(
        request,
        "audit/list.html",
        {
            "events": events[:PAGE_SIZE],
            "everything": everything,
            "action": action,
            "actions": AuditEvent._meta.get_field("action").choices,
        },
    )


urlpatterns = [path("account/audit/", audit_page, name="audit")]
