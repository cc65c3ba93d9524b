"""Ranking selectors: progress with an ETA from this execution's rate, candidates of a query, diversity."""

import time

import pytest

from annotator import models
from annotator.ranking.selectors.ranking import (
    annotator_diversity,
    candidates_for_query,
    ranking_run_progress,
)
from tests import factories
from tests.ranking_support import ranking_dataset

pytestmark = pytest.mark.django_db


def test_progress_and_eta_from_the_rate_since_the_last_resume():
    now = time.time()
    run = factories.RankingRunFactory(
        status=models.RunStatus.RUNNING,
        chunks_total=100,
        chunks_done=40,
        progress={"resumed_at": now - 30, "done_at_resume": 20},  # 20 chunks in 30 s since it resumed
    )
    progress = ranking_run_progress(run=run, now=now)
    assert progress["percent"] == 40.0
    assert progress["eta_seconds"] == pytest.approx(60 / 20 * 30)  # 60 chunks left at 1.5 s each = 90 s
    queued = factories.RankingRunFactory(status=models.RunStatus.QUEUED)
    assert ranking_run_progress(run=queued)["eta_seconds"] is None
    done = factories.RankingRunFactory(status=models.RunStatus.SUCCEEDED, chunks_total=0)
    assert ranking_run_progress(run=done)["percent"] == 100.0


def test_candidates_for_query_in_rank_order_with_text_or_image():
    dataset, images, captions = ranking_dataset()
    run = factories.RankingRunFactory(dataset=dataset, top_k=2)
    models.Candidate.objects.create(
        run=run, direction="i2t", query_id=images[0].pk, target_id=captions[3].pk, rank=2, score=0.5
    )
    models.Candidate.objects.create(
        run=run, direction="i2t", query_id=images[0].pk, target_id=captions[1].pk, rank=1, score=0.9
    )
    models.Candidate.objects.create(
        run=run, direction="t2i", query_id=captions[0].pk, target_id=images[2].pk, rank=1, score=0.7
    )
    rows = candidates_for_query(run=run, direction="i2t", query_id=images[0].pk)
    assert [(r["rank"], r["target_id"], r["text"]) for r in rows] == [
        (1, captions[1].pk, captions[1].text),
        (2, captions[3].pk, captions[3].text),
    ]
    rows = candidates_for_query(run=run, direction="t2i", query_id=captions[0].pk)
    assert rows[0]["image"] == images[2]


def test_annotator_diversity_uses_the_latest_succeeded_run_of_each_annotator():
    dataset, images, captions = ranking_dataset()
    a, b = factories.MachineAnnotatorFactory(name="a"), factories.MachineAnnotatorFactory(name="b")
    assert annotator_diversity(dataset=dataset) is None
    run_a = factories.RankingRunFactory(dataset=dataset, annotator=a)
    run_b = factories.RankingRunFactory(dataset=dataset, annotator=b)
    factories.RankingRunFactory(dataset=dataset, annotator=b, status=models.RunStatus.FAILED)  # ignored
    for c in captions[:4]:
        for rank, image in enumerate(images[:3], start=1):
            models.Candidate.objects.create(
                run=run_a, direction="t2i", query_id=c.pk, target_id=image.pk, rank=rank, score=1 - rank / 10
            )
            models.Candidate.objects.create(
                run=run_b, direction="t2i", query_id=c.pk, target_id=images[3 - rank].pk, rank=rank, score=1 - rank / 10
            )
    result = annotator_diversity(dataset=dataset, k=3)
    assert result["annotators"] == ["a", "b"] and result["queries"] == 4
    assert result["tau"][0][1] == pytest.approx(-1.0)  # b ranks the same three images in reverse
    assert result["avg_rank"][0][1] == pytest.approx(3.0) and result["avg_rank"][1][0] == pytest.approx(3.0)
