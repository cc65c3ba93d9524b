"""The HIT page when the server is over capacity: hit.js says what is happening and sends again.

The first autosave and the first submit are answered as the server answers past capacity (503, Retry-After
1, `{"busy": true}`, config/gunicorn_worker.py); the page must say so, try again by itself, and end with
every answer stored once and the HIT submitted once.
"""

import json

import pytest

from annotator.models import Answer, AssignmentEvent, AssignmentStatus
from tests.e2e.support import screenshot, wait_until
from tests.factories import live_campaign_with_hits

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

BUSY = {
    "status": 503,
    "headers": {"Retry-After": "1", "Content-Type": "application/json"},
    "body": json.dumps({"error": "Vericap is busy right now.", "retry_after": 1, "busy": True}),
}


def test_a_busy_server_is_explained_and_autosave_and_submit_are_sent_again(live_server, browser):
    from django.test import Client

    from annotator.crowd.services.workers import worker_for_user
    from annotator.models import Role
    from tests.factories import user_with_role

    campaign = live_campaign_with_hits(hits=1, candidates=2, qualification_items=0)
    user = user_with_role(Role.WORKER)
    worker_for_user(user=user)
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.set_default_timeout(15000)
    refused = {"answer": 0, "submit": 0}

    def once_busy(kind):
        def handler(route):
            if refused[kind] == 0:
                refused[kind] += 1
                route.fulfill(**BUSY)
            else:
                route.continue_()

        return handler

    page.route("**/answers", once_busy("answer"))
    page.route("**/submit", once_busy("submit"))
    page.goto(f"{live_server.url}/work/campaigns/{campaign.pk}/")
    page.locator("#start-working").click()
    page.wait_for_selector("#hit-form .item")
    wait_until(page, "document.activeElement !== null && document.activeElement.closest('.item') !== null")
    page.keyboard.press("1")
    wait_until(page, "document.getElementById('save-state').textContent.includes('the server is busy')")
    assert "trying again in" in page.locator("#save-state").inner_text()
    screenshot(page, "worker-busy-autosave", full_page=False)
    wait_until(page, "document.getElementById('save-state').textContent === 'All answers saved.'")
    for _ in range(3):  # the other items: yes, then move on
        page.keyboard.press("Enter")
        page.keyboard.press("1")
    wait_until(page, "document.getElementById('save-state').textContent === 'All answers saved.'")
    page.locator("#submit-hit").click()
    wait_until(page, "document.body.textContent.includes('Trying again in')")
    screenshot(page, "worker-busy-submit", full_page=False)
    page.wait_for_url("**/work/", timeout=15000)
    assert refused == {"answer": 1, "submit": 1}
    assignment = user.worker.assignments.get()
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert Answer.objects.filter(assignment=assignment).count() == 4
    assert AssignmentEvent.objects.filter(assignment=assignment, to_status="submitted").count() == 1
    context.close()
