"""Audit events: one row per security-relevant action (annotator.core.models.audit)."""

from annotator.core.models.audit import AuditEvent


def audit_record(
    *, action: str, actor=None, subject_user=None, worker=None, campaign=None, detail: dict | None = None, ip=None
) -> AuditEvent:
    """Write one audit event. Joins the caller's transaction, so an action rolled back leaves no event."""
    actor = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        action=action,
        actor=actor,
        subject_user=subject_user,
        worker=worker,
        campaign=campaign,
        detail=detail or {},
        ip_address=ip or None,
    )
