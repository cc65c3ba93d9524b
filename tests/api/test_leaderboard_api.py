"""The leaderboard and the evaluations of the REST API: keyed creation, ranking runs, CSV, the board."""

import csv
import io

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator import models
from tests import factories
from tests.leaderboard_support import leaderboard_world, noisy_rankings

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def world(tmp_path, django_capture_on_commit_callbacks):
    owner = factories.user_with_role(models.Role.REQUESTER, username="req-api-lb")
    researcher = factories.user_with_role(models.Role.RESEARCHER, username="res-api-lb")
    campaign, evaluations = leaderboard_world(
        tmp_path=tmp_path, capture=django_capture_on_commit_callbacks, owner=owner, researcher=researcher
    )
    return campaign, evaluations, owner, researcher


def test_the_leaderboard_endpoint(world):
    campaign, evaluations, _, researcher = world
    response = api(researcher).get(f"/api/v1/leaderboard/?campaign={campaign.pk}&direction=t2i&sort=ncs5")
    assert response.status_code == 200
    board = response.json()
    assert board["sort"] == "ncs5" and board["direction"] == "t2i" and len(board["rows"]) == 5
    values = [row["metrics"]["ncs5"]["value"] for row in board["rows"]]
    assert values == sorted(values, reverse=True)
    builder = next(row for row in board["rows"] if row["name"] == "tfidf-builder")
    assert builder["biased"] and builder["source"].startswith("run ")
    assert set(board["kendall_tau"]) == {column["key"] for column in board["columns"]}
    bad = api(researcher).get(f"/api/v1/leaderboard/?campaign={campaign.pk}&direction=up")
    assert bad.status_code == 400 and "direction" in bad.json()["fields"]


def test_evaluating_a_run_through_the_api_is_keyed(world, django_capture_on_commit_callbacks):
    campaign, evaluations, owner, researcher = world
    run = evaluations["minilm-outsider"].ranking_run
    body = {"campaign": campaign.pk, "name": "again", "ranking_run": run.pk, "variant": "strict", "resamples": 50}
    with django_capture_on_commit_callbacks(execute=True):
        first = api(researcher).post("/api/v1/evaluations/", body, format="json")
    assert first.status_code == 201
    scored = api(researcher).get(f"/api/v1/evaluations/{first.json()['id']}/").json()  # the task ran on commit
    assert scored["status"] == "succeeded" and scored["ranking_run"] == run.pk
    assert scored["results"]["metrics"]["i2t"]["map_at_r"]["low"] is not None
    second = api(owner).post("/api/v1/evaluations/", body, format="json")
    assert second.status_code == 200 and second.json()["id"] == first.json()["id"]
    foreign = factories.RankingRunFactory()
    refused = api(owner).post("/api/v1/evaluations/", {**body, "ranking_run": foreign.pk}, format="json")
    assert refused.status_code == 400 and "not a run of the labels' dataset" in refused.json()["error"]
    both = api(owner).post("/api/v1/evaluations/", {**body, "rankings": {"i2t": {}}}, format="json")
    assert both.status_code == 400


def test_an_evaluation_as_csv(world):
    campaign, evaluations, _, researcher = world
    response = api(researcher).get(f"/api/v1/evaluations/{evaluations['good'].pk}/csv/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["direction"] for row in rows] == ["i2t", "t2i"]
    assert float(rows[0]["pmrp"]) == evaluations["good"].results["metrics"]["i2t"]["pmrp"]["value"]


def test_uploaded_rankings_with_a_seed_and_no_intervals(world, django_capture_on_commit_callbacks):
    campaign, evaluations, owner, _ = world
    dataset = campaign.dataset
    truth_like = {"i2t": {}, "t2i": {}}
    rankings = noisy_rankings(truth_like, dataset=dataset, noise=1.0, seed=3)
    with django_capture_on_commit_callbacks(execute=True):
        response = api(owner).post(
            "/api/v1/evaluations/",
            {"campaign": campaign.pk, "name": "random", "rankings": rankings, "resamples": 0, "seed": 4},
            format="json",
        )
    assert response.status_code == 201
    data = api(owner).get(f"/api/v1/evaluations/{response.json()['id']}/").json()
    assert data["settings"]["resamples"] == 0 and data["settings"]["seed"] == 4
    assert data["results"]["metrics"]["i2t"]["r1"]["low"] is None


def test_a_public_label_set_does_not_open_another_requesters_runs(world):
    """Anyone may evaluate against a public label set, but only with rankings they may see: the owner's
    ranking run on that dataset stays theirs."""
    from annotator.labels.services.labelsets.builds import labelset_from_campaign

    campaign, evaluations, owner, _ = world
    public = labelset_from_campaign(campaign=campaign, user=owner, name="public-crowd")
    models.LabelSet.objects.filter(pk=public.pk).update(public=True)
    outsider = factories.user_with_role(models.Role.RESEARCHER, username="res-outsider")
    run = evaluations["minilm-outsider"].ranking_run
    body = {"label_set": public.pk, "name": "peek", "ranking_run": run.pk, "variant": "strict", "resamples": 50}
    refused = api(outsider).post("/api/v1/evaluations/", body, format="json")
    assert refused.status_code == 400 and "not a run of the labels' dataset" in refused.json()["error"]
    assert not models.Evaluation.objects.filter(name="peek").exists()
