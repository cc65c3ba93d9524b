"""Requester campaign pages: role checks, ownership, the create form, the state buttons, the statistics,
the queued build (building, built or failed)."""

import pytest
from django.urls import reverse

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.models import Campaign, CampaignStatus, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name=f"pages-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    return dataset, runs


@pytest.fixture
def requester(client):
    user = user_with_role(Role.REQUESTER)
    client.force_login(user)
    return user


def test_only_requesters_reach_the_pages(client):
    assert client.get(reverse("campaign-list")).status_code == 302  # to the log-in page
    for role in (Role.WORKER, Role.RESEARCHER):
        client.force_login(user_with_role(role))
        assert client.get(reverse("campaign-list")).status_code == 403
        assert client.get(reverse("campaign-new")).status_code == 403


def test_a_requester_sees_only_their_own_campaigns(client, requester, world):
    dataset, runs = world
    mine = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Mine <script>")
    theirs = campaign_create(owner=user_with_role(Role.REQUESTER), dataset=dataset, runs=runs, name="Theirs")
    page = client.get(reverse("campaign-list")).content.decode()
    assert "Mine &lt;script&gt;" in page and "<script>" not in page.split("<main")[1]
    assert "Theirs" not in page
    assert client.get(reverse("campaign-detail", args=[theirs.pk])).status_code == 404
    response = client.post(reverse("campaign-action", args=[theirs.pk, "build"]))
    assert response.status_code == 404
    assert Campaign.objects.get(pk=theirs.pk).status == CampaignStatus.DRAFT
    assert client.get(reverse("campaign-detail", args=[mine.pk])).status_code == 200


def test_the_create_form_makes_a_draft_and_explains_bad_input(client, requester, world):
    dataset, runs = world
    page = client.get(reverse("campaign-new")).content.decode()
    assert 'name="pool_depth"' in page and 'for="id_pool_depth"' in page and f'data-dataset="{dataset.pk}"' in page
    base = {
        "name": "Form campaign",
        "dataset": dataset.pk,
        "runs": [r.pk for r in runs],
        "direction": "i2t",
        "scale": "four_choice",
        "rationale_followups": "on",
        "seed": 3,
        "pool_depth": 5,
        "gold_exclusion_depth": 25,
        "candidates_per_hit": 16,
        "gold_positives_per_hit": 1,
        "gold_negatives_per_hit": 1,
        "gold_reuse_limit": 3,
        "redundancy": 2,
        "reward_cents": 140,
        "platform_fee_percent": 20,
        "lease_minutes": 30,
        "qualification_items": 6,
        "qualification_pass_mark": 0.8,
        "qualification_cooldown_minutes": 60,
        "qualification_pool_size": 40,
        "gold_max_exposure": 6,
        "similarity_gold_threshold": 3,
        "gold_fail_action": "review",
        "auto_approve_hours": 72,
        "min_seconds_per_item": 1,
        "confidence_threshold": 0.7,
        "extra_assignment_cap": 0,
    }
    bad = client.post(reverse("campaign-new"), {**base, "sample_count": 3, "sample_fraction": 0.5})
    assert bad.status_code == 400 and "not both" in bad.content.decode()
    bad = client.post(reverse("campaign-new"), {**base, "redundancy": 10})
    assert bad.status_code == 400 and "redundancy" in bad.content.decode().lower()
    assert not Campaign.objects.exists()
    response = client.post(reverse("campaign-new"), base)
    campaign = Campaign.objects.get(name="Form campaign")
    assert response.status_code == 302 and response["Location"] == reverse("campaign-detail", args=[campaign.pk])
    assert campaign.owner == requester and campaign.redundancy == 2 and campaign.reward_cents == 140
    assert set(campaign.runs.all()) == set(runs)
    # The label options left out of the form take the campaign defaults; the page offers them.
    assert campaign.label_model == "posterior" and campaign.settle_probability == 0.95
    default_cap = Campaign._meta.get_field("max_answers_per_pair").default
    assert campaign.max_answers_per_pair == default_cap and 'name="settle_probability"' in page


def test_build_launch_pause_resume_through_the_buttons_with_statistics(
    client, requester, world, django_capture_on_commit_callbacks, background_tasks
):
    dataset, runs = world
    campaign = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Buttons", reward_cents=100)
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "Build HITs" in page and "Launch" not in page
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(reverse("campaign-action", args=[campaign.pk, "build"])).status_code == 302
    assert background_tasks == [("workers.tasks.campaigns.campaign_build_task", campaign.pk)]
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.BUILT
    hits = campaign.hits.count()
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert f'id="stat-hits">{hits}<' in page
    assert f'id="stat-cost">${hits * 1.2:,.2f}<' in page
    assert "Overlap between annotators" in page and "pages-0 (run" in page
    # A refused move is a readable 409, not a 500.
    response = client.post(reverse("campaign-action", args=[campaign.pk, "pause"]))
    assert response.status_code == 409 and "cannot become paused" in response.content.decode()
    for action, status in (("launch", "live"), ("pause", "paused"), ("resume", "live"), ("finish", "finished")):
        data = {"confirm": "yes"} if action in ("launch", "finish") else {}
        assert client.post(reverse("campaign-action", args=[campaign.pk, action]), data).status_code == 302
        campaign.refresh_from_db()
        assert campaign.status == status
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert f"0 submitted (awaiting review), 0 approved of {hits} HITs" in page
    assert client.get(reverse("campaign-action", args=[campaign.pk, "launch"])).status_code == 405
    assert client.post(f"/campaigns/{campaign.pk}/explode/").status_code == 404


def test_adding_a_run_from_the_page(client, requester, world):
    dataset, runs = world
    campaign = campaign_build(
        campaign=campaign_create(owner=requester, dataset=dataset, runs=runs[:1], name="Grow", sample_count=10)
    )
    before = campaign.hits.count()
    response = client.post(reverse("campaign-run-add", args=[campaign.pk]), {"run": runs[1].pk})
    assert response.status_code == 302
    assert campaign.hits.count() > before and campaign.runs.count() == 2
    assert client.post(reverse("campaign-run-add", args=[campaign.pk]), {"run": "x"}).status_code == 400


def test_the_build_button_queues_the_build_and_the_page_follows_it(
    client, requester, world, django_capture_on_commit_callbacks
):
    """The POST answers at once (building, the page refreshes itself); the task then builds it (eager here)."""
    dataset, runs = world
    campaign = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Queued", sample_count=10)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("campaign-action", args=[campaign.pk, "build"]), follow=True)
    assert response.redirect_chain == [(reverse("campaign-detail", args=[campaign.pk]), 302)]
    page = response.content.decode()
    assert "Building&hellip;" in page and 'data-job-state="queued"' in page  # the widget polls it
    assert "Build HITs" not in page and "Rebuild" not in page and not campaign.hits.exists()
    assert Campaign.objects.get(pk=campaign.pk).status == CampaignStatus.BUILDING
    # A second click while it builds is a readable 409 and queues nothing more.
    with django_capture_on_commit_callbacks(execute=False) as again:
        response = client.post(reverse("campaign-action", args=[campaign.pk, "build"]))
    assert response.status_code == 409 and "being built already" in response.content.decode() and not again
    assert len(callbacks) == 1
    callbacks[0]()  # the worker runs the task
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.BUILT and campaign.hits.exists() and campaign.build_error == ""
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "Building&hellip;" not in page and "data-job-url" not in page
    assert f'id="stat-hits">{campaign.hits.count()}<' in page and "Launch" in page


def test_a_stalled_build_offers_to_queue_it_again(client, requester, world, django_capture_on_commit_callbacks):
    from django.utils import timezone

    dataset, runs = world
    campaign = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Lost", sample_count=10)
    with django_capture_on_commit_callbacks(execute=False):
        client.post(reverse("campaign-action", args=[campaign.pk, "build"]))
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "Building&hellip;" in page and "Queue the build again" not in page
    Campaign.objects.filter(pk=campaign.pk).update(build_requested_at=timezone.now() - timezone.timedelta(hours=1))
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "may have been lost" in page and "Queue the build again" in page
    with django_capture_on_commit_callbacks(execute=True) as queued:
        response = client.post(reverse("campaign-action", args=[campaign.pk, "build"]))
    assert response.status_code == 302 and len(queued) == 1
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.BUILT


def test_a_failed_build_goes_back_to_draft_with_its_error_on_the_page(
    client, requester, world, django_capture_on_commit_callbacks
):
    dataset, runs = world  # runs of i2t candidates only: a t2i campaign finds none when it builds
    campaign = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Doomed", direction="t2i")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("campaign-action", args=[campaign.pk, "build"]))
    assert response.status_code == 302 and response["Location"] == reverse("campaign-detail", args=[campaign.pk])
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.DRAFT and not campaign.hits.exists()
    assert campaign.build_error == "The chosen runs have no t2i candidates for this campaign."
    page = client.get(response["Location"]).content.decode()
    assert "The last build failed" in page and "no t2i candidates" in page and "Build HITs" in page
    assert 'http-equiv="refresh"' not in page


def test_a_build_the_request_can_refuse_is_a_400_and_queues_nothing(
    client, requester, world, django_capture_on_commit_callbacks
):
    dataset, runs = world
    campaign = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Bad runs")
    runs[0].status = "failed"
    runs[0].save(update_fields=["status"])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("campaign-action", args=[campaign.pk, "build"]))
    assert response.status_code == 400 and "only succeeded runs can be pooled" in response.content.decode()
    assert not callbacks and Campaign.objects.get(pk=campaign.pk).status == CampaignStatus.DRAFT
