from django.conf import settings
from django.db import models
from django.db.models import Q


class WebhookEvent(models.TextChoices):
    CAMPAIGN_FINISHED = "campaign.finished", "A campaign finished"
    EXPORT_READY = "export.ready", "An export file is ready"
    IMPORT_DONE = "import.done", "A dataset import finished"
    ASSIGNMENT_FLAGGED = "assignment.flagged", "An assignment went to the review queue"


class WebhookEndpoint(models.Model):
    """A requester's URL that receives signed event messages (the Standard Webhooks scheme)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=100)  # "whsec_" + base64 of the signing key
    events = models.JSONField(default=list)  # WebhookEvent values; empty = every event
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.url

    def wants(self, event: str) -> bool:
        return self.active and (not self.events or event in self.events)


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # waiting for its next attempt
    SUCCEEDED = "succeeded", "Delivered"
    FAILED = "failed", "Gave up"


DELIVERY_TRANSITIONS = {
    DeliveryStatus.PENDING: {DeliveryStatus.PENDING, DeliveryStatus.SUCCEEDED, DeliveryStatus.FAILED},
    DeliveryStatus.SUCCEEDED: set(),
    DeliveryStatus.FAILED: {DeliveryStatus.PENDING},  # a requester may send it again
}


class DeliveryError(models.TextChoices):
    """What went wrong with an attempt, as a category only: a raw socket error or a sub-second timing would
    tell a requester which internal ports are open."""

    TIMEOUT = "timeout", "Timed out"
    REFUSED = "refused", "Connection refused"
    CONNECTION = "connection_failed", "Connection failed"
    TLS = "tls_error", "TLS error"
    HTTP_STATUS = "http_status", "HTTP error status"
    REDIRECT = "redirect_refused", "Redirect refused (not followed)"
    BLOCKED = "blocked_address", "Blocked address (not public)"
    DNS = "dns_failure", "DNS failure"


class WebhookDelivery(models.Model):
    """One message to one endpoint, with every attempt's outcome: the delivery log."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    message_id = models.CharField(max_length=40, unique=True)  # the webhook-id header: the receiver's dedup key
    event = models.CharField(max_length=40, choices=WebhookEvent.choices)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=12, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, choices=DeliveryError.choices)  # "" once delivered
    log = models.JSONField(default=list, blank=True)  # [{"at", "status_code", "error"}] per attempt, error a category
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=DeliveryStatus.values), name="webhook_delivery_status_valid"),
            models.CheckConstraint(
                condition=Q(last_error="") | Q(last_error__in=DeliveryError.values),
                name="webhook_delivery_error_is_a_category",
            ),
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due")]

    def __str__(self):
        return f"{self.event} -> {self.endpoint_id} ({self.status})"
