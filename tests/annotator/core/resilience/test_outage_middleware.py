"""Outages answer 503 with Retry-After (never 500); a safe request is tried once more first."""

import pytest
from django.db import OperationalError
from django.test import RequestFactory

from annotator.core.resilience.middleware import server_error
from tests.annotator.core.resilience import outage_urls

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.annotator.core.resilience.outage_urls")]


@pytest.fixture(autouse=True)
def _fresh_calls():
    outage_urls.calls.clear()


@pytest.fixture
def client(client):
    client.raise_request_exception = False  # see the response a person would get
    return client


def test_a_read_that_meets_a_dropped_connection_is_run_again_and_succeeds(client):
    response = client.get("/flaky")
    assert response.status_code == 200
    assert response.content == b"read ok"
    assert outage_urls.calls == ["GET", "GET"]


def test_a_write_is_not_run_again_but_answered_503_with_retry_after(client, settings):
    settings.OUTAGE_RETRY_AFTER_SECONDS = 7
    response = client.post("/flaky", HTTP_ACCEPT="application/json")
    assert response.status_code == 503
    assert response["Retry-After"] == "7"
    assert response.json() == {"error": response.json()["error"], "retry_after": 7}
    assert "try again" in response.json()["error"]
    assert outage_urls.calls == ["POST"]  # the view ran once: a write is never repeated behind the person's back


def test_a_read_that_fails_twice_is_a_503_page_that_reloads_itself(client):
    response = client.get("/down")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    body = response.content.decode()
    assert "Back in a moment" in body and 'http-equiv="refresh"' in body
    assert outage_urls.calls == ["GET", "GET"]


def test_a_form_post_503_page_does_not_reload_into_a_get(client):
    response = client.post("/down")
    assert response.status_code == 503
    assert 'http-equiv="refresh"' not in response.content.decode()


def test_the_retried_read_keeps_the_usual_answer_for_a_domain_error(client):
    response = client.get("/missing")
    assert response.status_code == 404
    assert outage_urls.calls == ["GET", "GET"]


def test_redis_unreachable_outside_the_cache_is_a_503_too(client):
    response = client.post("/cache-down", HTTP_ACCEPT="application/json")
    assert response.status_code == 503
    assert response.json()["retry_after"] == 5


def test_a_bug_is_still_a_500(client):
    assert client.get("/broken").status_code == 500


def test_the_500_handler_answers_503_for_an_outage_outside_a_view():
    """E.g. the session saved in SessionMiddleware after PostgreSQL went away."""
    request = RequestFactory().post("/work/assignments/1/answer", HTTP_ACCEPT="application/json")
    try:
        raise OperationalError("server closed the connection unexpectedly")
    except OperationalError:
        response = server_error(request)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    try:
        raise KeyError("a bug")
    except KeyError:
        assert server_error(RequestFactory().get("/")).status_code == 500
