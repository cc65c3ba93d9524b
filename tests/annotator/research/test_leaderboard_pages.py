"""The leaderboard pages: models side by side with intervals, sorting, bias, tau, downloads, access."""

import csv
import io
import json

import pytest

from annotator import models
from tests import factories
from tests.leaderboard_support import leaderboard_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tmp_path, django_capture_on_commit_callbacks):
    owner = factories.user_with_role(models.Role.REQUESTER, username="req-lb")
    researcher = factories.user_with_role(models.Role.RESEARCHER, username="res-lb")
    campaign, evaluations = leaderboard_world(
        tmp_path=tmp_path, capture=django_capture_on_commit_callbacks, owner=owner, researcher=researcher
    )
    return campaign, evaluations, owner, researcher


def page(client, user, url):
    client.force_login(user)
    return client.get(url)


def test_the_board_lists_every_model_best_first_with_intervals_bias_and_tau(client, world):
    campaign, evaluations, _, researcher = world
    response = page(client, researcher, f"/research/leaderboard/{campaign.pk}/")
    assert response.status_code == 200
    board = response.context["board"]
    assert len(board["rows"]) == 5 and board["sort"] == "map_at_r" and board["descending"]
    values = [row["metrics"]["map_at_r"]["value"] for row in board["rows"]]
    assert values == sorted(values, reverse=True)
    assert board["rows"][0]["name"] == "oracle-ish" and board["rows"][-1]["name"] == "fair"
    html = response.content.decode()
    assert html.count("⚑ helped build these labels") == 1  # the builder's run only
    assert 'aria-sort="descending"' in html and "<svg" in html and "Kendall" in html
    tau = {row["key"]: row["values"] for row in board["tau"]}
    keys = [column["key"] for column in board["columns"]]
    assert tau["map_at_r"][keys.index("map_at_r")] == pytest.approx(1.0)
    assert {"pmrp", "ncs5", "coco1k_r1", "coco5k_median_rank", "graded_r1", "ir_r10"} <= set(keys)


def test_sorting_by_another_metric_and_reversing_it(client, world):
    campaign, _, _, researcher = world
    url = f"/research/leaderboard/{campaign.pk}/?direction=t2i&sort=coco5k_median_rank"
    board = page(client, researcher, url).context["board"]
    ranks = [row["metrics"]["coco5k_median_rank"]["value"] for row in board["rows"]]
    assert board["direction"] == "t2i" and not board["descending"] and ranks == sorted(ranks)  # lower is better
    board = page(client, researcher, url + "&order=desc").context["board"]
    assert [row["metrics"]["coco5k_median_rank"]["value"] for row in board["rows"]] == sorted(ranks, reverse=True)
    column = next(c for c in board["columns"] if c["key"] == "coco5k_median_rank")
    assert column["order"] == "asc"  # its link reverses the order shown


def test_csv_and_json_downloads(client, world):
    campaign, evaluations, _, researcher = world
    response = page(client, researcher, f"/research/leaderboard/{campaign.pk}/download.csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 10  # five models, two directions
    builder = next(row for row in rows if row["model"] == "tfidf-builder" and row["direction"] == "i2t")
    assert builder["biased"] == "yes"
    stored = evaluations["tfidf-builder"].results["metrics"]["i2t"]["map_at_r"]
    assert float(builder["map_at_r"]) == stored["value"] and float(builder["map_at_r_low"]) == stored["low"]
    board = json.loads(page(client, researcher, f"/research/leaderboard/{campaign.pk}/download.json").content)
    assert [row["place"] for row in board["rows"]] == [1, 2, 3, 4, 5]
    assert board["kendall_tau"]["map_at_r"]["map_at_r"] == pytest.approx(1.0)
    one = json.loads(page(client, researcher, f"/research/evaluations/{evaluations['good'].pk}/download.json").content)
    assert one["results"]["metrics"]["i2t"]["r1"] == evaluations["good"].results["metrics"]["i2t"]["r1"]
    assert page(client, researcher, f"/research/leaderboard/{campaign.pk}/download.xml").status_code == 404


def test_the_index_lists_boards_and_access_is_checked(client, world):
    campaign, evaluations, owner, _ = world
    index = page(client, owner, "/research/leaderboard/")
    assert index.status_code == 200 and index.context["targets"][0]["models"] == 5
    other = factories.user_with_role(models.Role.RESEARCHER, username="res-stranger")
    assert page(client, other, f"/research/leaderboard/{campaign.pk}/").status_code == 404
    assert page(client, other, f"/research/evaluations/{evaluations['good'].pk}/download.csv").status_code == 404
    worker = factories.user_with_role(models.Role.WORKER, username="wrk-lb")
    assert page(client, worker, f"/research/leaderboard/{campaign.pk}/").status_code == 403
    client.logout()
    assert client.get(f"/research/leaderboard/{campaign.pk}/").status_code == 302


@pytest.mark.parametrize("query", ["direction=sideways", "variant=loose", "method=vote"])
def test_bad_parameters_are_a_400_page(client, world, query):
    campaign, _, owner, _ = world
    response = page(client, owner, f"/research/leaderboard/{campaign.pk}/?{query}")
    assert response.status_code == 400 and b"Unknown" in response.content


def test_evaluating_a_stored_run_from_the_campaign_page(client, world, django_capture_on_commit_callbacks):
    campaign, evaluations, _, researcher = world
    run = evaluations["minilm-outsider"].ranking_run
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/research/campaigns/{campaign.pk}/evaluate-run", {"run": run.pk, "variant": "strict"})
    assert response.status_code == 302
    strict = models.Evaluation.objects.get(campaign=campaign, variant="strict")
    assert strict.ranking_run == run and strict.status == models.EvaluationStatus.SUCCEEDED
    response = client.post(
        f"/research/campaigns/{campaign.pk}/evaluate-run", {"run": run.pk, "variant": "strict"}, follow=True
    )
    assert "evaluated on these labels already" in response.content.decode()
    assert client.post(f"/research/campaigns/{campaign.pk}/evaluate-run", {"run": 0}).status_code == 400
