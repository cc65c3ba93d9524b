"""A bounded schemathesis run against the OpenAPI schema, through the Django WSGI app: no 500 anywhere.

Every operation is called with generated data (a fixed seed, a few examples each) as the requester who owns
the campaign and as the researcher it is shared with. A 5xx fails the test; every 4xx must be JSON with an
`error` message.
"""

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from config.wsgi import application  # the same app gunicorn serves

schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)
# Bounded: generated (fuzzing) examples only; the exhaustive coverage phase would call each operation hundreds of times.
schema.config.phases.coverage.enabled = False

pytestmark = pytest.mark.django_db


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
    "webhooks": "webhook",
    "webhook-deliveries": "webhook_delivery",
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
def tokens(world):
    from rest_framework.authtoken.models import Token

    return {role: Token.objects.get_or_create(user=world.users[role])[0].key for role in ("requester", "researcher")}


@pytest.fixture
def real_ids(world):
    return world.ids


@schema.parametrize()
@settings(
    max_examples=4,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_error(case, tokens, real_ids):
    calls = [dict(case.path_parameters or {})]
    if case.path_parameters and "id" in case.path_parameters:
        resource = case.path.split("/")[3]
        calls.append({**case.path_parameters, "id": real_ids[REAL_IDS[resource]]})
    for path_parameters in calls:
        case.path_parameters = path_parameters
        for role in ("requester", "researcher"):
            response = case.call(headers={"Authorization": f"Token {tokens[role]}"})
            where = f"{role}: {case.method} {case.formatted_path} {case.query or ''}"
            assert response.status_code < 500, f"{where} -> {response.status_code}"
            if response.status_code >= 400 and case.path != "/api/v1/schema/":
                body = response.json()
                assert isinstance(body, dict) and body.get("error"), f"{where}: {body}"
