"""The Crisscrossed Captions preset (5 ratings, mean label, CxC's threshold per task, qualification optional)
on `build_campaign`, the API and the form; CxC's own sampling_method names in the CxC export; and
`simulate_crowd --campaign ID` driving a simulated crowd on an existing campaign."""

import csv
import io
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.campaigns.services.presets import preset_options
from annotator.labels.services.exports.write import labels_write
from annotator.models import Campaign, CampaignStatus, Label, Role
from tests import factories
from tests.annotator.cxc.support import SyntheticWorld

pytestmark = pytest.mark.django_db

CXC_NAMES = {"c2i_intrasim", "c2i_original", "c2c_isim", "c2c_cocaption", "i2i_csim"}


@pytest.fixture
def world(tmp_path):
    return SyntheticWorld(tmp_path, images=24, owner=factories.UserFactory())


def _cxc_protocol(campaign: Campaign, *, positive_at: float, qualification_items: int = 0, redundancy: int = 5):
    assert campaign.scale == "similarity" and campaign.redundancy == redundancy and campaign.label_model == "mean"
    assert not campaign.adaptive_redundancy and not campaign.machine_prior
    assert campaign.qualification_items == qualification_items and campaign.positive_at == positive_at


def test_the_preset_fills_what_is_not_given_and_keeps_what_is():
    options = preset_options(
        preset="cxc", options={"direction": "i2i", "redundancy": 3}, given={"direction", "redundancy"}
    )
    assert options["redundancy"] == 3 and options["sampling"] == "cxc" and options["gold_positives_per_hit"] == 0
    assert options["label_model"] == "mean" and options["qualification_items"] == 0
    assert options["similarity_positive_at"] is None  # CxC's threshold of the task: 2.5 for SIS
    assert preset_options(preset=None, options={"redundancy": 1}, given=set()) == {"redundancy": 1}


def test_build_campaign_with_the_cxc_preset_then_simulate_crowd_on_it_and_export_cxc_names(world, tmp_path):
    run_ids = ",".join(str(run.pk) for run in world.runs.values())
    common = ["--dataset", world.dataset.name, "--runs", run_ids, "--preset", "cxc", "--sample-count", "6"]
    out = StringIO()
    call_command(
        "build_campaign", *common, "--name", "sts", "--direction", "t2t", "--candidates-per-hit", "8", stdout=out
    )
    campaign = Campaign.objects.get(name="sts")
    _cxc_protocol(campaign, positive_at=3.0)
    assert campaign.sampling == "cxc" and campaign.status == CampaignStatus.BUILT

    call_command(
        "build_campaign", *common, "--name", "sits", "--direction", "i2t", "--qualification-items", "4", stdout=out
    )
    _cxc_protocol(Campaign.objects.get(name="sits"), positive_at=3.0, qualification_items=4)

    done = StringIO()
    call_command("simulate_crowd", "--campaign", str(campaign.pk), "--seed", "1", stdout=done)
    report = json.loads(done.getvalue())
    campaign.refresh_from_db()
    assert report["submitted"] == 5 * campaign.hits.count() and report["truth"] == "the dataset's original pairs"
    assert Label.objects.filter(pair__campaign=campaign, method="mean", score__isnull=False).exists()
    exported = io.BytesIO()
    labels_write(
        out=exported, campaign_id=campaign.pk, format="cxc_csv", method="mean", variant="", merge_original=False
    )
    rows = list(csv.DictReader(io.StringIO(exported.getvalue().decode())))
    assert rows and {row["sampling_method"] for row in rows} <= CXC_NAMES
    with pytest.raises(CommandError, match="no campaign 999999"):
        call_command("simulate_crowd", "--campaign", "999999")


def test_simulate_crowd_on_a_draft_campaign_is_refused(world):
    campaign = campaign_create(
        owner=world.dataset.owner, dataset=world.dataset, runs=list(world.runs.values()), name="draft"
    )
    with pytest.raises(CommandError, match="built or live"):
        call_command("simulate_crowd", "--campaign", str(campaign.pk))


def test_a_four_choice_campaign_gets_a_simulated_crowd_too(world):
    campaign = campaign_create(
        owner=world.dataset.owner,
        dataset=world.dataset,
        runs=list(world.runs.values()),
        name="eccv",
        sample_count=4,
        pool_depth=3,
        candidates_per_hit=8,
        redundancy=1,
        qualification_items=0,
    )
    campaign = campaign_build(campaign=campaign)
    hits = campaign.hits.count()
    out = StringIO()
    call_command("simulate_crowd", "--campaign", str(campaign.pk), stdout=out)
    report = json.loads(out.getvalue())
    assert report["submitted"] >= hits > 0  # every built HIT (aggregation may add follow-up HITs after)
    assert Label.objects.filter(pair__campaign=campaign).exists()


def test_the_api_and_the_form_take_the_preset(world, client):
    requester = world.dataset.owner
    factories.ProfileFactory(user=requester, role=Role.REQUESTER) if not hasattr(requester, "profile") else None
    requester.profile.role = Role.REQUESTER
    requester.profile.save()
    api = APIClient()
    api.force_authenticate(requester)
    runs = [run.pk for run in world.runs.values()]
    answer = api.post(
        "/api/v1/campaigns/",
        {"dataset": world.dataset.pk, "runs": runs, "name": "api sis", "direction": "i2i", "preset": "cxc"},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    campaign = Campaign.objects.get(pk=answer.json()["id"])
    _cxc_protocol(campaign, positive_at=2.5)
    assert campaign.sampling == "cxc" and campaign.gold_positives_per_hit == 0
    bad = api.post(
        "/api/v1/campaigns/",
        {"dataset": world.dataset.pk, "runs": runs, "name": "x", "preset": "nope"},
        format="json",
    )
    assert bad.status_code == 400

    client.force_login(requester)
    page = client.get(reverse("campaign-new")).content.decode()
    assert 'name="preset"' in page and "Crisscrossed Captions: 5 ratings" in page
    form = {
        "name": "form sts",
        "dataset": world.dataset.pk,
        "runs": runs,
        "direction": "t2t",
        "preset": "cxc",
        "scale": "four_choice",
        "seed": 3,
        "pool_depth": 3,
        "gold_exclusion_depth": 25,
        "candidates_per_hit": 8,
        "gold_positives_per_hit": 1,
        "gold_negatives_per_hit": 1,
        "gold_reuse_limit": 3,
        "redundancy": 1,
        "reward_cents": 50,
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
        "adaptive_redundancy": "on",
        "machine_prior": "on",
    }
    response = client.post(reverse("campaign-new"), form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    _cxc_protocol(Campaign.objects.get(name="form sts"), positive_at=3.0)
