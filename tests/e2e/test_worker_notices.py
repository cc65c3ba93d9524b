"""A worker in Debian's Chromium: answers the qualification test with the number keys its badges show,
then sees a rejection's reason on the HIT page. Screenshots go to test-artifacts/ (gitignored)."""

import pytest

from annotator.crowd.services.workers import worker_for_user
from annotator.models import QualificationAttempt, QualificationItem, Role
from annotator.quality.services.decisions import assignment_reject
from tests.annotator.quality_support import submit
from tests.e2e.support import logged_in_context, screenshot, wait_until
from tests.factories import live_campaign_with_hits, user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_qualification_keys_answer_and_move_on_then_a_rejection_shows_its_reason(live_server, browser):
    campaign = live_campaign_with_hits(hits=2, qualification_items=2, name="Keys campaign")
    user = user_with_role(Role.WORKER)
    worker = worker_for_user(user=user)
    page = logged_in_context(browser, live_server, user, viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15000)

    page.goto(f"{live_server.url}/work/campaigns/{campaign.pk}/qualification/")
    page.wait_for_selector("#qualification-form")
    wait_until(page, "document.readyState === 'complete'")
    attempt = QualificationAttempt.objects.get(worker=worker, campaign=campaign)
    roles = dict(QualificationItem.objects.filter(campaign=campaign).values_list("pk", "role"))
    for index, pair_id in enumerate(attempt.items):
        page.keyboard.press("1" if roles[pair_id] == "gold_positive" else "4")
        value = "yes" if roles[pair_id] == "gold_positive" else "no"
        assert page.locator(f"input[name='q-{index}'][value='{value}']").is_checked()
    assert page.evaluate("document.activeElement.id") == "submit-test"  # the last key moved on to submit
    screenshot(page, "worker-qualification-keys", full_page=False)
    page.keyboard.press("Enter")
    page.wait_for_selector("#start-working")
    assert "You passed the test" in page.content()

    rejected = submit(campaign.hits.get(index=0), worker=worker)
    assignment_reject(assignment=rejected, actor=campaign.owner, reason="Two <em>check</em> items were wrong.")
    page.goto(f"{live_server.url}/work/assignments/{rejected.pk}/")
    notice = page.locator("#rejection")
    assert "Two <em>check</em> items were wrong." in notice.inner_text()
    assert "overturn" in notice.inner_text()
    screenshot(page, "worker-rejected-hit", full_page=False)
