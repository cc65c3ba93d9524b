"""One walk per role in Debian's Chromium, through the journeys a new requester, worker and researcher take,
with axe-core run on every page on the way (no serious or critical violation) and a phone-width look at each
role's main page.

Screenshots go to test-artifacts/ (gitignored): walk-requester-*.png, walk-worker-*.png, walk-researcher-*.png.
"""

import json
import re
from pathlib import Path

import pytest
from django.conf import settings

import config.urls
from annotator.crowd.services.workers import worker_for_user
from annotator.datasets.services.imports import dataset_import
from annotator.models import (
    Assignment,
    AssignmentStatus,
    Bonus,
    Campaign,
    CampaignStatus,
    QualificationAttempt,
    QualificationItem,
    Role,
    WorkerStanding,
)
from annotator.quality.services.decisions import assignment_reject
from annotator.quality.services.scoring import assignment_score
from annotator.quality.services.trust import worker_block
from tests.annotator.quality_support import submit
from tests.e2e.support import assert_accessible, axe_violations, logged_in_context, screenshot, wait_until
from tests.factories import WorkerFactory, live_campaign_with_hits, user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DEMO = Path(settings.BASE_DIR) / "fixtures" / "demo"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844, "is_mobile": True, "has_touch": True}
DRAWN = "[...document.querySelectorAll('[data-chart]')].every(f => f.getAttribute('data-chart-drawn') === 'true')"
PAINTED = """[...document.querySelectorAll('[data-chart] canvas')].every(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  for (let i = 3; i < d.length; i += 4) { if (d[i] !== 0) return true; }
  return false; })"""


@pytest.fixture
def media_served(settings, monkeypatch):
    """config.urls bound MEDIA_ROOT at import; point it at this test's temporary media directory."""
    for pattern in config.urls.urlpatterns:
        if "document_root" in getattr(pattern, "default_args", {}):
            monkeypatch.setitem(pattern.default_args, "document_root", str(settings.MEDIA_ROOT))


def look(page, name, *, full_page=True):
    """Check the page with axe-core, then keep a screenshot of it."""
    assert_accessible(page)
    screenshot(page, f"walk-{name}", full_page=full_page)


def phone_fits(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 30, f"{page.url} scrolls sideways on a phone ({width}px)"


def test_requester_walk(live_server, browser, media_served):
    """See the dataset, rank it, build and launch a campaign past the cost confirmation, watch its progress
    and charts, share it with a researcher, review (reject with a reason, approve), block with a reason,
    give a bonus."""
    requester = user_with_role(Role.REQUESTER, username="walk-requester")
    user_with_role(Role.RESEARCHER, username="walk-researcher")
    dataset = dataset_import(
        name="walk-demo", captions_path=DEMO / "captions.json", images_path=DEMO / "images", owner=requester
    )

    page = logged_in_context(browser, live_server, requester, viewport=DESKTOP).new_page()
    page.set_default_timeout(20000)
    page.goto(f"{live_server.url}/")
    look(page, "requester-01-home")
    nav = page.get_by_role("navigation", name="Main")
    nav.get_by_role("link", name="Datasets").click()
    look(page, "requester-02-datasets")
    page.get_by_role("link", name="walk-demo").click()
    page.wait_for_url(f"**/datasets/{dataset.pk}/")
    assert page.get_by_text("A close up of a tabby cat with green eyes.").is_visible()
    look(page, "requester-03-dataset")

    # Rank with the lexical annotator; the run page follows it until it is done.
    page.get_by_label("Rank with").select_option(label="tfidf_pivot (built in)")
    page.get_by_role("button", name="Rank").click()
    page.wait_for_url("**/ranking/runs/*/")
    page.get_by_text("Done (Succeeded)").wait_for()
    look(page, "requester-04-run")

    # A campaign from the run: the form, a draft, the build, the numbers, the confirmation with the cost.
    nav.get_by_role("link", name="Campaigns").click()
    page.get_by_role("link", name="New campaign").click()
    page.get_by_label("Name").fill("Walk: verify the demo")
    page.get_by_label("Dataset").select_option(label="walk-demo")
    page.get_by_label("tfidf_pivot on walk-demo", exact=False).check()
    page.get_by_label("Reward cents").fill("140")
    look(page, "requester-05-new-campaign")
    page.get_by_role("button", name="Save as draft").click()
    page.wait_for_url("**/campaigns/*/")
    page.get_by_role("button", name="Build HITs").click()
    page.locator("#stat-hits").wait_for()
    campaign = Campaign.objects.get(name="Walk: verify the demo")
    hits = campaign.hits.count()
    assert hits > 0 and page.locator("#stat-hits").inner_text() == str(hits)
    cost = page.locator("#stat-cost").inner_text()
    assert cost.startswith("$")
    look(page, "requester-06-built")
    page.get_by_role("button", name="Launch").click()
    page.wait_for_url(re.compile(r"/confirm/launch/"))
    assert page.locator("#confirm-cost").inner_text() == cost
    look(page, "requester-07-confirm-launch")
    page.get_by_role("button", name="Launch the campaign").click()
    page.get_by_text(f"0 submitted (awaiting review), 0 approved of {hits} HITs").wait_for()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.LIVE

    # The crowd works: three workers submit, one of them answers a check item wrong.
    first, second = campaign.hits.order_by("index")[:2]
    careful = WorkerFactory(pseudonym="careful-walker")
    careless = WorkerFactory(pseudonym="careless-walker")
    submitted = [
        submit(first, worker=careful, candidate="yes", seconds=4.0),
        submit(second, worker=careless, candidate="yes", gold_negative="yes", seconds=1.0),
        submit(second, worker=WorkerFactory(pseudonym="steady-walker"), candidate="no", seconds=7.0),
    ]
    for assignment in submitted:
        assignment_score(assignment_id=assignment.pk)
    page.reload()
    assert page.locator("#campaign-progress").is_visible()
    wait_until(page, DRAWN)
    wait_until(page, PAINTED)
    look(page, "requester-08-progress-and-charts")

    # Share with the researcher from the campaign page.
    page.get_by_label("Researcher's user name").fill("walk-researcher")
    page.get_by_role("button", name="Share", exact=True).click()
    assert page.get_by_text("Shared with walk-researcher").is_visible()
    assert campaign.shared_with.filter(username="walk-researcher").exists()

    # Review: the flagged careless submission is rejected with a reason, the careful one approved.
    nav.get_by_role("link", name="Review").click()
    look(page, "requester-09-review-index")
    page.get_by_role("link", name=campaign.name).first.click()
    look(page, "requester-10-queue")
    flagged = Assignment.objects.get(worker=careless)
    assert flagged.status == AssignmentStatus.SUBMITTED  # a check item answered wrong waits for a person
    page.get_by_role("link", name=f"#{flagged.pk}").click()
    look(page, "requester-11-assignment")
    page.get_by_label("Then open the next flagged assignment").uncheck()
    page.get_by_label("Reason (the worker sees it; required to reject)").fill("The check pair was answered 100% YES.")
    page.get_by_role("button", name="Reject").click()
    page.wait_for_url(f"**/review/campaigns/{campaign.pk}/")
    flagged.refresh_from_db()
    assert flagged.status == AssignmentStatus.REJECTED

    # The careful worker's clean submission waits for auto-approval; approve it now from that list.
    good = Assignment.objects.get(worker=careful)
    assert good.status == AssignmentStatus.SUBMITTED
    page.get_by_role("region", name="Waiting for auto-approval").get_by_role("link", name=f"#{good.pk}").click()
    page.get_by_role("button", name="Approve").click()
    page.wait_for_url(f"**/review/campaigns/{campaign.pk}/")
    good.refresh_from_db()
    assert good.status == AssignmentStatus.APPROVED

    # Block the careless worker with a reason, from the quality page.
    page.goto(f"{live_server.url}/review/campaigns/{campaign.pk}/quality/")
    wait_until(page, DRAWN)
    row = page.locator("#per-worker tbody tr", has_text="careless-walker")
    row.get_by_label("Reason").fill("Answers every check pair YES")
    row.get_by_role("button", name="Block").click()
    page.wait_for_load_state()
    standing = WorkerStanding.objects.get(worker=careless, requester=requester)
    assert standing.blocked and standing.blocked_reason == "Answers every check pair YES"
    wait_until(page, DRAWN)
    look(page, "requester-12-quality")

    # A bonus for the careful worker.
    page.goto(f"{live_server.url}/review/assignments/{good.pk}/")
    page.get_by_label("Bonus in dollars").fill("0.50")
    page.get_by_label("Why (the worker sees it)").fill("Careful work on the first HIT")
    page.get_by_role("button", name="Give the bonus").click()
    page.locator("#bonuses").wait_for()
    assert Bonus.objects.get(assignment=good).amount_cents == 50
    look(page, "requester-13-bonus")

    phone = logged_in_context(browser, live_server, requester, viewport=PHONE).new_page()
    phone.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    wait_until(phone, DRAWN)
    phone_fits(phone)
    look(phone, "requester-14-phone-campaign", full_page=False)
    wait_until(phone, PAINTED)
    phone.locator("#throughput-heading").scroll_into_view_if_needed()
    screenshot(phone, "walk-requester-15-phone-charts", full_page=False)


def _answer_by_keyboard(page, numbers) -> None:
    """ "100% YES" on odd items, "100% NO" on even ones, each confirmed with Enter."""
    for number in numbers:
        page.keyboard.press("1" if number % 2 else "4")
        page.keyboard.press("Enter")


def _all_saved(page) -> None:
    wait_until(page, "document.getElementById('save-state').textContent === 'All answers saved.'")


def test_worker_walk(live_server, browser, media_served):
    """The qualification with the number keys, a HIT answered by keyboard, left half-way and taken up again,
    submitted; earnings; a rejected HIT with its reason; blocked by the requester: told so, offered nothing."""
    campaign = live_campaign_with_hits(hits=3, candidates=16, qualification_items=2, name="Walk: captions")
    user = user_with_role(Role.WORKER, username="walk-worker")
    worker = worker_for_user(user=user)
    page = logged_in_context(browser, live_server, user, viewport=DESKTOP).new_page()
    page.set_default_timeout(20000)

    page.goto(f"{live_server.url}/")
    look(page, "worker-00-home")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Your work").click()
    page.wait_for_url("**/work/")
    look(page, "worker-01-dashboard")
    page.get_by_role("link", name="Take the qualification test").click()
    look(page, "worker-02-campaign")
    page.locator("#take-test").click()
    page.wait_for_selector("#qualification-form")
    wait_until(page, "document.readyState === 'complete'")
    attempt = QualificationAttempt.objects.get(worker=worker, campaign=campaign)
    roles = dict(QualificationItem.objects.filter(campaign=campaign).values_list("pk", "role"))
    for pair_id in attempt.items:
        page.keyboard.press("1" if roles[pair_id] == "gold_positive" else "4")
    look(page, "worker-03-qualification", full_page=False)
    page.keyboard.press("Enter")
    page.wait_for_selector("#start-working")
    assert "You passed the test" in page.content()
    look(page, "worker-04-passed")

    page.locator("#start-working").click()
    page.wait_for_selector("#hit-form .item")
    wait_until(page, "document.activeElement !== null && document.activeElement.closest('.item') !== null")
    total = page.locator("#hit-form .item").count()
    assert total == 18
    _answer_by_keyboard(page, range(1, 10))
    _all_saved(page)
    look(page, "worker-05-hit-halfway", full_page=False)

    # Leave and come back: the dashboard offers the HIT again, with the nine answers kept.
    page.goto(f"{live_server.url}/work/")
    page.get_by_role("link", name="Continue your HIT").click()
    page.wait_for_selector("#hit-form .item")
    wait_until(page, "document.activeElement !== null && document.activeElement.closest('.item') !== null")
    assert page.locator("#progress-text").inner_text() == "9 / 18 answered"
    assert page.evaluate("document.activeElement.closest('.item').id") == "item-10"
    _answer_by_keyboard(page, range(10, total + 1))
    assert page.evaluate("document.activeElement.id") == "submit-hit"
    look(page, "worker-06-hit-complete", full_page=False)
    page.keyboard.press("Enter")
    page.wait_for_url("**/work/")
    assert page.locator("#stat-pending").inner_text() == "1"
    assignment = Assignment.objects.get(worker=worker)
    assert assignment.answers.count() == 18

    # The requester approves it (earnings) and rejects another of the worker's HITs with a reason.
    from annotator.quality.services.decisions import assignment_approve

    if assignment.status == AssignmentStatus.SUBMITTED:
        assignment_approve(assignment=assignment, actor=campaign.owner)
    rejected = submit(campaign.hits.exclude(pk=assignment.hit_id).first(), worker=worker)
    assignment_reject(assignment=rejected, actor=campaign.owner, reason="The check pair (a dog) was answered 100% YES.")
    page.reload()
    assert page.locator("#stat-earnings").inner_text() == f"${campaign.reward_cents / 100:.2f}"
    assert "Reason: The check pair (a dog) was answered 100% YES." in page.content()
    assert page.locator("[aria-labelledby=recent-title] time").count() == 2  # shown in the browser's own zone
    look(page, "worker-07-earnings-and-rejection")
    page.get_by_role("link", name=f"#{rejected.hit.index + 1}", exact=True).click()  # HITs count from 1
    assert "The check pair (a dog) was answered 100% YES." in page.locator("#rejection").inner_text()
    look(page, "worker-08-rejected-hit", full_page=False)

    phone = logged_in_context(browser, live_server, user, viewport=PHONE).new_page()
    phone.goto(f"{live_server.url}/work/")
    phone_fits(phone)
    look(phone, "worker-09-phone-dashboard", full_page=False)

    # Blocked by the requester: the campaign is no longer offered, and its page says why nothing is.
    worker_block(worker=worker, requester=campaign.owner, actor=campaign.owner, reason="Too fast")
    page.goto(f"{live_server.url}/work/")
    assert page.get_by_role("link", name="Start working").count() == 0
    page.goto(f"{live_server.url}/work/campaigns/{campaign.pk}/")
    assert "This requester does not offer you work" in page.content()
    assert page.locator("#start-working").count() == 0
    look(page, "worker-10-blocked")


def test_researcher_walk(live_server, browser, tmp_path, settings):
    """A campaign shared with the researcher is listed; its labels download as ECCV JSON; a model's rankings
    are evaluated; the leaderboard and the label sets follow."""
    settings.EVALUATION_RESAMPLES = 50  # the intervals' bootstrap; 1,000 by default
    from tests.leaderboard_support import labelled_campaign, labelled_dataset, noisy_rankings

    owner = user_with_role(Role.REQUESTER, username="walk-owner")
    researcher = user_with_role(Role.RESEARCHER, username="walk-reader")
    dataset, truth = labelled_dataset(tmp_path=tmp_path)
    campaign = labelled_campaign(owner=owner, dataset=dataset, truth=truth)
    campaign.name = "Walk: shared labels"
    campaign.save(update_fields=["name"])
    campaign.shared_with.add(researcher)
    rankings = tmp_path / "my-model.json"
    rankings.write_text(json.dumps(noisy_rankings(truth, dataset=dataset, noise=0.2, seed=3)))

    page = logged_in_context(browser, live_server, researcher, viewport=DESKTOP).new_page()
    page.set_default_timeout(20000)
    page.goto(f"{live_server.url}/")
    look(page, "researcher-01-home")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Labels & evaluation").click()
    look(page, "researcher-02-research")
    page.get_by_role("link", name="Walk: shared labels").first.click()
    page.wait_for_url(f"**/research/campaigns/{campaign.pk}/")
    look(page, "researcher-03-campaign")

    page.get_by_label("Format").select_option("eccv_json")
    page.get_by_role("button", name="Start export").click()
    download_link = page.get_by_role("link", name=re.compile(r"^Download \("))
    download_link.wait_for()
    with page.expect_download() as info:
        download_link.click()
    labels = json.loads(Path(info.value.path()).read_text())
    assert labels["i2t"] and labels["t2i"]
    assert set(labels["i2t"]) <= set(truth["i2t"])  # ECCV's form, in the dataset's own ids

    page.get_by_label("Model name").fill("my-model")
    page.get_by_label("Rankings file (JSON)").set_input_files(str(rankings))
    page.get_by_role("button", name="Evaluate", exact=True).click()
    page.wait_for_url(f"**/research/campaigns/{campaign.pk}/**")
    row = page.locator("tr", has_text="my-model").first
    row.wait_for()
    assert "Succeeded" in row.inner_text()
    look(page, "researcher-04-evaluated")

    page.get_by_role("link", name="the leaderboard of these labels").click()
    board = page.locator("table.board")
    assert board.locator("tbody th[scope=row]", has_text="my-model").count() == 1
    look(page, "researcher-05-leaderboard")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Label sets").click()
    look(page, "researcher-06-labelsets")

    phone = logged_in_context(browser, live_server, researcher, viewport=PHONE).new_page()
    phone.goto(f"{live_server.url}/research/campaigns/{campaign.pk}/")
    phone_fits(phone)
    look(phone, "researcher-07-phone-campaign", full_page=False)


def test_the_pages_no_walk_passes_have_no_serious_accessibility_violation(live_server, browser, media_served):
    """axe-core on the pages the three walks do not pass through: log-in, sign-up, the error pages, and the
    requester's and the staff's own pages (Swagger and Redoc aside)."""
    from tests.factories import RankingRunFactory

    campaign = live_campaign_with_hits(hits=2, candidates=4, name="Tour campaign")
    owner = campaign.owner
    owner.username = "tour-requester"
    owner.save(update_fields=["username"])
    RankingRunFactory(dataset=campaign.dataset)
    draft = Campaign.objects.create(owner=owner, dataset=campaign.dataset, name="Tour draft")
    submitted = submit(campaign.hits.first(), worker=WorkerFactory(pseudonym="tour-worker"))
    assignment_score(assignment_id=submitted.pk)
    staff = user_with_role(Role.REQUESTER, username="tour-staff", is_staff=True)
    worker_user = user_with_role(Role.WORKER, username="tour-worker-user")
    worker_for_user(user=worker_user)
    visits = {
        None: [("/accounts/login/", 200), ("/accounts/signup/", 200), ("/no-such-page/", 404)],
        owner: [
            ("/campaigns/", 200),
            (f"/campaigns/{campaign.pk}/preview/", 200),
            (f"/campaigns/{draft.pk}/delete/", 200),
            (f"/datasets/{campaign.dataset_id}/ranking/", 200),
            (f"/review/campaigns/{campaign.pk}/agreement/", 200),
            (f"/review/campaigns/{campaign.pk}/cleanup/", 200),
            (f"/campaigns/{campaign.pk}/confirm/finish/", 200),
            ("/money/bonuses/failed/", 200),
            ("/account/audit/", 200),
            ("/webhooks/", 200),
            ("/account/token/", 200),
            ("/account/reputation/", 200),
            ("/operations/", 200),
            ("/research/leaderboard/", 200),
            ("/work/", 403),
            ("/campaigns/999999/", 404),
        ],
        staff: [("/accounts/new/", 200), ("/account/audit/", 200)],
        worker_user: [("/campaigns/", 403), (f"/work/campaigns/{campaign.pk}/", 200)],
    }
    for user, pages in visits.items():
        if user is None:
            context = browser.new_context(viewport=DESKTOP)
        else:
            context = logged_in_context(browser, live_server, user, viewport=DESKTOP)
        page = context.new_page()
        for path, status in pages:
            response = page.goto(f"{live_server.url}{path}")
            assert response.status == status, path
            assert_accessible(page)
        context.close()
    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("User name").fill("tour-requester")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()
    assert_accessible(page)  # the form with its error
    screenshot(page, "walk-tour-login-error", full_page=False)
    # The check itself finds what it is meant to: a button without a name is a critical violation.
    page.evaluate("() => document.querySelector('main').append(document.createElement('button'))")
    assert [v["id"] for v in axe_violations(page)] == ["button-name"]
