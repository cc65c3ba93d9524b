"""`manage.py labelset ...` and `manage.py evaluate --label-set`: a researcher's command-line round trip."""

import json

import pytest
from django.core.management import CommandError, call_command

from tests.annotator.management.test_evaluate_and_export_commands import BY_HAND, RANKINGS
from tests.research_helpers import EXPECTED, research_campaign

pytestmark = pytest.mark.django_db


def run(capsys, *args):
    call_command(*args)
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_import_derive_export_compare_and_evaluate(tmp_path, capsys):
    campaign = research_campaign()
    dataset = campaign.dataset.name
    labels = EXPECTED[("lenient", False)]
    i2t, t2i = tmp_path / "eccv_image_to_caption.json", tmp_path / "eccv_caption_to_image.json"
    i2t.write_text(json.dumps(labels["i2t"]))
    t2i.write_text(json.dumps(labels["t2i"]))
    out, _ = run(
        capsys,
        "labelset",
        "import",
        str(i2t),
        str(t2i),
        "--dataset",
        dataset,
        "--name",
        "eccv",
        "--annotators",
        "tfidf",
    )
    imported = json.loads(out)
    assert imported["label"] == "eccv@1" and imported["stats"]["i2t"]["positives"] == 4

    run(capsys, "labelset", "original", "--dataset", dataset, "--name", "coco")
    out, _ = run(capsys, "labelset", "derive", "union", "eccv", "coco", "--queries", "first", "--name", "eccv-like")
    assert json.loads(out)["stats"]["i2t"]["positives"] == 5  # caption 12 is image 1's original

    exported = tmp_path / "back.json"
    run(capsys, "labelset", "export", "eccv", "--to", str(exported))
    assert json.loads(exported.read_text()) == labels

    out, _ = run(capsys, "labelset", "compare", "coco", "eccv", "--queries-of", "eccv")
    rows = {row["label_set"]: row["i2t"]["positives"] for row in json.loads(out)["multiplicity"]}
    assert rows == {"coco@1": 2, "eccv@1": 4}

    out, _ = run(capsys, "labelset", "list", "--dataset", dataset)
    assert [entry["label"] for entry in json.loads(out)] == ["coco@1", "eccv@1", "eccv-like@1"]

    rankings = tmp_path / "rankings.json"
    rankings.write_text(json.dumps(RANKINGS))
    out, err = run(capsys, "evaluate", "--label-set", "eccv", "--rankings", str(rankings), "--model", "tfidf")
    scores = json.loads(out)
    for direction in ("i2t", "t2i"):
        assert scores[direction] == pytest.approx(BY_HAND[direction])
    assert "warning: tfidf proposed the candidates" in err


def test_unknown_sets_and_bad_files_are_command_errors(tmp_path):
    dataset = research_campaign().dataset.name
    with pytest.raises(CommandError, match="no label set 'nope'"):
        call_command("labelset", "show", "nope")
    bad = tmp_path / "eccv.json"
    bad.write_text("{broken")
    with pytest.raises(CommandError, match="not valid JSON"):
        call_command("labelset", "import", str(bad), "--dataset", dataset, "--name", "x")
    with pytest.raises(CommandError, match="no dataset 'nope'"):
        call_command("labelset", "import", str(bad), "--dataset", "nope", "--name", "x")
