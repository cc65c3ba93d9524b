"""A bounded schemathesis run of every operation of the OpenAPI schema, through the Django WSGI app.

Each operation is called with generated data (valid and invalid, a fixed seed, a few examples each) as the
requester who owns the world's campaign, as the researcher it is shared with, and anonymously. Every answer
must be what the schema says: no 5xx, a documented status code, a documented content type, and a body that
matches the documented schema (the error body of api/exceptions.py included). A failure here is a bug in
the schema or in the server, to be fixed there.
"""

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application  # the same app gunicorn serves

schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)
# Bounded: generated (fuzzing) examples only; the exhaustive coverage phase would call each operation hundreds of times.
schema.config.phases.coverage.enabled = False

pytestmark = pytest.mark.django_db

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
ROLES = ("requester", "researcher", "anonymous")

# Generated ids rarely exist; each case is also sent with the id of a real object of the world fixture.
REAL_IDS = {
    "datasets": "dataset",
    "annotators": "annotator",
    "runs": "run",
    "campaigns": "campaign",
    "assignments": "assignment",
    "workers": "worker",
    "labels": "label",
    "exports": "export",
    "evaluations": "evaluation",
    "labelsets": "labelset",
    "benchmarks": "labelset",  # a label set that is no benchmark: a 404 like any other out-of-scope id
    "webhooks": "webhook",
    "webhook-deliveries": "webhook_delivery",
    "pools": "pool",
    "enlargements": "enlargement",
}


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """Calls go through the real WSGI handler, whose request signals would close the test's database
    connection (and its transaction) on PostgreSQL; Django's own test client disconnects them the same way."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def headers(world):
    from rest_framework.authtoken.models import Token

    tokens = {role: Token.objects.get_or_create(user=world.users[role])[0].key for role in ROLES[:2]}
    return {role: {"Authorization": f"Token {tokens[role]}"} if role in tokens else {} for role in ROLES}


@schema.parametrize()
@settings(
    max_examples=5,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_as_the_schema_says(case, headers, world):
    calls = [dict(case.path_parameters or {})]
    if case.path_parameters and "id" in case.path_parameters:
        resource = case.path.split("/")[3]
        calls.append({**case.path_parameters, "id": world.ids[REAL_IDS[resource]]})
    for path_parameters in calls:
        case.path_parameters = path_parameters
        for role in ROLES:
            response = case.call(headers=headers[role])
            case.validate_response(response, checks=CHECKS, headers=headers[role])
