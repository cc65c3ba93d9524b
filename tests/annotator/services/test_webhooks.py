"""Signed webhooks: the signature verifies with the reference library; a failed delivery is retried."""

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from annotator.models import DeliveryStatus, WebhookDelivery
from annotator.services.webhooks.delivery import webhook_emit, webhook_endpoint_create, webhooks_deliver_due
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


class _Receiver:
    """A real HTTP server on loopback that answers with the status codes it is given, in turn."""

    def __init__(self, codes):
        self.codes = list(codes)
        self.received = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"])).decode()
                receiver.received.append((dict(self.headers), body))
                self.send_response(receiver.codes.pop(0) if receiver.codes else 200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_port}/hook"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_signature_verifies_with_the_reference_library(django_capture_on_commit_callbacks):
    owner = UserFactory()
    with _Receiver([200]) as receiver:
        endpoint = webhook_endpoint_create(owner=owner, url=receiver.url, events=["campaign.finished"])
        with django_capture_on_commit_callbacks(execute=True):
            assert webhook_emit(owner=owner, event="campaign.finished", data={"campaign": 7}) == 1
            assert webhook_emit(owner=owner, event="export.ready", data={}) == 0  # not subscribed
    headers, body = receiver.received[0]
    verified = Webhook(endpoint.secret).verify(body, {k.lower(): v for k, v in headers.items()})
    assert verified["type"] == "campaign.finished" and verified["data"] == {"campaign": 7}
    tampered = json.dumps({**json.loads(body), "data": {"campaign": 8}})
    with pytest.raises(Exception):  # noqa: B017 - the library raises its own WebhookVerificationError
        Webhook(endpoint.secret).verify(tampered, {k.lower(): v for k, v in headers.items()})
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 1


def test_a_failed_delivery_is_retried_with_backoff_and_logged(django_capture_on_commit_callbacks):
    owner = UserFactory()
    with _Receiver([500, 503, 200]) as receiver:
        webhook_endpoint_create(owner=owner, url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            webhook_emit(owner=owner, event="assignment.flagged", data={"assignment": 1})
        delivery = WebhookDelivery.objects.get()
        assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 1
        assert delivery.last_status_code == 500
        first_retry = delivery.next_attempt_at
        assert first_retry > timezone.now()
        assert webhooks_deliver_due() == 0  # not due yet
        assert webhooks_deliver_due(now=first_retry + timedelta(seconds=1)) == 1
        delivery.refresh_from_db()
        assert delivery.attempts == 2 and delivery.status == DeliveryStatus.PENDING
        assert delivery.next_attempt_at - first_retry > timedelta(seconds=60)  # the wait grows
        webhooks_deliver_due(now=delivery.next_attempt_at + timedelta(seconds=1))
        delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 3
    assert [entry["status_code"] for entry in delivery.log] == [500, 503, 200]
    ids = {{k.lower(): v for k, v in headers.items()}["webhook-id"] for headers, _ in receiver.received}
    assert ids == {delivery.message_id}  # the same message id on every attempt: receivers deduplicate


def test_an_unreachable_endpoint_is_given_up_after_the_schedule():
    from annotator.services.webhooks.delivery import RETRY_SCHEDULE, webhook_deliver

    owner = UserFactory()
    webhook_endpoint_create(owner=owner, url="http://127.0.0.1:9/nothing-listens")
    webhook_emit(owner=owner, event="import.done", data={})
    delivery = WebhookDelivery.objects.get()
    now = timezone.now()
    for _ in range(len(RETRY_SCHEDULE) + 1):
        webhook_deliver(delivery_id=delivery.pk, now=now)
        delivery.refresh_from_db()
        now = (delivery.next_attempt_at or now) + timedelta(seconds=1)
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == len(RETRY_SCHEDULE) + 1
    assert delivery.last_status_code is None and delivery.last_error


def test_only_http_urls_and_known_events_are_accepted():
    from annotator.errors import ApplicationError

    owner = UserFactory()
    with pytest.raises(ApplicationError):
        webhook_endpoint_create(owner=owner, url="file:///etc/passwd")
    with pytest.raises(ApplicationError):
        webhook_endpoint_create(owner=owner, url="https://example.org/h", events=["nope"])
