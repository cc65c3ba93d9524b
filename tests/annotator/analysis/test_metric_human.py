"""Metric-versus-human agreement (seed 002 Table 1, ECCV Caption App. D.1): Kendall's tau-b and Spearman's r
with bootstrap intervals, the pure computation and `manage.py metric_human` on a label set of synthetic
scenes whose ratings follow the scenes' truth."""

import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.analysis.metric_human import metric_human_correlation
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Caption, Image
from tests import factories
from tests.annotator.cxc.support import SyntheticWorld


def _rows(model, images=30, per_image=5, seed=0):
    rng = random.Random(seed)
    return [(image, model(h, rng), h) for image in range(images) for h in [rng.uniform(0, 5) for _ in range(per_image)]]


def test_a_metric_that_is_the_rating_agrees_fully_and_a_reversed_one_fully_against():
    same = metric_human_correlation(_rows(lambda h, rng: h), resamples=50)
    assert same["kendall"]["value"] == pytest.approx(1.0) and same["spearman"]["value"] == pytest.approx(1.0)
    reversed_ = metric_human_correlation(_rows(lambda h, rng: -h), resamples=50)
    assert reversed_["kendall"]["value"] == pytest.approx(-1.0)
    constant = metric_human_correlation(_rows(lambda h, rng: 2.0), resamples=50)
    assert constant["kendall"] == {"value": None, "low": None, "high": None} and constant["resamples"] == 0


def test_the_interval_holds_the_value_and_one_seed_gives_one_answer():
    rows = _rows(lambda h, rng: h + rng.gauss(0, 1.5))
    first = metric_human_correlation(rows, resamples=200, seed=4)
    assert first == metric_human_correlation(list(reversed(rows)), resamples=200, seed=4)
    for name in ("kendall", "spearman"):
        cell = first[name]
        assert 0.2 < cell["value"] < 0.95 and cell["low"] < cell["value"] < cell["high"]
    assert first["pairs"] == 150 and first["images"] == 30 and first["resamples"] == 200


@pytest.mark.django_db
def test_metric_human_on_a_label_set_of_rated_pairs(tmp_path):
    world = SyntheticWorld(tmp_path, images=20, owner=factories.UserFactory())
    image_source = dict(Image.objects.filter(dataset=world.dataset).values_list("pk", "source_id"))
    captions = list(Caption.objects.filter(dataset=world.dataset).values_list("pk", "source_id", "image_id"))
    rng = random.Random(3)
    lines = []
    for caption, source, own in captions[::2]:
        for image in {own, *rng.sample(sorted(image_source), 3)}:
            describes = image in world.images_of.get(caption, set()) or image == own
            score = round(min(5.0, max(0.0, (4.3 if describes else 0.8) + rng.gauss(0, 0.4))), 2)
            lines.append(
                json.dumps({"image": image_source[image], "caption": source, "positive": score >= 3, "score": score})
            )
    labelset_import(dataset=world.dataset, name="rated", files=[("rated.jsonl", "\n".join(lines))], fmt="jsonl")
    out = StringIO()
    call_command("metric_human", "--label-set", "rated", "--resamples", "100", "--seed", "1", stdout=out)
    result = json.loads(out.getvalue())
    assert result["metric"] == "CIDEr-D" and result["all"]["pairs"] == len(lines)
    assert result["all"]["kendall"]["value"] > 0.2 and result["all"]["spearman"]["value"] > 0.2
    low, high = result["all"]["kendall"]["low"], result["all"]["kendall"]["high"]
    assert low <= result["all"]["kendall"]["value"] <= high
    assert 0 < result["not_original"]["pairs"] < result["all"]["pairs"]
    again = StringIO()
    call_command("metric_human", "--label-set", "rated", "--resamples", "100", "--seed", "1", stdout=again)
    assert json.loads(again.getvalue()) == result
    with pytest.raises(CommandError, match="no campaign 424242"):
        call_command("metric_human", "--campaign", "424242")
