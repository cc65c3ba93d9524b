"""Evaluations against label sets: graded crowd sets, keyed per set version, the bias of its annotators,
the same numbers as the set's own evaluation, a board of its own, and `evaluate --label-set --full`."""

import json

import pytest
from django.core.management import call_command

from annotator import models
from annotator.labels.services.labelsets.builds import (
    labelset_from_campaign,
    labelset_from_original,
)
from annotator.research.selectors.leaderboard import leaderboard
from annotator.research.services.labelset_evaluation import labelset_evaluate
from annotator.research.services.scorecards import evaluation_request
from tests import factories
from tests.leaderboard_support import labelled_campaign, labelled_dataset, noisy_rankings, store_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def sets(tmp_path):
    owner = factories.user_with_role(models.Role.RESEARCHER, username="res-sets")
    dataset, truth = labelled_dataset(tmp_path=tmp_path)
    campaign = labelled_campaign(owner=factories.user_with_role(models.Role.REQUESTER), dataset=dataset, truth=truth)
    campaign.shared_with.add(owner)
    crowd = labelset_from_campaign(campaign=campaign, user=owner, name="crowd")
    original = labelset_from_original(dataset=dataset, user=owner)
    return owner, dataset, truth, crowd, original


def evaluate(label_set, owner, capture, **kwargs):
    kwargs.setdefault("resamples", 100)
    with capture(execute=True):
        evaluation, created = evaluation_request(label_set=label_set, user=owner, **kwargs)
    evaluation.refresh_from_db()
    return evaluation, created


def test_a_crowd_set_is_scored_graded_and_equals_its_own_evaluation(sets, django_capture_on_commit_callbacks):
    owner, dataset, truth, crowd, _ = sets
    rankings = noisy_rankings(truth, dataset=dataset, noise=0.3, seed=1)
    evaluation, created = evaluate(crowd, owner, django_capture_on_commit_callbacks, name="m", rankings=rankings)
    assert created and evaluation.status == models.EvaluationStatus.SUCCEEDED and evaluation.campaign is None
    assert evaluation.method == ""
    reference = labelset_evaluate(label_set=crowd, rankings=rankings)["scores"]
    metrics = evaluation.results["metrics"]
    for direction in ("i2t", "t2i"):
        for key in ("r1", "r5", "r_precision", "map_at_r"):
            assert metrics[direction][key]["value"] == pytest.approx(reference[direction][key]), (direction, key)
    assert metrics["i2t"]["graded_r_precision"]["value"] < metrics["i2t"]["r_precision"]["value"]
    assert {"pmrp", "ncs5", "coco1k_r1"} <= set(metrics["i2t"])
    again, created_again = evaluate(crowd, owner, django_capture_on_commit_callbacks, name="n", rankings=rankings)
    assert not created_again and again.pk == evaluation.pk


def test_each_set_has_its_own_evaluations_and_board_and_the_builders_are_flagged(
    sets, django_capture_on_commit_callbacks
):
    owner, dataset, truth, crowd, original = sets
    assert crowd.annotators == ["tfidf-builder"]
    builder = store_run(
        dataset=dataset,
        annotator_name="tfidf-builder",
        rankings=noisy_rankings(truth, dataset=dataset, noise=0.2, seed=2),
    )
    on_crowd, _ = evaluate(crowd, owner, django_capture_on_commit_callbacks, name="tfidf-builder", ranking_run=builder)
    on_original, created = evaluate(
        original, owner, django_capture_on_commit_callbacks, name="tfidf-builder", ranking_run=builder
    )
    assert created and on_crowd.pk != on_original.pk
    assert on_crowd.biased and not on_original.biased
    for noise, name in ((0.1, "a"), (0.6, "b")):
        rankings = noisy_rankings(truth, dataset=dataset, noise=noise, seed=3)
        for label_set in (crowd, original):
            evaluate(label_set, owner, django_capture_on_commit_callbacks, name=name, rankings=rankings)
    board = leaderboard(user=owner, label_set=crowd, direction="i2t")
    assert [row["name"] for row in board["rows"]][0] == "a" and len(board["rows"]) == 3
    assert sum(row["biased"] for row in board["rows"]) == 1
    stability = board["stability"]
    assert {"label set crowd@1", "label set original@1"} <= set(stability["targets"])


def test_evaluate_label_set_full_on_the_command_line(sets, tmp_path, capsys):
    owner, dataset, truth, crowd, _ = sets
    path = tmp_path / "rankings.json"
    path.write_text(json.dumps(noisy_rankings(truth, dataset=dataset, noise=0.3, seed=4)))
    call_command("evaluate", "--label-set", "crowd", "--rankings", str(path), "--model", "tfidf-builder")
    plain = json.loads(capsys.readouterr().out)
    call_command(
        "evaluate",
        "--label-set",
        "crowd",
        "--rankings",
        str(path),
        "--full",
        "--resamples",
        "50",
        "--model",
        "tfidf-builder",
    )
    captured = capsys.readouterr()
    card = json.loads(captured.out)
    assert card["metrics"]["i2t"]["map_at_r"]["value"] == pytest.approx(plain["i2t"]["map_at_r"])
    assert card["metrics"]["t2i"]["pmrp"]["low"] is not None
    assert any("tfidf-builder proposed the candidates" in warning for warning in card["warnings"])
