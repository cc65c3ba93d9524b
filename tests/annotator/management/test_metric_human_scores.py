"""`manage.py metric_human --scores FILE`: any metric's or annotator's stored scores of the judged image-caption
pairs against the human judgements (Kendall's tau-b, Spearman's r, bootstrap intervals), from CSV or JSONL keyed
by the dataset's source ids or CxC's spellings of them, with a clear message for every bad file."""

import csv
import io
import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.analysis.metric_human import pair_scores_read
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Caption, Image
from tests import factories
from tests.annotator.cxc.released_support import FILES, coco_test_split, released_bytes
from tests.annotator.cxc.support import SyntheticWorld

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated(tmp_path):
    """A label set of 0-5 rated image-caption pairs on synthetic scenes; [(image, caption, rating)]."""
    world = SyntheticWorld(tmp_path / "world", images=12, owner=factories.UserFactory())
    image_source = dict(Image.objects.filter(dataset=world.dataset).values_list("pk", "source_id"))
    captions = list(Caption.objects.filter(dataset=world.dataset).values_list("pk", "source_id", "image_id"))
    rng = random.Random(3)
    pairs = []
    for caption, source, own in captions[::2]:
        for image in sorted({own, *rng.sample(sorted(image_source), 3)}):
            describes = image in world.images_of.get(caption, set()) or image == own
            score = round(min(5.0, max(0.0, (4.3 if describes else 0.8) + rng.gauss(0, 0.4))), 2)
            pairs.append((image_source[image], source, score))
    lines = [json.dumps({"image": i, "caption": c, "positive": s >= 3, "score": s}) for i, c, s in pairs]
    labelset_import(dataset=world.dataset, name="rated", files=[("rated.jsonl", "\n".join(lines))], fmt="jsonl")
    return pairs


def _run(*args) -> tuple[dict, str]:
    out, err = StringIO(), StringIO()
    call_command("metric_human", "--label-set", "rated", "--resamples", "50", *args, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def test_a_scores_file_that_is_the_rating_agrees_fully_and_a_reversed_jsonl_one_fully_against(rated, tmp_path):
    perfect = tmp_path / "perfect.csv"
    with perfect.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["caption", "image", "score", "note"])  # any column order; other columns ignored
        writer.writerows([caption, image, rating, "x"] for image, caption, rating in rated)
    result, err = _run("--scores", str(perfect))
    assert result["metric"] == str(perfect) and result["all"]["pairs"] == len(rated) and err == ""
    assert result["all"]["kendall"]["value"] == pytest.approx(1.0)
    assert result["all"]["spearman"]["value"] == pytest.approx(1.0)
    assert 0 < result["not_original"]["pairs"] < len(rated)
    reversed_ = tmp_path / "reversed.jsonl"
    reversed_.write_text(
        "\n".join(json.dumps({"image": i, "caption": c, "score": -s}) for i, c, s in rated[1:]) + "\n\n"
    )
    result, err = _run("--scores", str(reversed_), "--seed", "2")
    assert result["all"]["kendall"]["value"] == pytest.approx(-1.0) and result["all"]["pairs"] == len(rated) - 1
    assert f"1 of {len(rated)} judged pairs have no score in {reversed_} and are left out." in err
    assert result == _run("--scores", str(reversed_), "--seed", "2")[0]  # one seed, one answer


def test_bad_scores_files_are_refused_with_what_is_wrong(rated, tmp_path):
    image, caption, _ = rated[0]

    def refused(text: str, match: str, name="bad.csv"):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(CommandError, match=match):
            _run("--scores", str(path))

    with pytest.raises(CommandError, match="Cannot read the scores file .*missing.csv: No such file"):
        _run("--scores", str(tmp_path / "missing.csv"))
    refused("image,caption,cider\n1,2,0.5\n", r"needs the columns image,caption,score .* it has caption,cider,image")
    refused("", "it has none")
    refused(f"image,caption,score\n{image},{caption},0.5\n{image},x,high\n", r"line 3: score 'high' is not a number")
    refused(f"image,caption,score\n{image},,0.5\n", "line 2: an empty id")
    refused(f"image,caption,score\n{image},{caption},nan\n", "line 2: score is not finite")
    refused(
        f"image,caption,score\n{image},{caption},0.5\n{image},{caption},0.7\n",
        f"scores the pair image {image}, caption {caption} twice with different values",
    )
    refused(
        '{"image": "1", "caption": "2", "score": 1}\nnot json\n[1]\n{"image": "1"}\n',
        r"line 2: not JSON; line 3: not a JSON object; line 4: no caption, score",
        name="bad.jsonl",
    )
    refused("image,caption,score\nno-such-image,no-such-caption,1\n", "None of the 1 pairs of .* is a judged")
    with pytest.raises(CommandError, match="not allowed with argument"):
        _run("--scores", str(tmp_path / "bad.csv"), "--metric", "cider")


def test_the_parser_reads_csv_and_jsonl_alike():
    assert pair_scores_read("\ufeffimage,caption,score\n1,2,0.25\n") == {("1", "2"): 0.25}
    assert pair_scores_read('{"image": 1, "caption": "2", "score": 3}\n') == {("1", "2"): 3.0}
    with pytest.raises(ValueError, match="line 1: score True is not a number"):
        pair_scores_read('{"image": 1, "caption": "2", "score": true}\n')
    with pytest.raises(ValueError, match="no scored pair"):
        pair_scores_read("image,caption,score\n")


def test_an_annotators_sits_scores_in_cxc_spellings_correlate_on_the_released_set(tmp_path):
    """The released SITS ratings as a label set of the COCO 5k test split; a scores file in CxC's spellings
    (`caption,image,score`, as cxc_annotator_scores writes it) reads as the dataset's own ids."""
    dataset = coco_test_split()
    labelset_import(dataset=dataset, name="rated", files=[(FILES["cxc_sits"], released_bytes("cxc_sits"))])
    rows = list(csv.DictReader(io.StringIO(released_bytes("cxc_sits").decode())))
    path = tmp_path / "sits_scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["caption", "image", "score"])
        writer.writerows([row["caption"], row["image"], row["agg_score"]] for row in rows)
    assert rows[0]["image"].startswith("COCO_val2014_") and ":sentid:" in rows[0]["caption"]
    out = StringIO()
    call_command("metric_human", "--label-set", "rated", "--scores", str(path), "--resamples", "5", stdout=out)
    result = json.loads(out.getvalue())
    assert result["all"]["pairs"] == len(rows) == 44833
    assert result["all"]["kendall"]["value"] == pytest.approx(1.0)
