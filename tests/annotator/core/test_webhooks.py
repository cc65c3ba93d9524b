"""Signed webhooks: the signature verifies with the reference library; a failed delivery is retried."""

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.test import override_settings
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from annotator.core.services.webhooks.delivery import (
    webhook_emit,
    webhook_endpoint_create,
    webhooks_deliver_due,
)
from annotator.models import DeliveryError, DeliveryStatus, WebhookDelivery
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


class _Receiver:
    """A real HTTP server on loopback that answers with the status codes it is given, in turn (a 3xx with a
    Location on the same server). While it runs, the allow-list names the loopback (allow=False: it does not),
    so it is the internal receiver an operator allowed."""

    def __init__(self, codes, *, allow=True):
        self.codes = list(codes)
        self.received = []
        self.paths = []
        self.allowed = override_settings(WEBHOOK_ALLOWED_NETWORKS=["127.0.0.1/32"] if allow else [])
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode()
                receiver.received.append((dict(self.headers), body))
                receiver.paths.append((self.command, self.path))
                code = receiver.codes.pop(0) if receiver.codes else 200
                self.send_response(code)
                if 300 <= code < 400:
                    self.send_header("location", f"http://127.0.0.1:{receiver.server.server_port}/followed")
                self.send_header("content-length", "0")
                self.end_headers()

            do_POST = do_GET = _answer

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self):
        return self.server.server_port

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/hook"

    def __enter__(self):
        self.allowed.enable()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.allowed.disable()


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


def test_an_unreachable_endpoint_is_given_up_after_the_schedule_and_logged_as_a_category(settings):
    """A closed port on an allowed receiver: every attempt is logged as "refused", never as the socket's
    words or a timing, until the schedule gives up."""
    from annotator.core.services.webhooks.delivery import RETRY_SCHEDULE, webhook_deliver

    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
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
    assert delivery.last_status_code is None and delivery.last_error == DeliveryError.REFUSED
    assert {entry["error"] for entry in delivery.log} == {DeliveryError.REFUSED}
    assert all(set(entry) == {"at", "status_code", "error"} for entry in delivery.log)  # no timings
    assert all(entry["at"].endswith("+00:00") and "." not in entry["at"] for entry in delivery.log)


def test_a_302_is_a_failed_delivery_that_is_not_followed(django_capture_on_commit_callbacks):
    """A receiver (allowed, on loopback) that answers 302 gets one request: the redirect is not followed."""
    owner = UserFactory()
    with _Receiver([302]) as receiver:
        webhook_endpoint_create(owner=owner, url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            webhook_emit(owner=owner, event="export.ready", data={})
    assert receiver.paths == [("POST", "/hook")]
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 1
    assert delivery.last_status_code == 302 and delivery.last_error == DeliveryError.REDIRECT


def test_a_name_that_rebinds_to_loopback_after_save_is_refused_at_delivery(
    webhook_dns, django_capture_on_commit_callbacks
):
    """DNS answers a public address at save and the loopback at delivery: the delivery is refused as a
    blocked address and the listener on the loopback receives nothing."""
    owner = UserFactory()
    webhook_dns["rebind.example"] = ["93.184.215.14"]
    with _Receiver([200], allow=False) as receiver:
        webhook_endpoint_create(owner=owner, url=f"http://rebind.example:{receiver.port}/hook")
        webhook_dns["rebind.example"] = ["93.184.215.14", "127.0.0.1"]  # one internal answer is enough
        with django_capture_on_commit_callbacks(execute=True):
            webhook_emit(owner=owner, event="import.done", data={})
        delivery = WebhookDelivery.objects.get()
        assert delivery.last_error == DeliveryError.BLOCKED and delivery.status == DeliveryStatus.PENDING
        webhook_dns["rebind.example"] = ["127.0.0.1"]
        webhooks_deliver_due(now=delivery.next_attempt_at + timedelta(seconds=1))
        delivery.refresh_from_db()
        assert delivery.attempts == 2 and delivery.last_error == DeliveryError.BLOCKED
        del webhook_dns["rebind.example"]
        webhooks_deliver_due(now=delivery.next_attempt_at + timedelta(seconds=1))
        delivery.refresh_from_db()
    assert delivery.attempts == 3 and delivery.last_error == DeliveryError.DNS
    assert receiver.received == []


def test_the_request_goes_to_the_checked_address_with_the_urls_own_host_header(
    webhook_dns, django_capture_on_commit_callbacks
):
    """hooks.test exists only in the resolver hook: the delivery reaches the loopback receiver through the
    address the check returned (no second lookup) and sends the URL's host as the Host header."""
    owner = UserFactory()
    webhook_dns["hooks.test"] = ["127.0.0.1"]
    with _Receiver([204]) as receiver:
        webhook_endpoint_create(owner=owner, url=f"http://hooks.test:{receiver.port}/hook?x=1")
        with django_capture_on_commit_callbacks(execute=True):
            webhook_emit(owner=owner, event="import.done", data={})
    headers, _ = receiver.received[0]
    assert {k.lower(): v for k, v in headers.items()}["host"] == f"hooks.test:{receiver.port}"
    assert receiver.paths == [("POST", "/hook?x=1")]
    assert WebhookDelivery.objects.get().status == DeliveryStatus.SUCCEEDED


def test_only_http_urls_and_known_events_are_accepted():
    from annotator.core.errors import ApplicationError

    owner = UserFactory()
    with pytest.raises(ApplicationError):
        webhook_endpoint_create(owner=owner, url="file:///etc/passwd")
    with pytest.raises(ApplicationError):
        webhook_endpoint_create(owner=owner, url="https://example.org/h", events=["nope"])
