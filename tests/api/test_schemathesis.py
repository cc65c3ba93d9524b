"""A bounded schemathesis run against the OpenAPI schema, through the Django WSGI app: no 500 anywhere.

Every operation is called with generated data (a fixed seed, a few examples each) as the requester who owns
the campaign and as the researcher it is shared with. A 5xx fails the test; every 4xx must be JSON with an
`error` message.
"""

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings

from config.wsgi import application  # noqa: F401  (the same app gunicorn serves)

schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())
# Bounded: generated (fuzzing) examples only; the exhaustive coverage phase would call each operation hundreds of times.
schema.config.phases.coverage.enabled = False

pytestmark = pytest.mark.django_db


@pytest.fixture
def tokens(world):
    from rest_framework.authtoken.models import Token

    return {role: Token.objects.get_or_create(user=world.users[role])[0].key for role in ("requester", "researcher")}


@schema.parametrize()
@settings(
    max_examples=4, derandomize=True, deadline=None, database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_error(case, tokens):
    for role in ("requester", "researcher"):
        response = case.call(headers={"Authorization": f"Token {tokens[role]}"})
        assert response.status_code < 500, f"{role}: {case.method} {case.formatted_path} -> {response.status_code}"
        if response.status_code >= 400 and case.path != "/api/v1/schema/":
            body = response.json()
            assert isinstance(body, dict) and body.get("error"), f"{role}: {case.method} {case.formatted_path}: {body}"
