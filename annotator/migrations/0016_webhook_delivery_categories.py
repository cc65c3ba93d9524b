"""A delivery's error is a category (DeliveryError), never a raw socket error or a sub-second timing: the
rows written before are rewritten to categories (and their log entries lose "seconds") before the
constraint that keeps it so. Attempt times keep whole seconds."""

from datetime import datetime

from django.db import migrations, models

CATEGORIES = [
    ("timeout", "Timed out"),
    ("refused", "Connection refused"),
    ("connection_failed", "Connection failed"),
    ("tls_error", "TLS error"),
    ("http_status", "HTTP error status"),
    ("redirect_refused", "Redirect refused (not followed)"),
    ("blocked_address", "Blocked address (not public)"),
    ("dns_failure", "DNS failure"),
]


def _category(error: str) -> str:
    known = {value for value, _ in CATEGORIES}
    if not error or error in known:
        return error or ""
    lowered = error.lower()
    if lowered.startswith("http "):
        return "http_status"
    if "timed out" in lowered or "timeout" in lowered:
        return "timeout"
    if "refused" in lowered:
        return "refused"
    if "ssl" in lowered or "certificate" in lowered:
        return "tls_error"
    if "name or service" in lowered or "nodename" in lowered or "getaddrinfo" in lowered:
        return "dns_failure"
    return "connection_failed"


def _whole_second(at):
    try:
        return datetime.fromisoformat(at).replace(microsecond=0).isoformat()
    except (TypeError, ValueError):
        return at


def scrub(apps, schema_editor):
    WebhookDelivery = apps.get_model("annotator", "WebhookDelivery")
    changed = []
    for delivery in WebhookDelivery.objects.only("pk", "last_error", "log").iterator(chunk_size=500):
        log = [
            {
                "at": _whole_second(entry.get("at")),
                "status_code": entry.get("status_code"),
                "error": _category(entry.get("error") or ""),
            }
            for entry in (delivery.log or [])
            if isinstance(entry, dict)
        ]
        last_error = _category(delivery.last_error)
        if log != delivery.log or last_error != delivery.last_error:
            delivery.log, delivery.last_error = log, last_error
            changed.append(delivery)
        if len(changed) >= 500:
            WebhookDelivery.objects.bulk_update(changed, ["log", "last_error"])
            changed = []
    WebhookDelivery.objects.bulk_update(changed, ["log", "last_error"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0015_adaptive_gold"),
    ]

    operations = [
        migrations.RunPython(scrub, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="last_error",
            field=models.CharField(blank=True, choices=CATEGORIES, max_length=500),
        ),
        migrations.AddConstraint(
            model_name="webhookdelivery",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("last_error", ""),
                    (
                        "last_error__in",
                        [
                            "timeout",
                            "refused",
                            "connection_failed",
                            "tls_error",
                            "http_status",
                            "redirect_refused",
                            "blocked_address",
                            "dns_failure",
                        ],
                    ),
                    _connector="OR",
                ),
                name="webhook_delivery_error_is_a_category",
            ),
        ),
    ]
