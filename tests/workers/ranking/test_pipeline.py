"""A RankingRun end to end in-process: candidates, resume after a crash, cancel, idempotence, caching, failure."""

import numpy as np
import pytest

from annotator import models
from annotator.core.errors import ApplicationError
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.runs import ranking_run_cancel
from tests import factories
from tests.ranking_support import candidate_rows, chunks_ranked, ranking_dataset
from workers.ranking import pipeline
from workers.ranking.pipeline import ranking_run_execute

pytestmark = pytest.mark.django_db

SMALL_CHUNKS = {"rows_per_chunk": 2, "shard_size": 4, "text_batch": 3}


class Crash(BaseException):
    """Stands in for a killed worker: not an Exception, so the pipeline does not mark the run failed."""


def new_run(dataset, kind="tfidf_pivot", top_k=5):
    annotator = annotator_register(name=kind, kind=kind)
    return factories.RankingRunFactory(
        dataset=dataset, annotator=annotator, top_k=top_k, status=models.RunStatus.QUEUED
    )


def test_tfidf_run_writes_top_k_in_both_directions():
    dataset, images, captions = ranking_dataset()
    run = new_run(dataset, top_k=3)
    assert ranking_run_execute(run.pk, options=SMALL_CHUNKS) == models.RunStatus.SUCCEEDED
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED and run.finished_at and run.stage == "done"
    # 17 texts in shards of 4; i2t: 8 images by 2; t2i and t2t: 17 captions by 2; i2i: 8 images by 2
    assert run.chunks_done == run.chunks_total == 5 + 4 + 9 + 9 + 4
    assert run.annotator.weights_hash
    i2t = models.Candidate.objects.filter(run=run, direction=models.Direction.I2T)
    assert set(i2t.values_list("query_id", flat=True)) <= {image.pk for image in images}
    assert set(i2t.values_list("target_id", flat=True)) <= {caption.pk for caption in captions}
    # The beach-dog image's best captions are its own (they share words with its other captions).
    dog = images[0]
    best = list(i2t.filter(query_id=dog.pk).order_by("rank").values_list("target_id", flat=True))
    assert best[0] in {c.pk for c in captions if c.image_id == dog.pk}
    # Ranks are 1..n per query, scores non-increasing.
    for query_id in i2t.values_list("query_id", flat=True).distinct():
        rows = list(i2t.filter(query_id=query_id).order_by("rank").values_list("rank", "score"))
        assert [r for r, _ in rows] == list(range(1, len(rows) + 1))
        assert all(a >= b for (_, a), (_, b) in zip(rows, rows[1:], strict=False))
    t2i = models.Candidate.objects.filter(run=run, direction=models.Direction.T2I)
    assert t2i.filter(rank__gt=3).count() == 0


def test_a_caption_never_retrieves_its_image_through_itself():
    """The surfer image has one caption: represented only by it, it must not be that caption's candidate."""
    dataset, images, captions = ranking_dataset()
    run = new_run(dataset, top_k=8)
    ranking_run_execute(run.pk)
    surfer_caption = captions[-1]
    assert surfer_caption.image_id == images[-1].pk
    assert not models.Candidate.objects.filter(
        run=run, direction=models.Direction.T2I, query_id=surfer_caption.pk, target_id=images[-1].pk
    ).exists()
    # But a dog caption finds the dog image through the dog image's other captions.
    dog_caption = captions[0]
    top = models.Candidate.objects.get(run=run, direction=models.Direction.T2I, query_id=dog_caption.pk, rank=1)
    assert top.target_id == images[0].pk


def test_interrupted_run_resumes_and_ends_with_the_same_candidates():
    dataset, _images, _captions = ranking_dataset()
    reference = new_run(dataset)
    ranking_run_execute(reference.pk, options=SMALL_CHUNKS)

    run = new_run(dataset)
    seen = []

    def crash_after_second_t2i_chunk(key, done):
        seen.append((key, done))
        if key == models.Direction.T2I and done == 2:
            raise Crash()

    with pytest.raises(Crash):
        ranking_run_execute(run.pk, after_unit=crash_after_second_t2i_chunk, options=SMALL_CHUNKS)
    run.refresh_from_db()
    assert run.status == models.RunStatus.RUNNING  # a killed worker leaves it running
    assert chunks_ranked(run, models.Direction.T2I) == 2
    # A torn write of the next chunk (query rows 4 and 5) that never committed its progress.
    caption_ids = sorted(dataset.captions.values_list("pk", flat=True))
    models.Candidate.objects.create(
        run=run, direction="t2i", query_id=caption_ids[4], target_id=999999, rank=1, score=9
    )

    resumed = []
    assert ranking_run_execute(run.pk, after_unit=lambda key, done: resumed.append((key, done))) == "succeeded"
    assert resumed[0] == (models.Direction.T2I, 3)  # nothing before the crash point was redone
    assert [(d, q, t, r, s) for d, q, t, r, s in candidate_rows(run)] == candidate_rows(reference)
    assert not models.Candidate.objects.filter(run=run, target_id=999999).exists()


def test_running_a_finished_run_again_changes_nothing():
    dataset, _images, _captions = ranking_dataset()
    run = new_run(dataset)
    ranking_run_execute(run.pk)
    before = candidate_rows(run)
    assert ranking_run_execute(run.pk) == models.RunStatus.SUCCEEDED
    assert candidate_rows(run) == before
    assert len(before) == len(set((d, q, r) for d, q, _t, r, _s in before))


def test_cancel_stops_the_run_between_chunks():
    dataset, _images, _captions = ranking_dataset()
    run = new_run(dataset)

    def cancel_after_first_chunk(key, done):
        if key == models.Direction.I2T and done == 1:
            ranking_run_cancel(run=run)

    assert ranking_run_execute(run.pk, after_unit=cancel_after_first_chunk, options=SMALL_CHUNKS) == "cancelled"
    run.refresh_from_db()
    assert run.status == models.RunStatus.CANCELLED
    assert chunks_ranked(run, models.Direction.I2T) == 1
    assert models.Candidate.objects.filter(run=run, direction="i2t").values("query_id").distinct().count() == 2
    assert not models.Candidate.objects.filter(run=run, direction="t2i").exists()
    # A cancelled run's task delivered again does nothing.
    assert ranking_run_execute(run.pk) == models.RunStatus.CANCELLED


def test_embeddings_are_cached_per_weights_and_dataset_content(monkeypatch):
    dataset, _images, captions = ranking_dataset()
    first = new_run(dataset)
    ranking_run_execute(first.pk)
    calls = []
    original = pipeline.RunExecution.encode

    def counting_encode(self, **kwargs):
        wrapped = kwargs["encode_batch"]
        kwargs["encode_batch"] = lambda batch: calls.append(len(batch)) or wrapped(batch)
        return original(self, **kwargs)

    monkeypatch.setattr(pipeline.RunExecution, "encode", counting_encode)
    second = new_run(dataset)
    ranking_run_execute(second.pk)
    assert calls == []  # served from the cache
    assert candidate_rows(second) == [row for row in candidate_rows(first)]

    models.Caption.objects.filter(pk=captions[0].pk).update(text="A completely different caption about kites.")
    third = new_run(dataset)
    ranking_run_execute(third.pk)
    assert sum(calls) == len(captions)  # the content changed: encoded again


def test_a_broken_checkpoint_fails_the_run_with_a_readable_error(tmp_path):
    """Registration refuses a missing checkpoint; one that vanishes after it fails the run with the message."""
    dataset, _images, _captions = ranking_dataset()
    with pytest.raises(ApplicationError, match="No CLIP checkpoint directory at"):
        annotator_register(name="broken-clip", kind="clip", checkpoint_path=str(tmp_path / "missing"))
    annotator = models.MachineAnnotator.objects.create(
        name="broken-clip", kind="clip", checkpoint_path=str(tmp_path / "missing")
    )
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, status=models.RunStatus.QUEUED)
    assert ranking_run_execute(run.pk) == models.RunStatus.FAILED
    run.refresh_from_db()
    assert run.status == models.RunStatus.FAILED
    assert "No CLIP checkpoint" in run.error


def test_minilm_pivot_ranks_the_own_image_first_for_most_captions():
    """The neural annotator: a caption's best image is its own for most captions with a pivot."""
    dataset, images, captions = ranking_dataset()
    run = new_run(dataset, kind="minilm_pivot", top_k=3)
    assert ranking_run_execute(run.pk) == models.RunStatus.SUCCEEDED
    with_pivot = [c for c in captions if sum(1 for o in captions if o.image_id == c.image_id) > 1]
    top1 = dict(models.Candidate.objects.filter(run=run, direction="t2i", rank=1).values_list("query_id", "target_id"))
    hits = sum(1 for c in with_pivot if top1.get(c.pk) == c.image_id)
    assert hits / len(with_pivot) > 0.8
    scores = np.array(models.Candidate.objects.filter(run=run).values_list("score", flat=True))
    assert np.all(scores <= 1.0001)
