"""Staff make requester and researcher accounts on a page, in the admin and through the API; nobody else can;
passwords are checked as at sign-up; each account leaves an audit event."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator.models import AuditAction, AuditEvent, Role
from tests.factories import UserFactory, user_with_role

pytestmark = pytest.mark.django_db
GOOD_PASSWORD = "plum-kettle-harbour-9"


@pytest.fixture
def staff():
    user = UserFactory(username="operator", is_staff=True)
    return user


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_staff_make_a_requester_on_the_page_who_can_then_log_in(client, staff):
    client.force_login(staff)
    page = client.get("/accounts/new/")
    assert page.status_code == 200 and b"Make a requester or researcher account" in page.content
    response = client.post(
        "/accounts/new/", {"username": "lab-lead", "role": Role.REQUESTER, "password": GOOD_PASSWORD}
    )
    assert response.status_code == 302
    made = get_user_model().objects.get(username="lab-lead")
    assert made.profile.role == Role.REQUESTER and not made.is_staff
    event = AuditEvent.objects.get(action=AuditAction.ACCOUNT_CREATE)
    assert event.actor == staff and event.subject_user == made and event.detail == {"role": "requester"}
    assert b"lab-lead" in client.get("/accounts/new/").content
    client.logout()
    logged_in = client.post("/accounts/login/", {"username": "lab-lead", "password": GOOD_PASSWORD})
    assert logged_in.status_code == 302
    assert client.get("/campaigns/").status_code == 200  # a requester's page


def test_a_weak_or_taken_name_is_refused_with_the_reason(client, staff):
    client.force_login(staff)
    same = client.post("/accounts/new/", {"username": "samename1", "role": Role.RESEARCHER, "password": "samename1"})
    assert same.status_code == 400 and b"too similar" in same.content
    numeric = client.post("/accounts/new/", {"username": "numbers", "role": Role.RESEARCHER, "password": "93817264"})
    assert numeric.status_code == 400 and b"entirely numeric" in numeric.content
    taken = client.post("/accounts/new/", {"username": "operator", "role": Role.RESEARCHER, "password": GOOD_PASSWORD})
    assert taken.status_code == 400 and b"cannot be used" in taken.content
    assert not AuditEvent.objects.filter(action=AuditAction.ACCOUNT_CREATE).exists()


def test_nobody_but_staff_makes_accounts(client):
    for role in (Role.REQUESTER, Role.RESEARCHER, Role.WORKER):
        user = user_with_role(role)
        client.force_login(user)
        assert client.get("/accounts/new/").status_code == 403
        posted = client.post("/accounts/new/", {"username": "sneak", "role": Role.REQUESTER, "password": GOOD_PASSWORD})
        assert posted.status_code == 403
        answer = _api(user).post(
            "/api/v1/accounts/", {"username": "sneak", "role": "requester", "password": GOOD_PASSWORD}, format="json"
        )
        assert answer.status_code == 403 and answer.json()["error"]
    assert APIClient().post("/api/v1/accounts/", {}, format="json").status_code == 401
    assert not get_user_model().objects.filter(username="sneak").exists()


def test_staff_make_accounts_through_the_api(staff):
    api = _api(staff)
    made = api.post(
        "/api/v1/accounts/",
        {"username": "res-2", "role": "researcher", "password": GOOD_PASSWORD, "email": "r@example.org"},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json() == {
        "id": made.json()["id"],
        "username": "res-2",
        "email": "r@example.org",
        "role": "researcher",
    }
    worker = api.post("/api/v1/accounts/", {"username": "w-2", "role": "worker", "password": GOOD_PASSWORD})
    assert worker.status_code == 400 and worker.json()["error"]
    weak = api.post("/api/v1/accounts/", {"username": "res-3", "role": "researcher", "password": "res-3"})
    assert weak.status_code == 400 and "too short" in weak.json()["error"]


def test_the_admin_sets_the_role_of_an_account(client):
    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    user = UserFactory(username="later-requester")
    page = client.get(f"/admin/auth/user/{user.pk}/change/")
    assert page.status_code == 200 and b"profile-0-role" in page.content or b"profile-__prefix__-role" in page.content
