"""A vision-language judge (a tiny random-weight LLaVA saved as a real checkpoint) re-ranking a finished run's top K:
pooled by a campaign as one more annotator (provenance, Table A.1 diversity, label-set bias B), and started from
the run's page and from `POST /api/v1/runs/{id}/rerank/`, where an annotator of another kind is a clear 400."""

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator import models
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.labels.services.labelsets.builds import labelset_from_campaign
from annotator.ranking.selectors.ranking import annotator_diversity
from annotator.ranking.services.annotators import annotator_register
from annotator.research.selectors.labelset_analyses import labelset_bias
from tests import factories
from tests.ranking_models import tiny_llava_dir
from tests.ranking_support import ranking_dataset
from workers.ranking.pipeline import ranking_run_execute

pytestmark = pytest.mark.django_db
WRONG_KIND = "is a tfidf_pivot; a re-ranking run needs a cross_encoder or a vlm_judge annotator."


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    return tiny_llava_dir(tmp_path_factory.mktemp("llava"))


def finished_run(dataset, name, top_k=6):
    annotator = annotator_register(name=name, kind=name)
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=top_k, status="queued")
    assert ranking_run_execute(run.pk) == models.RunStatus.SUCCEEDED
    run.refresh_from_db()
    return run


def owned_dataset(owner):
    dataset, _images, _captions = ranking_dataset()
    dataset.owner = owner
    dataset.save(update_fields=["owner"])
    return dataset


def test_a_campaign_pools_a_judge_rerank_as_one_more_annotator(llava):
    """Pooling, provenance, Table A.1 diversity and the label-set bias B all count the judge's re-ranking run."""
    owner = factories.user_with_role(models.Role.REQUESTER)
    dataset, _images, _captions = ranking_dataset()
    source = finished_run(dataset, "tfidf_pivot")
    other = finished_run(dataset, "minilm_pivot")
    judge = annotator_register(name="llava-judge", kind="vlm_judge", checkpoint_path=str(llava))
    rerank = models.RankingRun.objects.create(
        dataset=dataset, annotator=judge, reranks=source, top_k=4, status=models.RunStatus.QUEUED
    )
    assert ranking_run_execute(rerank.pk) == models.RunStatus.SUCCEEDED

    diversity = annotator_diversity(dataset=dataset, direction="t2i", k=4)
    assert set(diversity["annotators"]) == {"tfidf_pivot", "minilm_pivot", "llava-judge"}
    assert rerank.pk in diversity["runs"]

    campaign = campaign_create(
        owner=owner,
        dataset=dataset,
        runs=list(models.RankingRun.objects.filter(pk__in=[source.pk, other.pk, rerank.pk])),
        name="with a judge",
        direction="i2t",
        candidates_per_hit=4,
        pool_depth=3,
        gold_exclusion_depth=4,
        qualification_items=0,
    )
    campaign = campaign_build(campaign=campaign)
    judged = models.PairSource.objects.filter(pair__campaign=campaign, run=rerank)
    assert judged.exists() and {s.run.annotator.name for s in judged} == {"llava-judge"}
    # Provenance records the judge's own rank of each pair it proposed, at most the pool depth.
    for provenance in judged:
        image, caption = provenance.pair.image_id, provenance.pair.caption_id
        query, target = (image, caption) if provenance.direction == "i2t" else (caption, image)
        stored = models.Candidate.objects.get(
            run=rerank, direction=provenance.direction, query_id=query, target_id=target
        )
        assert (provenance.rank, provenance.score) == (stored.rank, stored.score) and stored.rank <= 3

    own = dict(dataset.captions.values_list("pk", "image_id"))
    models.Label.objects.bulk_create(
        models.Label(
            pair=pair,
            method=models.AggregationMethod.MAJORITY,
            choice=models.Choice.YES if own[pair.caption_id] == pair.image_id else models.Choice.NO,
            is_positive=own[pair.caption_id] == pair.image_id,
            is_positive_strict=own[pair.caption_id] == pair.image_id,
            confidence=1.0,
            answer_count=3,
        )
        for pair in models.Pair.objects.filter(campaign=campaign)
    )
    crowd = labelset_from_campaign(campaign=campaign, name="crowd")
    bias = labelset_bias(label_set=crowd, k=3)
    assert "llava-judge" in bias["annotators"] and "llava-judge" in bias["bias"]["annotators"]


def test_the_run_page_offers_a_judge_rerank_and_starts_it(client, llava, django_capture_on_commit_callbacks):
    owner = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(owner)
    source = finished_run(owned_dataset(owner), "tfidf_pivot")
    judge = annotator_register(name="llava-judge", kind="vlm_judge", checkpoint_path=str(llava))
    page = client.get(reverse("ranking-run", args=[source.pk]))
    assert f'<option value="{judge.pk}">llava-judge</option>'.encode() in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("ranking-run-rerank", args=[source.pk]), {"annotator": judge.pk, "top_k": "2"})
    rerank = models.RankingRun.objects.get(reranks=source)
    assert response.status_code == 302 and response.url == reverse("ranking-run", args=[rerank.pk])
    rerank.refresh_from_db()
    assert rerank.status == models.RunStatus.SUCCEEDED and rerank.annotator == judge and rerank.top_k == 2
    assert models.Candidate.objects.filter(run=rerank, direction="t2i").exists()
    page = client.get(response.url)
    assert f'Re-ranks the top 2 of <a href="/ranking/runs/{source.pk}/">run #{source.pk}</a>'.encode() in page.content
    assert b"with a vision-language judge." in page.content

    lexical = models.MachineAnnotator.objects.get(name="tfidf_pivot")
    wrong = client.post(reverse("ranking-run-rerank", args=[source.pk]), {"annotator": lexical.pk})
    assert wrong.status_code == 400 and f"Annotator tfidf_pivot {WRONG_KIND}" in wrong.content.decode()
    assert models.RankingRun.objects.filter(reranks=source).count() == 1


def test_the_api_starts_a_judge_rerank_and_refuses_another_kind(llava):
    owner = factories.user_with_role(models.Role.REQUESTER)
    source = finished_run(owned_dataset(owner), "tfidf_pivot")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    body = {"name": "llava-judge", "kind": "vlm_judge", "checkpoint_path": str(llava)}
    judge = client.post("/api/v1/annotators/", body, format="json")
    assert judge.status_code == 201, judge.content
    response = client.post(
        f"/api/v1/runs/{source.pk}/rerank/", {"annotator": judge.json()["id"], "top_k": 3}, format="json"
    )
    assert response.status_code == 202, response.content
    assert response.json()["reranks"] == source.pk and response.json()["status"] == "queued"
    assert response["Location"] == response.json()["url"]
    run = models.RankingRun.objects.get(reranks=source)
    assert run.annotator.kind == "vlm_judge" and run.top_k == 3

    lexical = models.MachineAnnotator.objects.get(name="tfidf_pivot")
    wrong = client.post(f"/api/v1/runs/{source.pk}/rerank/", {"annotator": lexical.pk}, format="json")
    assert wrong.status_code == 400 and wrong.json()["error"] == f"Annotator tfidf_pivot {WRONG_KIND}"
    assert models.RankingRun.objects.filter(reranks=source).count() == 1
