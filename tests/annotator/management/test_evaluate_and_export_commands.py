"""`manage.py evaluate` and `manage.py export_labels` to a file: the ECCV JSON round trip."""

import json

import pytest
from django.core.management import CommandError, call_command

from tests.research_helpers import EXPECTED, eccv_positives, research_campaign

pytestmark = pytest.mark.django_db

RANKINGS = {"i2t": {"1": ["11", "12", "21", "99", "31"]}, "t2i": {"22": [2, 3, 1]}}
# By hand against EXPECTED[("lenient", False)] (positives: i2t 1 -> {11, 21, 22, 31}, t2i 22 -> {1, 3}).
BY_HAND = {
    "i2t": {"r1": 1.0, "r5": 1.0, "r10": 1.0, "r_precision": 2 / 4, "map_at_r": (1 / 1 + 2 / 3) / 4},
    "t2i": {"r1": 0.0, "r5": 1.0, "r10": 1.0, "r_precision": 1 / 2, "map_at_r": (1 / 2) / 2},
}


def run_evaluate(capsys, *args) -> dict:
    call_command("evaluate", *args)
    return json.loads(capsys.readouterr().out)


def test_export_then_evaluate_round_trip(tmp_path, capsys):
    """Export to ECCV JSON, load it back (same positives), evaluate from the file and from the campaign."""
    campaign = research_campaign()
    labels_file, rankings_file = tmp_path / "labels.json", tmp_path / "rankings.json"
    call_command("export_labels", "--campaign", str(campaign.pk), "--to", str(labels_file), "--format", "eccv_json")
    assert eccv_positives(json.loads(labels_file.read_text())) == EXPECTED[("lenient", False)]
    rankings_file.write_text(json.dumps(RANKINGS))
    capsys.readouterr()

    from_file = run_evaluate(capsys, "--labels", str(labels_file), "--rankings", str(rankings_file), "--format", "json")
    from_campaign = run_evaluate(capsys, "--campaign", str(campaign.pk), "--rankings", str(rankings_file))
    assert list(from_file) == ["i2t", "t2i"]
    for direction in ("i2t", "t2i"):
        assert list(from_file[direction]) == ["r1", "r5", "r10", "r_precision", "map_at_r"]
        assert from_file[direction] == pytest.approx(BY_HAND[direction])
        assert from_campaign[direction] == pytest.approx(BY_HAND[direction])


def test_strict_and_merged_exports_from_the_command(tmp_path, capsys):
    campaign = research_campaign()
    out = tmp_path / "strict.json"
    call_command("export_labels", "--campaign", str(campaign.pk), "--to", str(out), "--variant", "strict")
    assert eccv_positives(json.loads(out.read_text())) == EXPECTED[("strict", False)]
    call_command("export_labels", "--campaign", str(campaign.pk), "--to", str(out), "--merge-original")
    assert eccv_positives(json.loads(out.read_text())) == EXPECTED[("lenient", True)]


def test_evaluate_on_an_eccv_style_label_file_with_integer_ids(tmp_path, capsys):
    """A label file as ECCV Caption releases it (integer ids) against string-keyed rankings."""
    labels = tmp_path / "eccv.json"
    labels.write_text(json.dumps({"i2t": {"5": [50, 51]}, "t2i": {"50": [5]}}))
    rankings = tmp_path / "r.json"
    rankings.write_text(json.dumps({"i2t": {"5": [51, 50, 52]}, "t2i": {"50": [6, 5]}}))
    scores = run_evaluate(capsys, "--labels", str(labels), "--rankings", str(rankings))
    assert scores["i2t"] == pytest.approx({"r1": 1, "r5": 1, "r10": 1, "r_precision": 1, "map_at_r": 1})
    assert scores["t2i"] == pytest.approx({"r1": 0, "r5": 1, "r10": 1, "r_precision": 0, "map_at_r": 0})
    assert all(0 <= value <= 1 for direction in scores.values() for value in direction.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--labels", "missing.json", "--rankings", "missing.json"], "Cannot read"),
        (["--campaign", "999999", "--rankings", "RANKINGS"], "no campaign"),
    ],
)
def test_evaluate_errors_are_clear(tmp_path, args, message):
    rankings = tmp_path / "r.json"
    rankings.write_text(json.dumps(RANKINGS))
    args = [str(rankings) if arg == "RANKINGS" else arg for arg in args]
    with pytest.raises(CommandError, match=message):
        call_command("evaluate", *args)


def test_evaluate_refuses_a_malformed_rankings_file(tmp_path):
    labels, rankings = tmp_path / "l.json", tmp_path / "r.json"
    labels.write_text(json.dumps({"i2t": {"1": [2]}}))
    rankings.write_text("[1, 2]")
    with pytest.raises(CommandError, match="JSON object"):
        call_command("evaluate", "--labels", str(labels), "--rankings", str(rankings))


def test_export_of_a_campaign_without_labels_is_a_clear_error(tmp_path):
    from tests.factories import CampaignFactory

    campaign = CampaignFactory()
    with pytest.raises(CommandError, match="no labels"):
        call_command("export_labels", "--campaign", str(campaign.pk), "--to", str(tmp_path / "x.json"))
