"""Migration 0016 rewrites the delivery rows written before it: raw socket errors become categories and the
log entries lose their sub-second timings, before the constraint that keeps it so is added."""

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotator", "0015_adaptive_gold")]
AFTER = [("annotator", "0016_webhook_delivery_categories")]


@pytest.fixture
def back_to_the_latest_schema():
    """The test leaves the database at 0016; every later migration is applied again afterwards, so the tests
    that follow find today's schema (a later column missing broke every transactional test after this one)."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_old_raw_errors_and_timings_become_categories(back_to_the_latest_schema):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    owner = apps.get_model(settings.AUTH_USER_MODEL).objects.create(username="old-hooks")
    endpoint = apps.get_model("annotator", "WebhookEndpoint").objects.create(
        owner=owner, url="http://127.0.0.1:6379/", secret="whsec_x"
    )
    Delivery = apps.get_model("annotator", "WebhookDelivery")
    raw = [
        ("[Errno 111] Connection refused", "refused"),
        ("timed out", "timeout"),
        ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", "tls_error"),
        ("HTTP 500", "http_status"),
        ("[Errno -2] Name or service not known", "dns_failure"),
        ("[Errno 113] No route to host", "connection_failed"),
        ("", ""),
    ]
    for index, (error, _) in enumerate(raw):
        Delivery.objects.create(
            endpoint=endpoint,
            message_id=f"msg_old_{index}",
            event="import.done",
            last_error=error,
            log=[{"at": "2026-11-01T10:00:00.123456+00:00", "status_code": None, "error": error, "seconds": 0.001}],
        )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    rows = apps.get_model("annotator", "WebhookDelivery").objects.order_by("message_id")
    for (_, category), row in zip(raw, rows, strict=True):
        assert row.last_error == category
        assert row.log == [{"at": "2026-11-01T10:00:00+00:00", "status_code": None, "error": category}]
