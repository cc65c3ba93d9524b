"""A label set's leaderboard page and API: evaluate from the page, see the board, download it."""

import csv
import io
import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator import models
from annotator.labels.services.labelsets.builds import labelset_from_campaign
from tests import factories
from tests.leaderboard_support import labelled_campaign, labelled_dataset, noisy_rankings

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tmp_path):
    researcher = factories.user_with_role(models.Role.RESEARCHER, username="res-lbset")
    dataset, truth = labelled_dataset(tmp_path=tmp_path)
    campaign = labelled_campaign(owner=factories.user_with_role(models.Role.REQUESTER), dataset=dataset, truth=truth)
    campaign.shared_with.add(researcher)
    crowd = labelset_from_campaign(campaign=campaign, user=researcher, name="crowd")
    return researcher, dataset, truth, crowd, tmp_path


def test_evaluate_on_the_board_then_read_it(client, world, django_capture_on_commit_callbacks):
    researcher, dataset, truth, crowd, tmp_path = world
    client.force_login(researcher)
    for name, noise in (("good", 0.1), ("weak", 0.7)):
        upload = io.BytesIO(json.dumps(noisy_rankings(truth, dataset=dataset, noise=noise, seed=5)).encode())
        upload.name = "rankings.json"
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                f"/research/leaderboard/labelset/{crowd.pk}/evaluate", {"name": name, "rankings": upload}
            )
        assert response.status_code == 302
    page = client.get(f"/research/leaderboard/labelset/{crowd.pk}/?direction=t2i")
    assert page.status_code == 200
    board = page.context["board"]
    assert [row["name"] for row in board["rows"]] == ["good", "weak"] and board["label_set"] == crowd
    assert "label set crowd@1" in page.content.decode()
    rows = list(
        csv.DictReader(
            io.StringIO(client.get(f"/research/leaderboard/labelset/{crowd.pk}/download.csv").content.decode())
        )
    )
    assert {row["label_set"] for row in rows} == {str(crowd.pk)} and len(rows) == 4
    index = client.get("/research/leaderboard/")
    assert any(target["label_set"] == crowd for target in index.context["targets"])
    assert client.post(f"/research/leaderboard/labelset/{crowd.pk}/evaluate", {"name": "x"}).status_code == 400
    stranger = factories.user_with_role(models.Role.RESEARCHER, username="res-lbset-other")
    client.force_login(stranger)
    assert client.get(f"/research/leaderboard/labelset/{crowd.pk}/").status_code == 404


def test_the_api_evaluates_on_a_label_set_and_serves_its_board(world, django_capture_on_commit_callbacks):
    researcher, dataset, truth, crowd, _ = world
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    body = {"label_set": crowd.pk, "name": "m", "rankings": noisy_rankings(truth, dataset=dataset, noise=0.3, seed=6)}
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/evaluations/", body, format="json")
    assert created.status_code == 201 and created.json()["label_set"] == crowd.pk
    assert api.post("/api/v1/evaluations/", body, format="json").status_code == 200
    both = api.post("/api/v1/evaluations/", {**body, "campaign": 1}, format="json")
    assert both.status_code == 400
    board = api.get(f"/api/v1/leaderboard/?label_set={crowd.pk}").json()
    assert board["label_set"] == crowd.pk and board["rows"][0]["name"] == "m"
    assert api.get("/api/v1/leaderboard/").status_code == 400
