"""Refinement through the pages and the API: role checks, clear 4xx on bad input, the benchmark files, and
the old-versus-new comparison of a real ranking run."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator.finegrained.services.refinement.proposals import (
    proposals_generate,
    refinement_create,
    refinement_filter,
    refinement_launch,
)
from annotator.models import (
    CaptionVersion,
    LabelSet,
    RankingRun,
    Refinement,
    RefinementStatus,
    Role,
    RunStatus,
)
from annotator.ranking.services.annotators import annotator_register
from tests.annotator.finegrained.refinement_support import RefinementWorld, crowd_work, new_worker
from tests.factories import user_with_role
from workers.ranking.pipeline import ranking_run_execute

pytestmark = pytest.mark.django_db(transaction=True)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _api(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_pages_check_roles_and_refuse_bad_files_with_a_clear_400(tmp_path):
    world = RefinementWorld(tmp_path, images=6, seed=3)
    owner = _client(world.requester)
    response = owner.post("/refinements/", {"name": "fg", "dataset": world.dataset.pk, "scorer": "", "reward_cents": 5})
    assert response.status_code == 302
    refinement = Refinement.objects.get(name="fg")
    page = owner.get(f"/refinements/{refinement.pk}/")
    assert page.status_code == 200 and b"Bring proposals" in page.content

    bad = SimpleUploadedFile("p.csv", b"caption_id,proposal\nnot-a-caption,<script>x</script>\n")
    response = owner.post(f"/refinements/{refinement.pk}/upload/", {"file": bad})
    assert response.status_code == 400
    assert b"not-a-caption" in response.content and b"<script>x" not in response.content

    scenes = SimpleUploadedFile("scenes.json", json.dumps(list(world.scenes.values())).encode())
    response = owner.post(f"/refinements/{refinement.pk}/generate/", {"generator": "scene_facts", "scenes": scenes})
    assert response.status_code == 302
    assert refinement.proposals.count() > 0
    response = owner.post(f"/refinements/{refinement.pk}/generate/", {"generator": "nope"})
    assert response.status_code == 400 and b"No proposal generator" in response.content

    # Another requester, a researcher and a worker do not see the refinement.
    assert _client(user_with_role(Role.REQUESTER)).get(f"/refinements/{refinement.pk}/").status_code == 404
    assert _client(user_with_role(Role.RESEARCHER)).get(f"/refinements/{refinement.pk}/").status_code == 403
    assert _client(user_with_role(Role.WORKER)).post(f"/refinements/{refinement.pk}/launch/").status_code == 403
    # Workers' pages are for workers.
    assert owner.get("/work/corrections/").status_code == 403


def test_benchmark_export_api_files_and_old_versus_new(tmp_path):
    world = RefinementWorld(tmp_path, images=20, seed=6)
    annotator = annotator_register(name="tfidf_pivot", kind="tfidf_pivot")
    run = RankingRun.objects.create(dataset=world.dataset, annotator=annotator, top_k=10, status=RunStatus.QUEUED)
    assert ranking_run_execute(run.pk) == RunStatus.SUCCEEDED
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="fg", scorer="")
    proposals_generate(refinement=refinement, generator="scene_facts", context={"scenes": world.scenes})
    refinement_filter(refinement=refinement)
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.READY
    refinement_launch(refinement=refinement)
    crowd_work(world, refinement, new_worker(), limit=10)
    assert CaptionVersion.objects.filter(caption__dataset=world.dataset, version=2).count() == 10

    researcher = user_with_role(Role.RESEARCHER)
    assert _api(researcher).post("/api/v1/benchmarks/", {"dataset": world.dataset.pk}, format="json").status_code == 403
    other = user_with_role(Role.REQUESTER)
    assert _api(other).post("/api/v1/benchmarks/", {"dataset": world.dataset.pk}, format="json").status_code == 404
    response = _api(world.requester).post("/api/v1/benchmarks/", {"dataset": world.dataset.pk}, format="json")
    assert response.status_code == 201, response.content
    label_set = LabelSet.objects.get(pk=response.json()["id"])
    assert label_set.report["captions"]["refined"] == 10

    files = _api(world.requester).get(f"/api/v1/benchmarks/{label_set.pk}/file/?file_format=json")
    document = json.loads(b"".join(files.streaming_content))
    assert sum(1 for c in document["captions"] if c["version"] == 2) == 10
    csv_file = _api(world.requester).get(f"/api/v1/benchmarks/{label_set.pk}/file/?file_format=csv")
    assert b"caption_text" in b"".join(csv_file.streaming_content)
    assert _api(world.requester).get(f"/api/v1/benchmarks/{label_set.pk}/file/?file_format=xml").status_code == 400
    assert _api(researcher).get(f"/api/v1/benchmarks/{label_set.pk}/file/").status_code == 404  # not shared

    compared = _api(world.requester).get(f"/api/v1/benchmarks/{label_set.pk}/compare/").json()
    row = compared["rows"][0]
    assert row["model"] == "tfidf_pivot"
    for direction in ("i2t", "t2i"):
        assert 0 <= row["old"][direction]["r1"] <= row["old"][direction]["r10"] <= 1
        assert row["new"][direction]["r1"] is not None
    # Without enlargement or verification the gallery and the positives are the old ones: same scores.
    assert row["new"]["t2i"]["r10"] == pytest.approx(row["old"]["t2i"]["r10"])
    page = _client(world.requester).get(f"/research/benchmarks/{label_set.pk}/compare/")
    assert page.status_code == 200 and b"tfidf_pivot" in page.content and b"compare-t2i" in page.content
    assert _client(world.requester).get(f"/benchmarks/{label_set.pk}.csv/").status_code == 200


def test_a_failed_filter_shows_in_the_job_widget_and_retries(tmp_path, monkeypatch):
    """A scorer that cannot load: the refinement goes back to draft with the reason, the widget's JSON says
    failed, and Retry (the jobs page) scores it again once the model loads."""
    from workers.ranking import annotators

    world = RefinementWorld(tmp_path, images=6, seed=3)
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="fg", scorer="minilm_pivot")
    proposals_generate(refinement=refinement, generator="scene_facts", context={"scenes": world.scenes})
    real_load = annotators._load

    def broken(*args, **kwargs):
        raise OSError("weights missing")

    annotators._load.cache_clear()
    monkeypatch.setattr(annotators, "_load", broken)
    refinement_filter(refinement=refinement)  # eager: the task fails after commit, and says why
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.DRAFT and "weights missing" in refinement.error
    owner = _client(world.requester)
    status = owner.get(f"/jobs/refinement/{refinement.pk}/status.json").json()
    assert status["state"] == "failed" and "weights missing" in status["error"]
    assert (
        _client(user_with_role(Role.REQUESTER)).get(f"/jobs/refinement/{refinement.pk}/status.json").status_code == 404
    )

    monkeypatch.setattr(annotators, "_load", real_load)
    response = owner.post(f"/jobs/refinement/{refinement.pk}/retry/")
    assert response.status_code == 302
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.READY and refinement.error == ""
    assert owner.get(f"/jobs/refinement/{refinement.pk}/status.json").json()["state"] == "done"
