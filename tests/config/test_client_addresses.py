"""The client address behind a configured number of proxies (annotator.core.addresses): the API throttles, the
wrong-token throttle, the sign-up limit, the log-in lock-out and its audit event all count the real client,
and none believes an address a client writes into X-Forwarded-For itself."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.throttling import SimpleRateThrottle

from annotator.core.addresses import client_address_from_meta
from annotator.core.services.tokens import token_create
from annotator.models import AuditEvent, Role
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-enough-password"
PROXY = "10.0.0.2"  # the reverse proxy: every request connects from it


@pytest.fixture
def one_proxy(settings):
    settings.TRUSTED_PROXY_COUNT = 1


@pytest.fixture
def tight_rates(monkeypatch):
    rates = {"token": "100/minute", "address": "5/minute", "token_failure": "5/minute"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)


def through_proxy(client_ip: str, sent_by_client: str = "") -> Client:
    """A client behind the proxy; the proxy appends the address it saw to what the client sent."""
    forwarded = f"{sent_by_client}, {client_ip}" if sent_by_client else client_ip
    return Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded)


def member(username: str, role: str = Role.WORKER):
    user = user_with_role(role, username=username)
    user.set_password(PASSWORD)
    user.save()
    return user


@pytest.mark.parametrize(
    "count, forwarded, expected",
    [
        (0, "203.0.113.9", PROXY),  # no proxy configured: the header is not read at all
        (1, "203.0.113.9", "203.0.113.9"),
        (1, "1.2.3.4, 203.0.113.9", "203.0.113.9"),  # what the client wrote itself is left of the proxy's
        (2, "1.2.3.4, 203.0.113.9, 10.0.0.7", "203.0.113.9"),  # two proxies: the outer one saw the client
        (2, "203.0.113.9", PROXY),  # fewer addresses than proxies: it did not come through them
        (1, "1.2.3.4, not-an-address", PROXY),
        (1, "", PROXY),
        (1, " 2001:db8::1 ", "2001:db8::1"),
    ],
)
def test_the_client_is_the_address_the_outermost_trusted_proxy_saw(settings, count, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = count
    assert client_address_from_meta({"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": forwarded}) == expected


def test_a_client_that_writes_its_own_forwarded_for_is_throttled_as_itself(one_proxy, tight_rates):
    token = token_create(user=member("spoofer", Role.REQUESTER)).key
    answers = [
        through_proxy("203.0.113.7", sent_by_client=f"198.18.0.{n}")
        .get("/api/v1/datasets/", HTTP_AUTHORIZATION=f"Token {token}")
        .status_code
        for n in range(6)
    ]
    assert answers == [200] * 5 + [429]
    other = through_proxy("203.0.113.8").get("/api/v1/datasets/", HTTP_AUTHORIZATION=f"Token {token}")
    assert other.status_code == 200  # another person behind the same proxy is not counted with it


def test_a_burst_of_wrong_tokens_is_throttled_and_then_even_a_right_token_is_not_told_apart(one_proxy, tight_rates):
    good = token_create(user=member("owner", Role.REQUESTER)).key
    guesser = through_proxy("203.0.113.66")
    answers = [guesser.get("/api/v1/datasets/", HTTP_AUTHORIZATION=f"Token {n:040x}") for n in range(7)]
    assert [a.status_code for a in answers] == [401] * 5 + [429, 429]
    assert 0 < int(answers[-1]["Retry-After"]) <= 60
    assert guesser.get("/api/v1/datasets/", HTTP_AUTHORIZATION=f"Token {good}").status_code == 429
    owner = through_proxy("203.0.113.67").get("/api/v1/datasets/", HTTP_AUTHORIZATION=f"Token {good}")
    assert owner.status_code == 200


def test_forty_people_signing_up_through_one_proxy_are_forty_addresses(one_proxy, settings):
    settings.SIGNUP_RATE_PER_HOUR = 20
    for n in range(40):
        form = {"username": f"person{n}", "password": PASSWORD, "password_again": PASSWORD}
        assert through_proxy(f"203.0.113.{n + 1}").post("/accounts/signup/", form).status_code == 302
    assert get_user_model().objects.filter(username__startswith="person").count() == 40
    one = [
        through_proxy("198.51.100.5", sent_by_client=f"198.18.1.{n}")
        .post("/accounts/signup/", {"username": f"many{n}", "password": "pw", "password_again": "pw"})
        .status_code
        for n in range(21)
    ]
    assert one == [400] * 20 + [429]  # one person writing other addresses into the header is still one


def test_the_lock_out_and_its_audit_event_name_the_client_not_the_proxy(one_proxy):
    member("target")
    attacker = through_proxy("203.0.113.99", sent_by_client="198.18.2.1")
    for number in range(20):
        attacker.post("/accounts/login/", {"username": "target", "password": f"wrong-{number}"})
    assert attacker.post("/accounts/login/", {"username": "target", "password": PASSWORD}).status_code == 429
    event = AuditEvent.objects.filter(action="login_lockout").order_by("id").first()
    assert event.ip_address == "203.0.113.99"
    owner = through_proxy("203.0.113.100").post("/accounts/login/", {"username": "target", "password": PASSWORD})
    assert owner.status_code == 302  # the same proxy, another person: not locked
