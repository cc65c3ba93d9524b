"""A server that holds against hostile callers: log-in lock-out, API throttles, CSP, HSTS, sign-up limits,
and the audit events that record them."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.throttling import SimpleRateThrottle

from annotator.core.services.tokens import token_create
from annotator.models import AuditEvent, Role
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db
BASE_DIR = Path(django_settings.BASE_DIR)
PASSWORD = "a-long-enough-password"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def member(username: str, role: str = Role.WORKER):
    user = user_with_role(role, username=username)
    user.set_password(PASSWORD)
    user.save()
    return user


def log_in(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": password})


def test_twenty_wrong_passwords_lock_that_address_out_of_that_name_but_not_the_owner_elsewhere():
    member("victim")
    for number in range(19):
        assert log_in("victim", f"wrong-{number}").status_code == 400  # the usual form error, nothing more
    assert log_in("victim", "wrong-19").status_code == 429  # the 20th failure locks the (name, address) pair
    locked = log_in("victim", PASSWORD)
    assert locked.status_code == 429 and 1700 <= int(locked["Retry-After"]) <= 1800
    assert "Too many failed log-ins" in locked.content.decode()
    assert log_in("victim", PASSWORD, address="10.9.9.9").status_code == 302  # the owner, elsewhere, gets in
    event = AuditEvent.objects.filter(action="login_lockout").order_by("id").first()  # then one per refused try
    assert event.subject_user.username == "victim" and event.ip_address == "10.0.0.1"


def test_an_address_that_tries_many_names_is_slowed_down_not_the_others(settings):
    settings.LOGIN_SLOWDOWN_ADDRESS_AFTER = 10
    member("bystander")
    for number in range(11):  # the 11th failure from this address starts its delays
        assert log_in(f"guess{number}", "whatever").status_code == 400
    refused = log_in("bystander", PASSWORD)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert log_in("bystander", PASSWORD, address="10.0.0.2").status_code == 302


def test_a_few_failures_then_the_right_password_logs_in():
    member("forgetful")
    for number in range(5):
        log_in("forgetful", f"wrong-{number}")
    assert log_in("forgetful", PASSWORD).status_code == 302
    assert not AuditEvent.objects.filter(action="login_lockout").exists()


def test_login_failures_do_not_say_whether_the_account_exists():
    member("exists")
    known = log_in("exists", "wrong").content.decode()
    unknown = log_in("no-such-user", "wrong").content.decode()
    message = re.compile(r'<div role="alert" class="errorlist">.*?</div>', re.S)
    assert message.search(known).group(0) == message.search(unknown).group(0)


@pytest.fixture
def tight_rates(monkeypatch):
    rates = {"token": "3/minute", "address": "5/minute", "token_failure": "5/minute"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)


def api(token: str, address: str = "10.1.1.1"):
    return Client(REMOTE_ADDR=address, HTTP_AUTHORIZATION=f"Token {token}").get("/api/v1/datasets/")


def test_api_throttles_each_token_with_429_and_retry_after(tight_rates):
    token = token_create(user=member("busy", Role.REQUESTER)).key
    answers = [api(token, address=f"10.1.1.{n}") for n in range(4)]  # other addresses: only the token counts
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert 0 < int(answers[-1]["Retry-After"]) <= 60
    assert "throttled" in answers[-1].json()["error"].lower()


def test_api_throttles_each_address_whoever_calls(tight_rates):
    tokens = [token_create(user=member(f"crowd{n}", Role.REQUESTER)).key for n in range(6)]
    answers = [api(token, address="10.2.2.2").status_code for token in tokens]
    assert answers == [200] * 5 + [429]
    assert api(tokens[0], address="10.2.2.3").status_code == 200


def test_token_creation_is_an_audit_event():
    user = member("maker", Role.RESEARCHER)
    token_create(user=user)
    token_create(user=user)
    events = AuditEvent.objects.filter(action="token_create", subject_user=user).order_by("id")
    assert [e.detail["replaced"] for e in events] == [False, True]
    assert Token.objects.filter(user=user).count() == 1


def test_the_policy_built_once_is_django_csps_and_follows_changed_settings(settings):
    from csp.utils import build_policy

    client = Client()
    assert client.get("/accounts/login/")["Content-Security-Policy"] == build_policy()
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'self'"], "img-src": ["https://cdn.test"]}}
    changed = client.get("/accounts/login/")["Content-Security-Policy"]
    assert changed == build_policy() and "https://cdn.test" in changed


def test_every_page_has_a_strict_content_security_policy():
    client = Client()
    for url in ("/", "/accounts/login/", "/accounts/signup/"):
        policy = client.get(url)["Content-Security-Policy"]
        directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
        assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
        assert directives["default-src"] == "'self'" and directives["object-src"] == "'none'"
        assert directives["frame-ancestors"] == "'self'"
        assert "unsafe" not in policy


def test_no_template_has_inline_script_style_or_handlers():
    """The CSP forbids them, so a page that had one would break in the browser."""
    offenders = []
    for path in list((BASE_DIR / "templates").rglob("*.html")) + list((BASE_DIR / "annotator").rglob("*.html")):
        text = path.read_text()
        for pattern in (
            r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>",
            r"\sstyle=",
            r"\son[a-z]+=",
            "javascript:",
        ):
            if re.search(pattern, text):
                offenders.append(f"{path.name}: {pattern}")
    assert offenders == []


def test_signup_tries_are_limited_per_address(settings):
    settings.SIGNUP_RATE_PER_HOUR = 3
    client = Client(REMOTE_ADDR="10.3.3.3")
    for number in range(3):
        form = {"username": f"new{number}", "password": "pw", "password_again": "pw"}
        assert client.post("/accounts/signup/", form).status_code == 400  # too short: a normal form error
    refused = client.post("/accounts/signup/", {"username": "new9", "password": PASSWORD, "password_again": PASSWORD})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert not _user_exists("new9")


def _user_exists(username: str) -> bool:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(username=username).exists()


PRODUCTION_PROBE = """
import json, django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
from django.test.utils import override_settings
override_settings(STORAGES={
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}).enable()
client = Client()
secure = client.get("/accounts/login/", secure=True)
plain = client.get("/accounts/login/")
health = client.get("/healthz")
from django.conf import settings
print(json.dumps({
    "hsts": secure.get("Strict-Transport-Security", ""),
    "csp": secure.get("Content-Security-Policy", ""),
    "plain_status": plain.status_code, "plain_location": plain.get("Location", ""),
    "health_status": health.status_code,
    "session_secure": settings.SESSION_COOKIE_SECURE, "csrf_secure": settings.CSRF_COOKIE_SECURE,
}))
"""


def test_production_sends_hsts_and_csp_and_redirects_http_but_not_the_health_check(tmp_path):
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "DEBUG", "CACHE_URL")
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings_production",
        DEBUG="false",
        SECRET_KEY="s" * 50,
        ALLOWED_HOSTS="testserver",
        DATABASE_URL=f"sqlite:///{tmp_path / 'probe.sqlite3'}",
    )
    result = subprocess.run(
        [sys.executable, "-c", PRODUCTION_PROBE],
        cwd=BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe["hsts"] == "max-age=31536000; includeSubDomains"
    assert "script-src 'self'" in probe["csp"] and "frame-ancestors 'self'" in probe["csp"]
    assert probe["plain_status"] == 301 and probe["plain_location"].startswith("https://")
    assert probe["health_status"] != 301
    assert probe["session_secure"] and probe["csrf_secure"]
