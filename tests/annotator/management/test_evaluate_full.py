"""`manage.py evaluate --full` and `manage.py import_categories`: every metric with its interval."""

import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotator.analysis.spice import spice_unavailable_reason
from tests import factories
from tests.leaderboard_support import labelled_campaign, labelled_dataset, noisy_rankings
from tests.research_helpers import research_campaign

pytestmark = pytest.mark.django_db


def run(capsys, *args) -> tuple[dict, str]:
    call_command("evaluate", *args)
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


@pytest.fixture
def files(tmp_path):
    dataset, truth = labelled_dataset(tmp_path=tmp_path)
    rankings = noisy_rankings(truth, dataset=dataset, noise=0.3, seed=1)
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    (tmp_path / "rankings.json").write_text(json.dumps(rankings))
    return dataset, truth, tmp_path


def test_full_prints_every_protocol_with_intervals_against_a_label_file(files, capsys):
    dataset, truth, tmp_path = files
    labels, rankings = str(tmp_path / "truth.json"), str(tmp_path / "rankings.json")
    plain, _ = run(capsys, "--labels", labels, "--rankings", rankings)
    card, notes = run(
        capsys, "--labels", labels, "--rankings", rankings, "--full", "--dataset", dataset.name, "--resamples", "100"
    )
    for direction in ("i2t", "t2i"):
        metrics = card["metrics"][direction]
        assert metrics["r1"]["value"] == pytest.approx(plain[direction]["r1"])
        assert metrics["map_at_r"]["value"] == pytest.approx(plain[direction]["map_at_r"])
        for key in ("ir_r5", "median_rank", "coco5k_r1", "coco1k_r5", "pmrp", "sr_r5", "ncs10"):
            assert metrics[key]["low"] <= metrics[key]["value"] <= metrics[key]["high"], key
    assert card["settings"]["resamples"] == 100 and card["notes"] == []
    # Against the truth itself, the truth-ordered ranking is perfect on the labels.
    perfect = {d: {q: list(t) for q, t in truth[d].items()} for d in truth}
    (tmp_path / "perfect.json").write_text(json.dumps(perfect))
    best, _ = run(
        capsys, "--labels", labels, "--rankings", str(tmp_path / "perfect.json"), "--full", "--resamples", "0"
    )
    assert best["metrics"]["i2t"]["map_at_r"]["value"] == 1.0 and best["metrics"]["i2t"]["median_rank"]["value"] == 1
    assert "coco5k_r1" not in best["metrics"]["i2t"]  # no --dataset: the label file's protocol only


def test_full_against_a_campaign_grades_partially_yes_and_skips_what_it_cannot(files, capsys):
    dataset, truth, tmp_path = files
    owner = factories.user_with_role("requester", username="req-full")
    campaign = labelled_campaign(owner=owner, dataset=dataset, truth=truth)
    card, notes = run(
        capsys,
        "--campaign",
        str(campaign.pk),
        "--rankings",
        str(tmp_path / "rankings.json"),
        "--full",
        "--resamples",
        "50",
        "--no-semantic",
        "--pmrp-zeta",
        "0",
        "--pmrp-zeta",
        "1",
    )
    metrics = card["metrics"]["i2t"]
    assert metrics["graded_r_precision"]["value"] < metrics["r_precision"]["value"]
    assert "ncs5" not in metrics and "left out (--no-semantic)" in notes
    assert card["settings"]["pmrp_zetas"] == [0, 1] and not np.isnan(metrics["pmrp"]["value"])


def test_spice_is_skipped_with_the_reason_where_it_cannot_run(files, capsys):
    dataset, truth, tmp_path = files
    reason = spice_unavailable_reason()
    if reason is None:
        pytest.skip("SPICE can run on this machine (Java and CoreNLP 3.6.0 present)")
    card, notes = run(
        capsys,
        "--labels",
        str(tmp_path / "truth.json"),
        "--rankings",
        str(tmp_path / "rankings.json"),
        "--full",
        "--dataset",
        dataset.name,
        "--resamples",
        "0",
        "--semantic-metric",
        "spice",
    )
    assert "ncs5" not in card["metrics"]["i2t"] and "pmrp" in card["metrics"]["i2t"]
    assert any(note.startswith("SR@k and NCS@k with SPICE: skipped.") and reason in note for note in card["notes"])
    assert "SPICE: skipped" in notes


def test_import_categories_command_and_its_errors(tmp_path, capsys):
    campaign = research_campaign()
    path = tmp_path / "instances.json"
    path.write_text(
        json.dumps({"annotations": [{"image_id": 1, "category_id": 3}], "categories": [{"id": 3, "name": "car"}]})
    )
    call_command("import_categories", "--dataset", campaign.dataset.name, "--instances", str(path))
    assert json.loads(capsys.readouterr().out)["links"] == 1
    with pytest.raises(CommandError, match="no dataset"):
        call_command("import_categories", "--dataset", "nope", "--instances", str(path))
    with pytest.raises(CommandError, match="no file"):
        call_command("import_categories", "--dataset", campaign.dataset.name, "--instances", str(tmp_path / "x"))
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"i2t": {"1": ["11"]}}))
    with pytest.raises(CommandError, match="no dataset"):
        call_command("evaluate", "--labels", str(labels), "--rankings", str(labels), "--full", "--dataset", "nope")
