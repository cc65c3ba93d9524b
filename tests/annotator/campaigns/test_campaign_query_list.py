"""An explicit query list per campaign stage (issue 35: ECCV Caption's exact queries could not be re-run,
only a sampled count or fraction): the service, build_campaign --query-list and the API."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.core.errors import ApplicationError
from annotator.models import Campaign, Caption, Image, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    dataset = make_dataset(images=20, captions_per_image=2)
    dataset.owner = user_with_role(Role.REQUESTER)
    dataset.save(update_fields=["owner"])
    runs = [add_run(dataset=dataset, name=f"ql-{i}", seed=i) for i in range(2)]
    return dataset, runs


def _options(**extra):
    return {"pool_depth": 3, "gold_exclusion_depth": 5, "candidates_per_hit": 4, "qualification_items": 0, **extra}


def test_a_stage_takes_exactly_the_listed_queries_and_reports_the_rest(world):
    dataset, runs = world
    images = list(Image.objects.filter(dataset=dataset).order_by("pk").values_list("source_id", "pk"))[:4]
    captions = list(Caption.objects.filter(dataset=dataset).order_by("pk").values_list("source_id", "pk"))[5:8]
    listed = {"i2t": [source for source, _ in images] + ["no-such-image"], "t2i": [source for source, _ in captions]}
    campaign = campaign_create(
        owner=dataset.owner,
        dataset=dataset,
        runs=runs,
        name="listed",
        direction="both",
        query_list=listed,
        **_options(),
    )
    campaign = campaign_build(campaign=campaign)
    stages = {stage["direction"]: stage for stage in campaign.build_report["stages"]}
    assert sorted(stages["i2t"]["queries"]) == sorted(pk for _, pk in images)
    assert sorted(stages["t2i"]["queries"]) == sorted(pk for _, pk in captions)
    assert stages["i2t"]["query_list"] == {
        "listed": 5,
        "matched": 4,
        "unknown": 1,
        "unknown_examples": ["no-such-image"],
        "not_ranked": 0,
    }


def test_a_list_with_a_sample_or_for_another_stage_or_matching_nothing_is_refused(world):
    dataset, runs = world
    image = Image.objects.filter(dataset=dataset).first().source_id
    with pytest.raises(ApplicationError, match="not both"):
        campaign_create(
            owner=dataset.owner, dataset=dataset, runs=runs, name="x", query_list={"i2t": [image]}, sample_count=3
        )
    with pytest.raises(ApplicationError, match="the campaign's own stages"):
        campaign_create(owner=dataset.owner, dataset=dataset, runs=runs, name="x", query_list={"t2i": [image]})
    nothing = campaign_create(
        owner=dataset.owner, dataset=dataset, runs=runs, name="x", query_list={"i2t": ["nope"]}, **_options()
    )
    with pytest.raises(ApplicationError, match="None of the 1 listed i2t queries"):
        campaign_build(campaign=nothing)


def test_build_campaign_and_the_api_take_a_query_list(world, tmp_path):
    dataset, runs = world
    images = list(Image.objects.filter(dataset=dataset).order_by("pk").values_list("source_id", flat=True))[:3]
    path = tmp_path / "queries.json"
    path.write_text(json.dumps({"i2t": images}))
    call_command(
        "build_campaign",
        "--dataset",
        dataset.name,
        "--runs",
        ",".join(str(r.pk) for r in runs),
        "--name",
        "cli",
        "--query-list",
        str(path),
        "--pool-depth",
        "3",
        "--candidates-per-hit",
        "4",
        "--qualification-items",
        "0",
        stdout=StringIO(),
    )
    campaign = Campaign.objects.get(name="cli")
    assert campaign.query_list == {"i2t": images}
    assert campaign.build_report["stages"][0]["query_count"] == 3
    api = APIClient()
    api.force_authenticate(dataset.owner)
    answer = api.post(
        "/api/v1/campaigns/",
        {"dataset": dataset.pk, "runs": [r.pk for r in runs], "name": "api", "query_list": {"i2t": images[:2]}},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["query_list"] == {"i2t": images[:2]}
    bad = api.post(
        "/api/v1/campaigns/",
        {"dataset": dataset.pk, "runs": [r.pk for r in runs], "name": "bad", "query_list": {"zz": ["1"]}},
        format="json",
    )
    assert bad.status_code == 400 and "query list" in bad.content.decode()
