"""A new crowd worker, in Debian's Chromium: sign up, pass the qualification, answer a full HIT with the
keyboard alone (follow-ups included), reload half-way and find the answers kept, submit, see it pending.

Screenshots go to test-artifacts/ (gitignored).
"""

import pytest

import config.urls
from annotator.crowd.scales import MISSING
from annotator.crowd.services.answers import assignment_missing
from annotator.models import Answer, Assignment, AssignmentStatus, QualificationAttempt, QualificationItem
from tests.e2e.support import ARTIFACTS, screenshot, wait_until
from tests.factories import live_campaign_with_hits

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# What the worker answers, item by item (1-based): key, then follow-up keystrokes after the answer.
# 3 = "Partially YES" + first reason; 7 = "Mostly NO" + "wrong way" + aspect "Color"; the rest mostly 1/4.
PLAN = {3: ("2", ["Space"]), 7: ("3", ["Tab", "Tab", "Space", "Tab", "Tab", "Tab", "Space"]), 12: ("3", ["Space"])}


@pytest.fixture
def media_served(settings, monkeypatch):
    """config.urls bound MEDIA_ROOT at import; point it at this test's temporary media directory."""
    for pattern in config.urls.urlpatterns:
        if "document_root" in getattr(pattern, "default_args", {}):
            monkeypatch.setitem(pattern.default_args, "document_root", str(settings.MEDIA_ROOT))


def shot(page, name):
    screenshot(page, f"worker-{name}", full_page=False)


def wait_ready(page):
    """hit.js is deferred: wait until it has put the focus on an item before typing."""
    wait_until(page, "document.activeElement !== null && document.activeElement.closest('.item') !== null")


def answer_item(page, number):
    key, followups = PLAN.get(number, ("1" if number % 2 else "4", []))
    page.keyboard.press(key)
    for stroke in followups:
        page.keyboard.press(stroke)
    page.keyboard.press("Enter")


def test_new_worker_end_to_end(live_server, browser, media_served):
    campaign = live_campaign_with_hits(hits=2, candidates=16, qualification_items=2, name="Verify COCO captions")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(15000)

    # Sign up
    page.goto(f"{live_server.url}/accounts/signup/")
    page.get_by_label("User name").fill("newworker")
    page.get_by_label("Password", exact=True).fill("a-long-passphrase")
    page.get_by_label("Password again").fill("a-long-passphrase")
    shot(page, "01-signup")
    page.get_by_role("button", name="Create my account").click()
    page.wait_for_url("**/work/")
    assert "Verify COCO captions" in page.content()
    shot(page, "02-dashboard-new")

    # Qualification: answer the gold items right (the test knows the roles; the page does not show them)
    page.get_by_role("link", name="Take the qualification test").click()
    page.locator("#take-test").click()
    page.wait_for_selector("#qualification-form")
    assert "gold" not in page.content().lower()
    attempt = QualificationAttempt.objects.get(worker__user__username="newworker")
    roles = dict(QualificationItem.objects.filter(campaign=campaign).values_list("pk", "role"))
    for index, pair_id in enumerate(attempt.items):
        value = "yes" if roles[pair_id] == "gold_positive" else "no"
        page.locator(f"input[name='q-{index}'][value='{value}']").check()
    shot(page, "03-qualification")
    page.locator("#submit-test").click()
    page.wait_for_selector("#start-working")
    assert "You passed the test" in page.content()

    # The HIT, keyboard only
    page.locator("#start-working").click()
    page.wait_for_selector("#hit-form .item")
    wait_ready(page)
    assignment = Assignment.objects.get(worker__user__username="newworker")
    total = page.locator("#hit-form .item").count()
    assert total == 18
    assert page.locator("#submit-hit").is_disabled()
    shot(page, "04-hit-start")
    for number in range(1, 10):
        answer_item(page, number)
    wait_until(page, "document.getElementById('save-state').textContent === 'All answers saved.'")
    assert page.locator("#progress-text").inner_text() == "9 / 18 answered"
    assert "Still missing" in page.locator("#missing").inner_text()
    shot(page, "05-hit-halfway")

    # Reload half-way: everything answered so far is back, follow-ups included
    page.reload()
    page.wait_for_selector("#hit-form .item")
    wait_ready(page)
    assert page.locator("#progress-text").inner_text() == "9 / 18 answered"
    seventh = page.locator("#item-7")
    assert seventh.locator("input[value='mostly_no']").is_checked()
    assert seventh.locator("input[value='wrong_way']").is_checked()
    assert seventh.locator("input[value='color']").is_checked()
    assert page.locator("#item-3 input[value='extra_concepts']").is_checked()
    assert page.evaluate("document.activeElement.closest('.item').id") == "item-10"
    shot(page, "06-hit-after-reload")
    seventh.screenshot(path=str(ARTIFACTS / "worker-06b-item-with-followups.png"))

    # The page and the server apply the same HIT rules (annotator/crowd/scales.py): "Partially YES" without a
    # reason is missing the same thing on both.
    page.keyboard.press("2")
    wait_until(page, "document.getElementById('save-state').textContent === 'All answers saved.'")
    server = {row["item"]: row["missing"] for row in assignment_missing(assignment=assignment)}
    assert server[10] == MISSING["reason"]
    assert f"item 10: {MISSING['reason']}" in page.locator("#missing").inner_text()
    page.keyboard.press("Space")
    page.keyboard.press("Enter")
    for number in range(11, total + 1):
        answer_item(page, number)
    assert page.locator("#progress-text").inner_text() == "18 / 18 answered"
    assert not page.locator("#submit-hit").is_disabled()
    assert page.evaluate("document.activeElement.id") == "submit-hit"
    shot(page, "07-hit-complete")
    page.keyboard.press("Enter")  # submit, still from the keyboard
    page.wait_for_url("**/work/")
    assert "pending review" in page.content()
    assert page.locator("#stat-pending").inner_text() == "1"
    shot(page, "08-dashboard-pending")

    assignment.refresh_from_db()
    assert assignment.status in (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
    answers = {a.item.position: a for a in Answer.objects.filter(assignment=assignment).select_related("item")}
    assert len(answers) == 18
    seventh_answer = answers[7]
    assert (seventh_answer.choice, seventh_answer.shortcomings, seventh_answer.wrong_aspects) == (
        "mostly_no",
        ["wrong_way"],
        ["color"],
    )
    assert answers[3].shortcomings == ["extra_concepts"]
    assert sum(a.seconds_spent for a in answers.values()) > 0

    # The same page on a phone: one column, readable
    phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone.context.add_cookies(page.context.cookies())
    phone.goto(f"{live_server.url}/work/")
    shot(phone, "09-phone-dashboard")
    phone.goto(f"{live_server.url}/work/campaigns/{campaign.pk}/")
    phone.locator("#start-working").click()
    phone.wait_for_selector("#hit-form .item")
    wait_ready(phone)
    phone.keyboard.press("2")
    assert phone.locator("#item-1 .reasons").is_visible()
    shot(phone, "10-phone-hit")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, "the HIT page scrolls sideways on a phone"


def test_similarity_slider_by_keyboard(live_server, browser, media_served):
    """A similarity campaign: digits jump along the worded slider, no number is shown, progress follows."""
    from django.test import Client

    from annotator.crowd.services.workers import worker_for_user
    from annotator.models import Role
    from tests.factories import user_with_role

    campaign = live_campaign_with_hits(hits=1, candidates=2, scale="similarity", qualification_items=0)
    user = user_with_role(Role.WORKER)
    worker_for_user(user=user)
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.goto(f"{live_server.url}/work/campaigns/{campaign.pk}/")
    page.locator("#start-working").click()
    page.wait_for_selector("#hit-form .item")
    wait_ready(page)
    for key in ("4", "Enter", "2", "Enter", "5"):
        page.keyboard.press(key)
    page.keyboard.press("ArrowLeft")  # fine-tune the last one a little
    wait_until(page, "document.querySelector('#item-3 input[type=range]').value === '4.99'")
    page.wait_for_timeout(100)  # the change event starts the save; then wait for it to land
    wait_until(page, "document.getElementById('save-state').textContent === 'All answers saved.'")
    assert page.locator("#progress-text").inner_text() == "3 / 4 answered"
    assert page.locator("#item-1 .slider-state").inner_text() == "Rated: Mostly matched"
    assert "4.0" not in page.locator("#item-1").inner_text()
    shot(page, "11-similarity")
    scores = sorted(Answer.objects.filter(assignment__worker__user=user).values_list("score", flat=True))
    assert scores == [2.0, 4.0, 4.99]
    context.close()
