"""Crisscrossed Captions' Table 5 on the released test files: the bootstrap Spearman's r of a model's
similarity scores against CxC's ratings, from the service, `manage.py evaluate --cxc`, a CxC label set's page
(stored as an evaluation, shown on the leaderboard) and the API."""

import csv
import io
import json
import random
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from annotator.core.errors import ApplicationError
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Evaluation, EvaluationStatus, Role
from annotator.research.services.cxc_table5 import (
    cxc_ratings_read,
    cxc_scores_read,
    cxc_table5_evaluate,
)
from annotator.research.services.scorecards import evaluation_run
from tests.annotator.cxc.released_support import FILES, coco_test_split, released_bytes
from tests.factories import user_with_role

TASK_FORMAT = {"sts": "cxc_sts", "sis": "cxc_sis", "sits": "cxc_sits"}


def _scores_csv(fmt: str, model) -> str:
    """The released file's two id columns and `score` = model(agg_score, rng) for every pair."""
    rng = random.Random(5)
    rows = list(csv.reader(io.StringIO(released_bytes(fmt).decode())))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*rows[0][:2], "score"])
    for row in rows[1:]:
        writer.writerow([row[0], row[1], model(float(row[2]), rng)])
    return out.getvalue()


@pytest.fixture(scope="module")
def ratings():
    return cxc_ratings_read([(FILES[fmt], released_bytes(fmt)) for fmt in FILES])


def _table(ratings, model, *, samples=100, seed=0):
    scores = cxc_scores_read([(f"{task}.csv", _scores_csv(fmt, model)) for task, fmt in TASK_FORMAT.items()])
    return cxc_table5_evaluate(ratings=ratings, scores=scores, samples=samples, seed=seed)


def test_the_released_files_are_read_with_every_rated_pair(ratings):
    assert {task: len(rows) for task, rows in ratings.items()} == {"sts": 44045, "sis": 46719, "sits": 44833}


def test_a_perfect_scorer_gives_one_on_every_task(ratings):
    table = _table(ratings, lambda human, rng: human)
    for task in ("sts", "sis", "sits"):
        entry = table["tasks"][task]
        assert abs(entry["spearman"] - 1.0) < 1e-12 and entry["spearman_x100"] == 100.0
        assert entry["samples"] == 100 and entry["pairs_missing_score"] == 0
        assert entry["pairs_scored"] == entry["pairs_rated"] == len(ratings[task])
        assert entry["sd"] < 1e-12
    assert table["tasks"]["sts"]["queries"] == 25000 and table["tasks"]["sis"]["queries"] == 4989


def test_a_reversed_scorer_gives_minus_one_and_a_constant_one_gives_no_r(ratings):
    reversed_table = _table(ratings, lambda human, rng: -human)
    assert all(abs(entry["spearman"] + 1.0) < 1e-12 for entry in reversed_table["tasks"].values())
    constant = _table(ratings, lambda human, rng: 0.5)
    for entry in constant["tasks"].values():
        assert entry["spearman"] is None and entry["samples"] == 0 and entry["spearman_x100"] is None
        assert "the same score" in entry["note"]


def test_two_runs_with_one_seed_agree_exactly_and_another_seed_differs(ratings):
    def noisy(human, rng):
        return human + rng.gauss(0, 1.5)

    first = _table(ratings, noisy, seed=11)
    assert first == _table(ratings, noisy, seed=11)
    other = _table(ratings, noisy, seed=12)
    assert other["tasks"]["sts"]["spearman"] != first["tasks"]["sts"]["spearman"]
    for entry in first["tasks"].values():
        assert 0.3 < entry["spearman"] < 0.95 and entry["low"] < entry["spearman"] < entry["high"] and entry["sd"] > 0


def test_pairs_without_a_score_are_left_out_and_said(ratings):
    text = _scores_csv("cxc_sts", lambda human, rng: human)
    lines = text.splitlines()
    scores = cxc_scores_read([("sts.csv", "\n".join(lines[:-100]) + "\n")])
    table = cxc_table5_evaluate(ratings=ratings, scores=scores, samples=20)
    assert table["tasks"]["sts"]["pairs_missing_score"] == 100
    assert any("100 of 44,045 rated pairs have no score" in note for note in table["notes"])
    assert any("SIS: no scores were given" in note for note in table["notes"])


def test_a_scores_file_without_a_score_column_or_with_text_is_a_clear_error():
    with pytest.raises(ApplicationError, match="needs the columns"):
        cxc_scores_read([("sts.csv", "caption1,caption2,agg_score\na,b,1\n")])
    with pytest.raises(ApplicationError, match="line 2: score 'high' is not a number"):
        cxc_scores_read([("sts.csv", "caption1,caption2,score\na,b,high\n")])


def test_evaluate_cxc_prints_table_5_from_the_released_files(tmp_path):
    paths = []
    for fmt in ("cxc_sts", "cxc_sis"):
        ratings_path = tmp_path / FILES[fmt]
        ratings_path.write_bytes(released_bytes(fmt))
        scores_path = tmp_path / f"model-{fmt}.csv"
        scores_path.write_text(_scores_csv(fmt, lambda human, rng: -human))
        paths += ["--ratings", str(ratings_path), "--scores", str(scores_path)]
    out, err = StringIO(), StringIO()
    call_command("evaluate", "--cxc", *paths, "--resamples", "30", "--seed", "3", stdout=out, stderr=err)
    result = json.loads(out.getvalue())
    assert set(result["tasks"]) == {"sts", "sis"} and result["seed"] == 3 and result["samples"] == 30
    assert result["tasks"]["sis"]["spearman_x100"] == -100.0
    with pytest.raises(CommandError, match="not rankings"):
        call_command("evaluate", "--cxc", *paths, "--rankings", str(tmp_path / "x.json"))
    with pytest.raises(CommandError, match="--ratings FILE, repeat"):
        call_command("evaluate", "--cxc", "--scores", str(tmp_path / "model-cxc_sts.csv"))


@pytest.mark.django_db
def test_a_cxc_label_sets_page_and_the_api_store_table_5_and_the_leaderboard_shows_it(client):
    dataset = coco_test_split()
    label_set = labelset_import(
        dataset=dataset, name="cxc-sts", files=[(FILES["cxc_sts"], released_bytes("cxc_sts"))], fmt="cxc_sts"
    )
    researcher = user_with_role(Role.RESEARCHER)
    label_set.created_by = researcher
    label_set.save(update_fields=["created_by"])
    client.force_login(researcher)
    page = client.get(f"/research/labelsets/{label_set.pk}/")
    assert 'name="sts_scores"' in page.content.decode()
    perfect = _scores_csv("cxc_sts", lambda human, rng: human).encode()
    answer = client.post(
        f"/research/labelsets/{label_set.pk}/cxc-table5",
        {"name": "oracle", "samples": "50", "seed": "2", "sts_scores": SimpleUploadedFile("sts.csv", perfect)},
    )
    assert answer.status_code == 302 and "direction=t2t" in answer["Location"]
    evaluation = Evaluation.objects.get(label_set=label_set, name="oracle")
    evaluation = evaluation_run(evaluation_id=evaluation.pk)
    assert evaluation.status == EvaluationStatus.SUCCEEDED, evaluation.error
    assert evaluation.results["cxc"]["tasks"]["sts"]["samples"] == 50
    board = client.get(answer["Location"]).content.decode()
    assert "CxC Spearman&#x27;s R" in board and "oracle" in board and "1.000" in board

    api = APIClient()
    api.force_authenticate(researcher)
    url = f"/api/v1/labelsets/{label_set.pk}/cxc-table5/"
    reversed_scores = _scores_csv("cxc_sts", lambda human, rng: -human).encode()
    created = api.post(
        url, {"name": "contrarian", "samples": 20, "sts_scores": SimpleUploadedFile("s.csv", reversed_scores)}
    )
    assert created.status_code == 201, created.content
    again = api.post(
        url, {"name": "contrarian", "samples": 20, "sts_scores": SimpleUploadedFile("s.csv", reversed_scores)}
    )
    assert again.status_code == 200 and again.json()["id"] == created.json()["id"]
    done = evaluation_run(evaluation_id=created.json()["id"])
    assert abs(done.results["metrics"]["t2t"]["cxc_spearman"]["value"] + 1.0) < 1e-12
    bad = api.post(url, {"name": "x", "sts_scores": SimpleUploadedFile("s.csv", b"caption1,caption2\na,b\n")})
    assert bad.status_code == 400 and "needs the columns" in bad.content.decode()
    none = api.post(url, {"name": "x"})
    assert none.status_code == 400
    worker = APIClient()
    worker.force_authenticate(user_with_role(Role.WORKER))
    assert worker.post(url, {"name": "x"}).status_code == 403
