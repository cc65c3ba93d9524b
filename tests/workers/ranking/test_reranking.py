"""Cross-encoder re-ranking runs (ViLT's and BLIP's matching heads, tiny random weights saved as real checkpoints):
the source's top K re-ordered by the cross-encoder in both directions, sharded over workers, resumed after an
interrupted chunk, cancelled and retried; from the page, the API and the command; and to a campaign, its
provenance, Table A.1 and the label-set bias, one more annotator."""

import pytest
import torch
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotator import models
from annotator.core.errors import ApplicationError
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.reranking import rerank_run_start
from annotator.ranking.services.runs import ranking_run_cancel, ranking_run_retry, ranking_run_start
from tests import factories
from tests.ranking_models import tiny_blip_dir, tiny_clip_dir, tiny_vilt_dir
from tests.ranking_support import candidate_rows, chunks_ranked, ranking_dataset
from workers.ranking.cross import load_cross_encoder
from workers.ranking.pipeline import load_pil, ranking_run_execute, ranking_shard_execute

pytestmark = pytest.mark.django_db
SMALL = {"rows_per_chunk": 2, "chunks_per_shard": 2}


class Crash(BaseException):
    """Stands in for a killed worker: not an Exception, so the pipeline does not mark the run failed."""


@pytest.fixture(scope="module")
def vilt(tmp_path_factory):
    return tiny_vilt_dir(tmp_path_factory.mktemp("vilt"))


@pytest.fixture(scope="module")
def blip(tmp_path_factory):
    return tiny_blip_dir(tmp_path_factory.mktemp("blip"))


def source_run(dataset, top_k=4):
    annotator = annotator_register(name="tfidf_pivot", kind="tfidf_pivot")
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=top_k, status="queued")
    assert ranking_run_execute(run.pk) == models.RunStatus.SUCCEEDED
    run.refresh_from_db()
    return run


def queued_rerank(source, cross, top_k=3):
    return models.RankingRun.objects.create(
        dataset=source.dataset, annotator=cross, reranks=source, top_k=top_k, status=models.RunStatus.QUEUED
    )


@pytest.mark.parametrize("model", ["vilt", "blip"])
def test_a_rerank_reorders_the_sources_top_k_by_the_cross_encoders_score(model, vilt, blip):
    checkpoint = str(vilt if model == "vilt" else blip)
    dataset, images, captions = ranking_dataset()
    source = source_run(dataset)
    cross = annotator_register(name=model, kind="cross_encoder", checkpoint_path=checkpoint)
    run = queued_rerank(source, cross)
    assert ranking_run_execute(run.pk, options=SMALL) == models.RunStatus.SUCCEEDED
    run.refresh_from_db()
    assert run.reranks == source and run.stage == "done" and run.chunks_done == run.chunks_total > 0
    assert not models.Candidate.objects.filter(run=run, direction__in=["t2t", "i2i"]).exists()
    encoder = load_cross_encoder(checkpoint_path=checkpoint, device="cpu")
    cross.refresh_from_db()
    assert cross.weights_hash == encoder.weights_hash()
    files = {image.pk: image.file.name for image in images}
    texts = {caption.pk: caption.text for caption in captions}
    for direction in ("i2t", "t2i"):
        for query in {c.query_id for c in models.Candidate.objects.filter(run=source, direction=direction)}:
            proposed = list(
                models.Candidate.objects.filter(run=source, direction=direction, query_id=query, rank__lte=3)
                .order_by("rank")
                .values_list("target_id", flat=True)
            )
            pairs = [(query, t) if direction == "i2t" else (t, query) for t in proposed]  # (image, caption)
            scores = encoder.score([texts[c] for _i, c in pairs], [load_pil(files[i]) for i, _c in pairs])
            expected = dict(zip(proposed, scores.tolist(), strict=True))
            stored = list(
                models.Candidate.objects.filter(run=run, direction=direction, query_id=query).order_by("rank")
            )
            # The same pairs, each with the cross-encoder's own score (other pairs in a batch pad it differently,
            # hence the tolerance), best first.
            assert sorted(c.target_id for c in stored) == sorted(proposed)
            assert [c.score for c in stored] == pytest.approx([expected[c.target_id] for c in stored], abs=1e-4)
            assert [c.score for c in stored] == sorted((c.score for c in stored), reverse=True)


def test_a_rerank_resumes_after_an_interrupted_chunk_and_is_sharded_over_workers(vilt):
    dataset, _images, _captions = ranking_dataset()
    source = source_run(dataset)
    cross = annotator_register(name="vilt", kind="cross_encoder", checkpoint_path=str(vilt))
    whole = queued_rerank(source, cross)
    ranking_run_execute(whole.pk, options=SMALL)

    run = queued_rerank(source, cross)

    def crash(key, done):
        if key == models.Direction.T2I and done == 3:
            raise Crash()

    with pytest.raises(Crash):
        ranking_run_execute(run.pk, after_unit=crash, options=SMALL)
    assert chunks_ranked(run, models.Direction.T2I) == 3
    resumed = []
    outcome = ranking_run_execute(run.pk, after_unit=lambda key, done: resumed.append((key, done)), options=SMALL)
    assert outcome == models.RunStatus.SUCCEEDED and resumed[0] == (models.Direction.T2I, 4)
    assert candidate_rows(run) == candidate_rows(whole)

    # With a broker the coordinator plans and hands the shards out; two workers take them in turn.
    spread = queued_rerank(source, cross)
    assert ranking_run_execute(spread.pk, options=SMALL, task_id="coordinator") == models.RunStatus.RUNNING
    shards = list(models.RankingShard.objects.filter(run=spread).order_by("-cost", "pk"))
    assert len(shards) > 2
    for number, shard in enumerate(shards):
        assert ranking_shard_execute(shard.pk, task_id=f"worker-{number % 2}") == models.ShardStatus.DONE
    spread.refresh_from_db()
    assert spread.status == models.RunStatus.SUCCEEDED and candidate_rows(spread) == candidate_rows(whole)
    assert {s.task_id for s in models.RankingShard.objects.filter(run=spread)} == {"worker-0", "worker-1"}


def test_a_rerank_is_cancelled_between_chunks_and_a_retry_finishes_it(vilt, django_capture_on_commit_callbacks):
    dataset, _images, _captions = ranking_dataset()
    source = source_run(dataset)
    cross = annotator_register(name="vilt", kind="cross_encoder", checkpoint_path=str(vilt))
    run = queued_rerank(source, cross)

    def cancel_after_first_chunk(key, done):
        ranking_run_cancel(run=run)

    assert ranking_run_execute(run.pk, after_unit=cancel_after_first_chunk, options=SMALL) == "cancelled"
    run.refresh_from_db()
    assert run.status == models.RunStatus.CANCELLED and 0 < run.chunks_done < run.chunks_total
    with django_capture_on_commit_callbacks(execute=True):
        ranking_run_retry(run=run)
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED and run.chunks_done == run.chunks_total


def test_bad_reranks_are_refused_with_a_message(vilt, tmp_path):
    dataset, _images, _captions = ranking_dataset()
    source = source_run(dataset)
    cross = annotator_register(name="vilt", kind="cross_encoder", checkpoint_path=str(vilt))
    lexical = models.MachineAnnotator.objects.get(name="tfidf_pivot")
    cases = [
        ({"source": source, "annotator": lexical}, 400, "needs a cross_encoder or a vlm_judge annotator"),
        ({"source": source, "annotator": cross, "top_k": 5}, 400, "top_k must be between 1 and 4"),
        ({"source": queued_rerank(source, cross), "annotator": cross}, 409, "re-rank a run once it has succeeded"),
    ]
    for kwargs, status, message in cases:
        with pytest.raises(ApplicationError) as error:
            rerank_run_start(**kwargs)
        assert error.value.status == status and message in error.value.message
    with pytest.raises(ApplicationError, match="is a cross_encoder: it scores pairs and cannot embed a gallery"):
        ranking_run_start(dataset=dataset, annotator=cross)
    with pytest.raises(ApplicationError, match="holds a clip model; a cross_encoder annotator expects a matching head"):
        annotator_register(name="c", kind="cross_encoder", checkpoint_path=str(tiny_clip_dir(tmp_path / "clip")))
    with pytest.raises(ApplicationError, match="No cross-encoder checkpoint directory at"):
        annotator_register(name="c", kind="cross_encoder", checkpoint_path=str(tmp_path / "none"))


def test_the_run_page_offers_a_rerank_and_starts_it(client, vilt, django_capture_on_commit_callbacks):
    user = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(user)
    dataset, _images, _captions = ranking_dataset()
    dataset.owner = user
    dataset.save(update_fields=["owner"])
    source = source_run(dataset)
    cross = annotator_register(name="vilt-head", kind="cross_encoder", checkpoint_path=str(vilt))
    page = client.get(reverse("ranking-run", args=[source.pk]))
    assert b"Re-rank the top K with" in page.content and b"vilt-head" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("ranking-run-rerank", args=[source.pk]), {"annotator": cross.pk, "top_k": "2"})
    rerank = models.RankingRun.objects.get(reranks=source)
    assert response.status_code == 302 and response.url == reverse("ranking-run", args=[rerank.pk])
    rerank.refresh_from_db()
    assert rerank.status == models.RunStatus.SUCCEEDED and rerank.top_k == 2
    page = client.get(response.url)
    assert f'Re-ranks the top 2 of <a href="/ranking/runs/{source.pk}/">run #{source.pk}</a>'.encode() in page.content
    bad = client.post(reverse("ranking-run-rerank", args=[source.pk]), {"annotator": cross.pk, "top_k": "99"})
    assert bad.status_code == 400


def test_the_api_starts_a_rerank(vilt):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    user = factories.user_with_role(models.Role.REQUESTER)
    dataset, _images, _captions = ranking_dataset()
    dataset.owner = user
    dataset.save(update_fields=["owner"])
    source = source_run(dataset)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    body = {"name": "vilt", "kind": "cross_encoder", "checkpoint_path": str(vilt)}
    cross = client.post("/api/v1/annotators/", body, format="json").json()
    response = client.post(f"/api/v1/runs/{source.pk}/rerank/", {"annotator": cross["id"], "top_k": 3}, format="json")
    assert response.status_code == 202 and response.json()["reranks"] == source.pk
    assert response["Location"] == response.json()["url"] and response.json()["status"] == "queued"
    missing = client.post(f"/api/v1/runs/{source.pk}/rerank/", {"annotator": 999999}, format="json")
    assert missing.status_code == 404
    lexical = models.MachineAnnotator.objects.get(name="tfidf_pivot")
    wrong = client.post(f"/api/v1/runs/{source.pk}/rerank/", {"annotator": lexical.pk}, format="json")
    assert wrong.status_code == 400 and "needs a cross_encoder or a vlm_judge annotator" in wrong.json()["error"]
    other = factories.user_with_role(models.Role.REQUESTER)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=other).key}")
    refused = client.post(f"/api/v1/runs/{source.pk}/rerank/", {"annotator": cross["id"]}, format="json")
    assert refused.status_code in (403, 404)


@pytest.mark.django_db(transaction=True)  # commits for real, so the eager task runs inside the command
def test_the_rank_command_reranks_a_run(vilt, capsys):
    dataset, _images, _captions = ranking_dataset(name="tiny-rerank")
    call_command("rank", "--dataset", "tiny-rerank", "--annotator", "tfidf_pivot", "--top-k", "4")
    source = models.RankingRun.objects.get(dataset=dataset)
    call_command(
        "rank", "--dataset", "tiny-rerank", "--annotator", "vilt", "--kind", "cross_encoder",
        "--checkpoint", str(vilt), "--rerank", str(source.pk), "--top-k", "3",
    )  # fmt: skip
    rerank = models.RankingRun.objects.get(reranks=source)
    assert rerank.status == models.RunStatus.SUCCEEDED
    assert f"Run {rerank.pk} (vilt on tiny-rerank) succeeded" in capsys.readouterr().out
    with pytest.raises(CommandError, match="No ranking run 999999 on dataset tiny-rerank"):
        call_command("rank", "--dataset", "tiny-rerank", "--annotator", "vilt", "--rerank", "999999")


def test_a_campaign_pools_a_rerank_as_one_more_annotator(vilt):
    """Pooling, provenance, Table A.1 diversity and the label-set bias B all count the re-ranking run."""
    from annotator.campaigns.services.build import campaign_build
    from annotator.campaigns.services.lifecycle import campaign_create
    from annotator.labels.services.labelsets.builds import labelset_from_campaign
    from annotator.models import AggregationMethod, Choice, Label, Pair, PairSource
    from annotator.ranking.selectors.ranking import annotator_diversity
    from annotator.research.selectors.labelset_analyses import labelset_bias

    owner = factories.user_with_role(models.Role.REQUESTER)
    dataset, _images, _captions = ranking_dataset()
    source = source_run(dataset, top_k=6)
    minilm = annotator_register(name="minilm_pivot", kind="minilm_pivot")
    other = factories.RankingRunFactory(dataset=dataset, annotator=minilm, top_k=6, status="queued")
    assert ranking_run_execute(other.pk) == models.RunStatus.SUCCEEDED
    cross = annotator_register(name="vilt", kind="cross_encoder", checkpoint_path=str(vilt))
    rerank = queued_rerank(source, cross, top_k=4)
    assert ranking_run_execute(rerank.pk) == models.RunStatus.SUCCEEDED

    diversity = annotator_diversity(dataset=dataset, direction="t2i", k=4)
    assert set(diversity["annotators"]) == {"tfidf_pivot", "minilm_pivot", "vilt"}

    campaign = campaign_create(
        owner=owner,
        dataset=dataset,
        runs=list(models.RankingRun.objects.filter(pk__in=[source.pk, other.pk, rerank.pk])),
        name="with a re-ranking",
        direction="i2t",
        candidates_per_hit=4,
        pool_depth=3,
        gold_exclusion_depth=4,
        qualification_items=0,
    )
    campaign = campaign_build(campaign=campaign)
    sources = set(PairSource.objects.filter(pair__campaign=campaign).values_list("run__annotator__name", flat=True))
    assert "vilt" in sources
    own = dict(dataset.captions.values_list("pk", "image_id"))
    Label.objects.bulk_create(
        Label(
            pair=pair,
            method=AggregationMethod.MAJORITY,
            choice=Choice.YES if own[pair.caption_id] == pair.image_id else Choice.NO,
            is_positive=own[pair.caption_id] == pair.image_id,
            is_positive_strict=own[pair.caption_id] == pair.image_id,
            confidence=1.0,
            answer_count=3,
        )
        for pair in Pair.objects.filter(campaign=campaign)
    )
    crowd = labelset_from_campaign(campaign=campaign, name="crowd")
    bias = labelset_bias(label_set=crowd, k=3)
    assert "vilt" in bias["annotators"] and "vilt" in bias["bias"]["annotators"]


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    from tests.ranking_models import tiny_llava_dir

    return tiny_llava_dir(tmp_path_factory.mktemp("llava"))


def test_a_vlm_judge_run_scores_the_top_k_with_the_probability_of_yes(llava, django_capture_on_commit_callbacks):
    """The judge is asked the HIT's question about each pair; its score is P(yes) against P(no) at the first
    answer token, computed here again from the model's own logits with LLaVA-1.5's prompt written by hand."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from tests.ranking_models import JUDGE_WORDS

    dataset, images, captions = ranking_dataset()
    source = source_run(dataset)
    judge = annotator_register(name="llava-judge", kind="vlm_judge", checkpoint_path=str(llava))
    with django_capture_on_commit_callbacks(execute=True):
        run = rerank_run_start(source=source, annotator=judge, top_k=2)
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED and run.reranks == source, run.error
    stored = list(models.Candidate.objects.filter(run=run, direction="t2i").order_by("query_id", "rank"))
    assert stored and all(0.0 <= c.score <= 1.0 for c in stored)
    model = AutoModelForImageTextToText.from_pretrained(str(llava)).eval()
    processor = AutoProcessor.from_pretrained(str(llava))
    index = {word: i for i, word in enumerate(JUDGE_WORDS)}
    files = {image.pk: image.file.name for image in images}
    texts = {caption.pk: caption.text for caption in captions}
    for candidate in stored[:3]:
        question = "Is the image correctly described? Answer yes or no."
        prompt = f"USER: <image>\n{texts[candidate.query_id]}\n{question} ASSISTANT:"
        inputs = processor(images=[load_pil(files[candidate.target_id])], text=[prompt], return_tensors="pt")
        with torch.no_grad():
            last = model(**inputs).logits[0, -1]
        yes = torch.logsumexp(last[[index["yes"], index["Yes"]]], dim=0)
        no = torch.logsumexp(last[[index["no"], index["No"]]], dim=0)
        assert candidate.score == pytest.approx(float(torch.sigmoid(yes - no)), abs=1e-4)
    with pytest.raises(ApplicationError, match="scores pairs and cannot embed a gallery"):
        ranking_run_start(dataset=dataset, annotator=judge)
