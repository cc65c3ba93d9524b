"""An STS and an SIS HIT in Debian's Chromium, answered with the keyboard alone: two captions or two images
per item, Crisscrossed Captions' wording, a 0-5 rating each, submitted. Screenshots go to test-artifacts/."""

import pytest

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.crowd.services.workers import worker_for_user
from annotator.models import Answer, Assignment, AssignmentStatus, Role
from tests.annotator.cxc.support import SyntheticWorld
from tests.e2e.support import logged_in_context, screenshot, wait_until
from tests.e2e.test_worker_flow import media_served  # noqa: F401 (a fixture)
from tests.factories import UserFactory, user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

OPTIONS = {
    "scale": "similarity",
    "sampling": "cxc",
    "pool_depth": 2,
    "gold_exclusion_depth": 25,
    "candidates_per_hit": 4,
    "redundancy": 1,
    "qualification_items": 0,
    "qualification_pool_size": 0,
    "sample_count": 4,
    "seed": 3,
}
KEYS = ["4", "1", "5", "2", "3", "0"]


def _answer_hit(browser, live_server, campaign, name):
    user = user_with_role(Role.WORKER)
    worker_for_user(user=user)
    context = logged_in_context(browser, live_server, user, viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/work/campaigns/{campaign.pk}/")
    page.locator("#start-working").click()
    page.wait_for_selector("#hit-form .item")
    wait_until(page, "document.activeElement !== null && document.activeElement.closest('.item') !== null")
    total = page.locator("#hit-form .item").count()
    screenshot(page, f"cxc-{name}-01-hit", full_page=False)
    content = page.content()
    for number in range(1, total + 1):
        page.keyboard.press(KEYS[number % len(KEYS)])
        page.keyboard.press("Enter")
    assert page.locator("#progress-text").inner_text() == f"{total} / {total} answered"
    assert page.evaluate("document.activeElement.id") == "submit-hit"
    screenshot(page, f"cxc-{name}-02-complete")
    page.keyboard.press("Enter")
    page.wait_for_url("**/work/")
    screenshot(page, f"cxc-{name}-03-dashboard", full_page=False)
    context.close()
    assignment = Assignment.objects.get(worker__user=user)
    assert assignment.status in (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
    scores = sorted(Answer.objects.filter(assignment=assignment).values_list("score", flat=True))
    assert scores == sorted(float(KEYS[n % len(KEYS)]) for n in range(1, total + 1))
    return page, content, total


def test_sts_and_sis_hits_answered_with_the_keyboard(live_server, browser, media_served, tmp_path):  # noqa: F811
    world = SyntheticWorld(tmp_path, images=30, owner=UserFactory())
    runs = list(world.runs.values())
    sts = campaign_create(
        owner=world.dataset.owner, dataset=world.dataset, runs=runs, name="STS", direction="t2t", **OPTIONS
    )
    sis = campaign_create(
        owner=world.dataset.owner,
        dataset=world.dataset,
        runs=runs,
        name="SIS",
        direction="i2i",
        gold_positives_per_hit=0,
        **OPTIONS,
    )
    for campaign in (sts, sis):
        campaign_launch(campaign=campaign_build(campaign=campaign))

    _page, content, total = _answer_hit(browser, live_server, sts, "sts")
    assert content.count('class="pair pair-caption_caption"') == total  # two sentences in every item
    assert content.count("How similar in meaning are the two sentences?") == total
    assert "The texts are roughly equivalent but some important information differs or is missing." in content

    _page, content, total = _answer_hit(browser, live_server, sis, "sis")
    assert content.count('class="pair pair-image_image"') == total  # two images in every item
    assert content.count("How similar are the two scenes?") == total
    assert "The two scenes are roughly equivalent" in content
