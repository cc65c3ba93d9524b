"""`demo_ranking` (make demo): ranks `demo` with minilm_pivot and tfidf_pivot once; running it again skips."""

import io

import pytest
from django.core.management.base import OutputWrapper

from annotator import models
from annotator.scenarios.demo import demo_ranking
from tests.ranking_support import ranking_dataset


@pytest.mark.django_db(transaction=True)  # real commits: the eager tasks run as in `make demo`
def test_demo_ranking_runs_both_built_in_annotators_once():
    out = io.StringIO()
    demo_ranking(out=OutputWrapper(out))
    assert "no ready dataset" in out.getvalue()
    dataset, _images, _captions = ranking_dataset(name="demo")
    demo_ranking(out=OutputWrapper(out))
    runs = models.RankingRun.objects.filter(dataset=dataset)
    assert sorted(runs.values_list("annotator__name", "status")) == [
        ("minilm_pivot", "succeeded"),
        ("tfidf_pivot", "succeeded"),
    ]
    demo_ranking(out=OutputWrapper(out))
    assert runs.count() == 2 and out.getvalue().count("already ranked") == 2
