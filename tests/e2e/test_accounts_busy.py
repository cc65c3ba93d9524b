"""Sign-up and log-in through a busy minute: the server refuses the form's POST with gunicorn's own busy
answer (503, Retry-After); the page says so, keeps everything typed, and sends the form again by itself."""

import pytest

from annotator.models import Role
from config.gunicorn_worker import MESSAGE, busy_response
from tests.e2e.support import screenshot, wait_until
from tests.factories import user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _busy(method="POST"):
    """What config/gunicorn_worker.py answers a form POST past capacity (an HTML page, Retry-After 1)."""
    answer = {}

    def start_response(status, headers):
        answer["status"] = int(status.split()[0])
        answer["headers"] = dict(headers)

    body = b"".join(busy_response({"REQUEST_METHOD": method, "HTTP_ACCEPT": "text/html"}, start_response, 1))
    return {"status": answer["status"], "headers": answer["headers"], "body": body}


def _refuse_first(page, path, times):
    refused = []

    def handler(route):
        if route.request.method == "POST" and len(refused) < times:
            refused.append(route.request.url)
            route.fulfill(**_busy())
        else:
            route.continue_()

    page.route(f"**{path}", handler)
    return refused


STATE = "(document.querySelector('.retry-state') || {}).textContent || ''"


def test_sign_up_through_a_busy_server_keeps_what_was_typed_and_creates_the_account(live_server, browser):
    from django.contrib.auth import get_user_model

    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/accounts/signup/")
    refused = _refuse_first(page, "/accounts/signup/", 2)
    page.get_by_label("User name").fill("patientworker")
    page.get_by_label("Password", exact=True).fill("a-long-passphrase")
    page.get_by_label("Password again").fill("a-long-passphrase")
    page.get_by_role("button", name="Create my account").click()
    wait_until(page, f"{STATE}.includes('busy') && {STATE}.includes('Trying again in')")
    assert page.get_by_label("User name").input_value() == "patientworker"
    assert page.get_by_label("Password", exact=True).input_value() == "a-long-passphrase"
    assert page.url.endswith("/accounts/signup/")
    screenshot(page, "signup-busy", full_page=False)
    page.wait_for_url("**/work/", timeout=20000)
    assert len(refused) == 2
    assert get_user_model().objects.filter(username="patientworker").count() == 1
    assert "patientworker" in page.content()
    page.close()


def test_log_in_through_a_busy_server_logs_in_by_itself(live_server, browser):
    user = user_with_role(Role.WORKER, username="busyday")
    user.set_password("a-long-passphrase")
    user.save()
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/accounts/login/?next=/work/")
    refused = _refuse_first(page, "/accounts/login/", 1)
    page.get_by_label("User name").fill("busyday")
    page.get_by_label("Password").fill("a-long-passphrase")
    page.get_by_role("button", name="Log in").click()
    wait_until(page, f"{STATE}.includes('busy')")
    assert page.get_by_label("User name").input_value() == "busyday"
    assert page.get_by_label("Password").input_value() == "a-long-passphrase"
    page.wait_for_url("**/work/", timeout=20000)
    assert len(refused) == 1
    page.close()


def test_a_refused_password_after_a_busy_answer_shows_the_form_error(live_server, browser):
    """Whatever comes after the busy answer is shown as the browser would: here the log-in form's error."""
    user_with_role(Role.WORKER, username="typo")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/accounts/login/")
    _refuse_first(page, "/accounts/login/", 1)
    page.get_by_label("User name").fill("typo")
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    wait_until(page, "document.querySelector('.errorlist') !== null", timeout=15)
    assert page.get_by_label("User name").input_value() == "typo"
    assert MESSAGE not in page.content()
    page.close()
