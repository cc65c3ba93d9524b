"""Batched autosave in the browser: nothing answered is lost when the tab closes or the network drops, and a
whole HIT costs at most six requests (claim with its page, a few batches, submit)."""

import time

import pytest

from annotator.crowd.services.workers import worker_for_user
from annotator.models import Answer, Assignment, AssignmentStatus, Role
from tests.e2e.support import logged_in_context, screenshot, wait_until
from tests.factories import live_campaign_with_hits, user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SAVED = "document.getElementById('save-state').textContent === 'All answers saved.'"
FOCUSED = "document.activeElement !== null && document.activeElement.closest('.item') !== null"


def _worker_page(browser, live_server, campaign):
    user = user_with_role(Role.WORKER)
    worker_for_user(user=user)
    context = logged_in_context(browser, live_server, user, viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15000)
    return user, context, page


def _claim(page, live_server, campaign):
    page.goto(f"{live_server.url}/work/campaigns/{campaign.pk}/")
    page.locator("#start-working").click()
    page.wait_for_selector("#hit-form .item")
    wait_until(page, FOCUSED)


def _answer_yes(page, count):
    for _ in range(count):
        page.keyboard.press("1")
        page.keyboard.press("Enter")


def _stored(assignment_id, *, expect, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        stored = dict(Answer.objects.filter(assignment_id=assignment_id).values_list("item__position", "choice"))
        if len(stored) >= expect or time.monotonic() > deadline:
            return stored
        time.sleep(0.1)


def test_answers_not_yet_sent_reach_the_server_when_the_tab_closes(live_server, browser, settings):
    """Two answers wait for their batch (a minute away); closing the tab sends them by beacon."""
    settings.HIT_AUTOSAVE_WAIT_SECONDS = 60
    campaign = live_campaign_with_hits(hits=1, candidates=4, qualification_items=0)
    user, context, page = _worker_page(browser, live_server, campaign)
    batches = []
    page.on("request", lambda request: batches.append(request) if request.url.endswith("/answers") else None)
    _claim(page, live_server, campaign)
    assignment = Assignment.objects.get(worker__user=user)
    assert page.url.endswith(f"/work/assignments/{assignment.pk}/")  # the claim's page took its own address
    _answer_yes(page, 2)
    assert page.locator("#save-state").inner_text() == "Saving\u2026"
    page.wait_for_timeout(500)
    assert batches == [] and not Answer.objects.filter(assignment=assignment).exists()  # still waiting
    page.close(run_before_unload=True)
    stored = _stored(assignment.pk, expect=2)
    assert sorted(stored.values()) == ["yes", "yes"], stored
    assert len(stored) == 2
    context.close()


def test_answers_given_while_the_network_is_down_are_kept_and_sent_when_it_is_back(live_server, browser):
    """Offline: the page says so and keeps trying; back online, the answers are saved. Answers left unsent
    in a tab closed while offline come back (localStorage) on the HIT's next page, and are saved then."""
    campaign = live_campaign_with_hits(hits=1, candidates=4, qualification_items=0)
    user, context, page = _worker_page(browser, live_server, campaign)
    _claim(page, live_server, campaign)
    assignment = Assignment.objects.get(worker__user=user)
    context.set_offline(True)
    _answer_yes(page, 1)
    wait_until(page, "document.getElementById('save-state').textContent.includes('no connection')")
    assert "Your answers stay on this page" in page.locator("#save-state").inner_text()
    screenshot(page, "worker-autosave-offline", full_page=False)
    assert not Answer.objects.filter(assignment=assignment).exists()
    context.set_offline(False)
    wait_until(page, SAVED, timeout=20)
    assert len(_stored(assignment.pk, expect=1)) == 1

    context.set_offline(True)
    page.keyboard.press("4")  # item 2: "100% NO", with the network down
    wait_until(page, "document.getElementById('save-state').textContent.includes('no connection')")
    # The emulated offline network does not hold back what a closing page sends (a beacon, a keepalive fetch: CI
    # saw one get through), so the closing page's last try is lost on purpose: the browser's copy is what is tested.
    page.evaluate(
        "() => { navigator.sendBeacon = () => false; window.fetch = () => Promise.reject(new TypeError('x')); }"
    )
    page.close(run_before_unload=False)
    assert len(_stored(assignment.pk, expect=2, timeout=1.0)) == 1  # nothing could leave while offline
    context.set_offline(False)

    page = context.new_page()
    page.goto(f"{live_server.url}/work/assignments/{assignment.pk}/")
    page.wait_for_selector("#hit-form .item")
    assert page.locator("#item-2 input[value='no']").is_checked()  # shown again from the browser's copy
    wait_until(page, SAVED)
    stored = _stored(assignment.pk, expect=2)
    assert sorted(stored.values()) == ["no", "yes"], stored
    assert page.evaluate(f"localStorage.getItem('vericap-unsaved-{assignment.pk}')") is None  # acknowledged
    context.close()


def test_a_whole_hit_takes_at_most_six_requests(live_server, browser, settings):
    """18 items answered and submitted: the claim (which carries the page), a batch per six items, the
    submit. Every answer is stored once and the HIT is submitted."""
    settings.HIT_AUTOSAVE_WAIT_SECONDS = 10
    campaign = live_campaign_with_hits(hits=1, candidates=16, qualification_items=0)
    user, context, page = _worker_page(browser, live_server, campaign)
    page.goto(f"{live_server.url}/work/campaigns/{campaign.pk}/")
    requests = []
    page.on("request", lambda r: requests.append(f"{r.method} {r.url}") if "/static/" not in r.url else None)
    page.locator("#start-working").click()
    page.wait_for_selector("#hit-form .item")
    wait_until(page, FOCUSED)
    assert page.locator("#hit-form .item").count() == 18
    _answer_yes(page, 18)
    page.locator("#submit-hit").click()
    page.wait_for_url("**/work/")
    hit_requests = [r for r in requests if r.startswith("POST")]
    assert len(hit_requests) <= 6, hit_requests
    assert hit_requests[0].endswith("/claim") and hit_requests[-1].endswith("/submit")
    assert not [r for r in requests if r.startswith("GET") and "/assignments/" in r]  # no separate page load
    assignment = Assignment.objects.get(worker__user=user)
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert Answer.objects.filter(assignment=assignment).count() == 18
    context.close()
