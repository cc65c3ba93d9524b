"""Log-in guessing is stopped without locking the owner out (annotator.core.services.login_guard): a
guesser spread over many addresses waits longer and longer, the owner at an address they used before is
not slowed down, and the owner is told how many failed log-ins there were. Sign-up does not say whether a
name is taken until everything else in the form is valid."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotator.core.services import login_guard
from annotator.core.services.people import USERNAME_TAKEN
from annotator.models import Role
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-enough-password"


class Clock:
    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(login_guard, "_clock", clock)
    return clock


def member(username: str):
    user = user_with_role(Role.WORKER, username=username)
    user.set_password(PASSWORD)
    user.save()
    return user


def log_in(username: str, password: str, address: str, client: Client | None = None):
    client = client or Client(REMOTE_ADDR=address)
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_two_hundred_guesses_over_fifty_addresses_wait_longer_and_longer_and_never_get_in(clock):
    member("victim")
    assert log_in("victim", PASSWORD, "10.9.9.9").status_code == 302  # the owner's usual address
    waits = []
    for number in range(200):
        address = f"10.7.{number % 50}.1"
        answer = log_in("victim", f"guess-{number}", address)
        if answer.status_code == 429:  # the guesser waits as told, then tries the same guess again
            waits.append(int(answer["Retry-After"]))
            clock.now += waits[-1]
            answer = log_in("victim", f"guess-{number}", address)
        assert answer.status_code == 400  # after the wait the guess was checked (and wrong)
    assert len(waits) == 200 - 21  # 20 failures are free, the 21st starts the waits: every later guess waits
    assert waits == sorted(waits) and waits[0] == 1 and waits[:4] == [1, 2, 4, 8]
    assert max(waits) == 900 and sum(waits) > 40 * 3600  # the cap, and days of waiting for 200 guesses
    guessed_right = log_in("victim", PASSWORD, "10.7.99.1")
    assert guessed_right.status_code == 429 and int(guessed_right["Retry-After"]) == 900
    assert log_in("victim", PASSWORD, "10.9.9.9").status_code == 302  # the owner at home is not slowed down


def test_the_owner_is_told_how_many_log_ins_failed_since_their_last_one():
    member("watched")
    owner = Client(REMOTE_ADDR="10.5.5.5")
    assert log_in("watched", PASSWORD, "10.5.5.5", owner).status_code == 302
    owner.post("/accounts/logout/")
    for number in range(3):
        log_in("watched", f"guess-{number}", f"10.6.6.{number}")
    log_in("WATCHED", "guess-x", "10.6.6.9")  # the name in other letters is the same account's name
    landed = owner.post("/accounts/login/", {"username": "watched", "password": PASSWORD}, follow=True)
    assert "4 failed log-in attempts on your account since your last log-in" in landed.content.decode()
    owner.post("/accounts/logout/")
    again = owner.post("/accounts/login/", {"username": "watched", "password": PASSWORD}, follow=True)
    assert "failed log-in" not in again.content.decode()  # told once


def test_refused_tries_inside_a_wait_do_not_make_it_longer(settings, clock):
    settings.LOGIN_SLOWDOWN_USERNAME_AFTER = 2
    member("patient")
    for number in range(3):
        log_in("patient", f"guess-{number}", f"10.8.0.{number}")
    first = log_in("patient", "guess-x", "10.8.1.1")
    for _ in range(30):
        log_in("patient", "guess-y", "10.8.1.2")
    assert int(log_in("patient", "guess-z", "10.8.1.3")["Retry-After"]) == int(first["Retry-After"]) == 1
    clock.now += 1
    assert log_in("patient", PASSWORD, "10.8.1.4").status_code == 302  # waited out: the owner gets in


def _signup(form):
    return Client(REMOTE_ADDR="10.3.0.1").post("/accounts/signup/", form)


def _errors(response) -> str:
    return " ".join(re.findall(r'<div class="errorlist" role="alert">(.*?)</div>', response.content.decode(), re.S))


def test_sign_up_says_a_name_is_taken_only_once_everything_else_is_valid():
    member("taken")
    weak = _signup({"username": "taken", "password": "pw", "password_again": "pw"})
    assert weak.status_code == 400 and USERNAME_TAKEN not in weak.content.decode()
    assert "too short" in _errors(weak)
    unknown = _signup({"username": "free-name", "password": "pw", "password_again": "pw"})
    assert _errors(unknown).replace("free-name", "taken") == _errors(weak)  # the same answer for both names
    valid = _signup({"username": "TAKEN", "password": PASSWORD, "password_again": PASSWORD})
    assert valid.status_code == 400 and USERNAME_TAKEN in valid.content.decode()
    assert not get_user_model().objects.filter(username="TAKEN").exists()
