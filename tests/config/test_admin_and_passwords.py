"""The admin is off the public URL space in production unless ADMIN_URL names a prefix, and its log-in is
throttled like every other; Django's full password validators refuse weak passwords on every path."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AdminPasswordChangeForm
from django.core.cache import cache
from django.test import Client

from annotator.core.errors import ApplicationError
from annotator.crowd.services.workers import worker_signup
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
BASE_DIR = Path(django_settings.BASE_DIR)

ADMIN_PROBE = """
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
print(json.dumps({
    path: client.get(path, secure=True).status_code
    for path in ("/admin/", "/admin/login/", "/staff-q7x2/login/")
}))
"""


def _production_probe(tmp_path, **extra) -> dict:
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "DEBUG", "CACHE_URL", "ADMIN_URL")
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings_production",
        DEBUG="false",
        SECRET_KEY="s" * 50,
        ALLOWED_HOSTS="testserver",
        DATABASE_URL=f"sqlite:///{tmp_path / 'probe.sqlite3'}",
        **extra,
    )
    result = subprocess.run(
        [sys.executable, "-c", ADMIN_PROBE], cwd=BASE_DIR, env=environment, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_serves_no_admin_unless_admin_url_names_one(tmp_path):
    off = _production_probe(tmp_path)
    assert off == {"/admin/": 404, "/admin/login/": 404, "/staff-q7x2/login/": 404}
    moved = _production_probe(tmp_path, ADMIN_URL="staff-q7x2")
    assert moved == {"/admin/": 404, "/admin/login/": 404, "/staff-q7x2/login/": 200}


def test_admin_log_in_attempts_are_throttled():
    cache.clear()
    staff = UserFactory(username="boss", is_staff=True, is_superuser=True)
    staff.set_password("a-long-enough-password")
    staff.save()
    client = Client(REMOTE_ADDR="10.4.4.4")
    login_url = f"/{django_settings.ADMIN_URL}login/"
    for number in range(19):
        tried = client.post(login_url, {"username": "boss", "password": f"guess-{number}"})
        assert tried.status_code == 200  # the admin's own form error
    assert client.post(login_url, {"username": "boss", "password": "guess-19"}).status_code == 429
    locked = client.post(login_url, {"username": "boss", "password": "a-long-enough-password"})
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    cache.clear()


def test_a_password_equal_to_the_user_name_is_refused_at_sign_up():
    with pytest.raises(ApplicationError, match="too similar to the username"):
        worker_signup(username="marguerite42", password="marguerite42")
    with pytest.raises(ApplicationError, match="entirely numeric"):
        worker_signup(username="paul", password="8302917465")
    assert not get_user_model().objects.filter(username__in=["marguerite42", "paul"]).exists()


def test_the_sign_up_page_says_why_a_password_like_the_user_name_is_refused(client):
    form = {"username": "marguerite42", "password": "marguerite42", "password_again": "marguerite42"}
    refused = client.post("/accounts/signup/", form)
    assert refused.status_code == 400 and "too similar to the username" in refused.content.decode()
    assert not get_user_model().objects.filter(username="marguerite42").exists()


def test_the_admin_password_form_applies_the_same_validators():
    user = UserFactory(username="marguerite42")
    form = AdminPasswordChangeForm(user, {"password1": "marguerite42", "password2": "marguerite42"})
    assert not form.is_valid() and "too similar to the username" in str(form.errors)
