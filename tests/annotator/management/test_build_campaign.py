"""manage.py build_campaign and the demo campaign step."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.core.management.base import OutputWrapper

from annotator.models import Campaign, CampaignStatus, Role
from annotator.scenarios.demo import DEMO_CAMPAIGN_NAME, demo_campaign
from tests.annotator.campaign_support import add_run, campaign_snapshot, make_dataset
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


def test_build_campaign_command_builds_launches_and_prints_the_numbers():
    owner = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name=f"cmd-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    out = io.StringIO()
    call_command(
        "build_campaign",
        "--dataset",
        dataset.name,
        "--runs",
        ",".join(str(r.pk) for r in runs),
        "--name",
        "cli",
        "--owner",
        owner.username,
        "--sample-count",
        "20",
        "--redundancy",
        "2",
        "--launch",
        stdout=out,
    )
    campaign = Campaign.objects.get(name="cli")
    assert campaign.status == CampaignStatus.LIVE and campaign.redundancy == 2 and campaign.sample_count == 20
    text = out.getvalue()
    assert f"HITs {campaign.hits.count()}" in text and "proposals" in text and "unique pairs" in text
    with pytest.raises(CommandError, match="No ranking runs"):
        call_command(
            "build_campaign", "--dataset", dataset.name, "--runs", "999999", "--name", "x", "--owner", owner.username
        )
    with pytest.raises(CommandError, match="not both"):
        call_command(
            "build_campaign",
            "--dataset",
            dataset.name,
            "--runs",
            str(runs[0].pk),
            "--name",
            "x",
            "--owner",
            owner.username,
            "--sample-count",
            "3",
            "--sample-fraction",
            "0.5",
        )


def test_demo_campaign_is_built_launched_and_idempotent():
    user_with_role(Role.REQUESTER, username="requester")
    dataset = make_dataset(images=15, name="demo")
    for name, seed in (("minilm_pivot", 1), ("tfidf_pivot", 2)):
        add_run(dataset=dataset, name=name, seed=seed, directions=("i2t",))
    out = io.StringIO()
    demo_campaign(out=OutputWrapper(out))
    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN_NAME)
    assert campaign.status == CampaignStatus.LIVE
    snapshot = campaign_snapshot(campaign)
    assert len(snapshot) >= 3 and all(len(items) == 18 for *_h, items in snapshot)
    assert "is live" in out.getvalue()
    demo_campaign(out=OutputWrapper(io.StringIO()))
    assert Campaign.objects.filter(name=DEMO_CAMPAIGN_NAME).count() == 1
    assert campaign_snapshot(Campaign.objects.get(name=DEMO_CAMPAIGN_NAME)) == snapshot
