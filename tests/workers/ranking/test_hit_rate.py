"""On the synthetic dataset (exact truth), minilm_pivot puts a true match in the top 5 for most queries."""

import json

import pytest

from annotator import models
from annotator.analysis.hit_rate import hit_rates
from annotator.datasets.services.imports import dataset_import
from annotator.ranking.selectors.ranking import top_lists
from annotator.ranking.services.annotators import annotator_register
from annotator.scenarios.synthetic import make_synthetic_dataset
from tests import factories
from workers.ranking.pipeline import ranking_run_execute

pytestmark = pytest.mark.django_db


def test_minilm_pivot_hit_rate_on_a_small_synthetic_dataset(tmp_path):
    make_synthetic_dataset(out_dir=tmp_path / "syn", images=40, seed=3, size=(64, 48))
    dataset = dataset_import(
        name="syn", captions_path=tmp_path / "syn" / "captions.json", images_path=tmp_path / "syn" / "images"
    )
    truth = json.loads((tmp_path / "syn" / "truth.json").read_text())
    images = dict(models.Image.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    captions = dict(models.Caption.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    annotator = annotator_register(name="minilm_pivot", kind="minilm_pivot")
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=10, status=models.RunStatus.QUEUED)
    assert ranking_run_execute(run.pk) == models.RunStatus.SUCCEEDED
    t2i_truth = {captions[c]: {images[str(i)] for i in ids} for c, ids in truth["t2i"].items()}
    i2t_truth = {images[i]: {captions[str(c)] for c in ids} for i, ids in truth["i2t"].items()}
    t2i = hit_rates(ranked=top_lists(run=run, direction="t2i"), truth=t2i_truth)
    i2t = hit_rates(ranked=top_lists(run=run, direction="i2t"), truth=i2t_truth)
    assert t2i["queries"] == 200 and i2t["queries"] == 40
    assert t2i["top5"] > 0.5, t2i
    assert i2t["top5"] > 0.5, i2t
    assert t2i["top1"] <= t2i["top5"] <= t2i["top10"]
