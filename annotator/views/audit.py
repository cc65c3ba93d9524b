"""The audit log (/account/audit/): blocks, unblocks, decision overrides, tokens, lock-outs, retired gold.

Requesters (and staff) see every event; anyone else sees only the events about their own account.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from annotator.access import is_requester
from annotator.models import AuditEvent

PAGE_SIZE = 200


@login_required
@require_GET
def audit_page(request):
    events = AuditEvent.objects.select_related("actor", "subject_user", "worker", "campaign")
    everything = is_requester(request.user)
    if not everything:
        events = events.filter(subject_user=request.user)
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
