"""CxC Table 5 of one of Vericap's own annotators, computed rather than uploaded: `manage.py evaluate --cxc
--annotator KIND`, the "compute them with a machine annotator" choice on a CxC label set's page and the
`annotator` field of POST /api/v1/labelsets/<id>/cxc-table5/. The scores come from the same code as
`manage.py cxc_annotator_scores` (here tfidf_pivot on synthetic scenes whose ratings follow the scenes'
truth), are computed by a background job with its status on the page, and join the set's leaderboard."""

import json
import random
from datetime import timedelta
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from rest_framework.test import APIClient

from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import JobState, job_state
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Caption, Evaluation, EvaluationStatus, Role
from annotator.research.services.cxc_table5 import cxc_annotator_evaluation_request
from tests.annotator.cxc.support import SyntheticWorld
from tests.factories import user_with_role
from workers.tasks.evaluations import cxc_annotator_scores_task


def _sts_set(world: SyntheticWorld, owner, name="cxc-syn-sts"):
    """A CxC STS file of the world's captions (a synthetic dataset: CxC spells its ids as its source ids),
    rated by the scenes' truth, imported as the released files are."""
    captions = list(Caption.objects.filter(dataset=world.dataset).values_list("pk", "source_id"))
    rng = random.Random(2)
    lines = ["caption1,caption2,agg_score,sampling_method"]
    for pk, source in captions:
        for other_pk, other_source in rng.sample(captions, 3):
            if other_pk != pk:
                score = round(world.caption_similarity(pk, other_pk), 2)
                lines.append(f"{source},{other_source},{score},c2c_isim")
    return labelset_import(
        dataset=world.dataset, name=name, files=[("sts_test.csv", "\n".join(lines) + "\n")], fmt="cxc_sts", user=owner
    )


@pytest.fixture
def world(tmp_path):
    owner = user_with_role(Role.RESEARCHER, username="cxc-researcher")
    world = SyntheticWorld(tmp_path / "world", images=16, owner=owner)
    return world, owner, _sts_set(world, owner)


@pytest.mark.django_db(transaction=True)  # the scores task runs when the request's transaction commits
def test_evaluate_cxc_with_an_annotator_prints_the_table_its_own_scores_files_give_and_stores_it(world, tmp_path):
    _world, owner, label_set = world
    out, err = StringIO(), StringIO()
    common = ["--cxc", "--label-set", label_set.name, "--resamples", "50", "--seed", "4"]
    call_command("evaluate", *common, "--annotator", "tfidf_pivot", stdout=out, stderr=err)
    table = json.loads(out.getvalue())
    evaluation = Evaluation.objects.get(pk=table["evaluation"])
    assert evaluation.status == EvaluationStatus.SUCCEEDED and evaluation.created_by == owner
    assert evaluation.name == "tfidf_pivot" and evaluation.settings["annotator_kind"] == "tfidf_pivot"
    assert table["annotator"] == "tfidf_pivot" and table["samples"] == 50 and table["seed"] == 4
    sts = table["tasks"]["sts"]
    assert sts["spearman"] > 0.2 and sts["pairs_missing_score"] == 0 and sts["pairs_scored"] == sts["pairs_rated"]
    # The same numbers as cxc_annotator_scores' files scored by evaluate --cxc --scores: one home for the scores.
    files = StringIO()
    call_command(
        "cxc_annotator_scores",
        "--label-set",
        label_set.name,
        "--annotator",
        "tfidf_pivot",
        "--out",
        str(tmp_path / "scores"),
        stderr=StringIO(),
    )
    call_command("evaluate", *common, "--scores", str(tmp_path / "scores" / "sts_scores.csv"), stdout=files)
    assert json.loads(files.getvalue())["tasks"]["sts"] == sts
    # Asked again: the stored evaluation, not a second computation.
    again, again_err = StringIO(), StringIO()
    call_command("evaluate", *common, "--annotator", "tfidf_pivot", stdout=again, stderr=again_err)
    assert json.loads(again.getvalue()) == table and "asked for before" in again_err.getvalue()
    assert Evaluation.objects.filter(label_set=label_set).count() == 1


@pytest.mark.django_db(transaction=True)
def test_evaluate_cxc_annotator_refuses_unknown_kinds_and_mixed_inputs_with_clear_messages(world, tmp_path):
    _world, _owner, label_set = world
    base = ["evaluate", "--cxc", "--label-set", label_set.name]
    with pytest.raises(
        CommandError, match=r"Unknown annotator kind 'nope'; CxC scores can be computed by .*tfidf_pivot"
    ):
        call_command(*base, "--annotator", "nope")
    with pytest.raises(CommandError, match="clip annotator loads a checkpoint you name"):
        call_command(*base, "--annotator", "clip")
    with pytest.raises(CommandError, match="give it or --scores, not both"):
        call_command(*base, "--annotator", "tfidf_pivot", "--scores", str(tmp_path / "s.csv"))
    with pytest.raises(CommandError, match="give --label-set NAME"):
        call_command("evaluate", "--cxc", "--ratings", str(tmp_path / "r.csv"), "--annotator", "tfidf_pivot")
    with pytest.raises(CommandError, match="No user 'nobody'"):
        call_command(*base, "--annotator", "tfidf_pivot", "--owner", "nobody")
    with pytest.raises(CommandError, match=r"--scores FILE, repeat\) or --annotator KIND"):
        call_command(*base)
    assert not Evaluation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_annotator_that_cannot_read_the_pairs_fails_the_evaluation_with_its_reason(world):
    _world, owner, label_set = world
    with pytest.raises(CommandError, match="reads no caption"):
        call_command("evaluate", "--cxc", "--label-set", label_set.name, "--annotator", "visual", "--resamples", "20")
    failed = Evaluation.objects.get(label_set=label_set)
    assert failed.status == EvaluationStatus.FAILED and "The visual annotator could not score the pairs" in failed.error
    assert not failed.rankings_file
    # Asking again queues it again (and it fails again, for the same reason).
    again, created = cxc_annotator_evaluation_request(label_set=label_set, user=owner, kind="visual", samples=20)
    assert not created and again.pk == failed.pk
    again.refresh_from_db()
    assert again.status == EvaluationStatus.FAILED and "reads no caption" in again.error


@pytest.mark.django_db
def test_the_scores_task_is_idempotent_and_a_request_without_ratings_or_a_known_kind_is_a_400(
    world, django_capture_on_commit_callbacks
):
    _world, owner, label_set = world
    with django_capture_on_commit_callbacks(execute=False) as queued:
        evaluation, created = cxc_annotator_evaluation_request(
            label_set=label_set, user=owner, kind="tfidf_pivot", samples=30
        )
    assert created and evaluation.status == EvaluationStatus.QUEUED and len(queued) == 1
    assert cxc_annotator_scores_task.apply(args=[evaluation.pk]).get() == EvaluationStatus.SUCCEEDED
    evaluation.refresh_from_db()
    digest, results = evaluation.rankings_sha256, evaluation.results
    assert digest and results["cxc"]["tasks"]["sts"]["samples"] == 30
    # A redelivered message finds the evaluation done and leaves it as it is.
    assert cxc_annotator_scores_task.apply(args=[evaluation.pk]).get() == EvaluationStatus.SUCCEEDED
    evaluation.refresh_from_db()
    assert evaluation.rankings_sha256 == digest and evaluation.results == results
    with pytest.raises(ApplicationError, match="Unknown annotator kind 'CLIP'"):
        cxc_annotator_evaluation_request(label_set=label_set, user=owner, kind="CLIP")
    first, second = Caption.objects.filter(dataset=label_set.dataset).values_list("source_id", flat=True)[:2]
    empty = labelset_import(
        dataset=label_set.dataset,
        name="no-ratings",
        files=[("x.jsonl", json.dumps({"caption": first, "other_caption": second, "positive": True}))],
        fmt="jsonl",
    )
    with pytest.raises(ApplicationError, match="has no 0-5 ratings"):
        cxc_annotator_evaluation_request(label_set=empty, user=owner, kind="tfidf_pivot")


@pytest.mark.django_db
def test_the_label_sets_page_computes_scores_in_the_background_and_shows_the_job_then_the_board(
    world, client, background_tasks, django_capture_on_commit_callbacks
):
    _world, owner, label_set = world
    client.force_login(owner)
    url = f"/research/labelsets/{label_set.pk}/cxc-table5"
    page = client.get(f"/research/labelsets/{label_set.pk}/").content.decode()
    assert 'name="annotator"' in page and '<option value="tfidf_pivot">' in page and 'name="sts_scores"' in page
    assert '<option value="clip">' not in page  # a checkpoint kind cannot compute here

    with django_capture_on_commit_callbacks(execute=False):
        answer = client.post(url, {"annotator": "tfidf_pivot", "samples": "40", "seed": "1"})
    assert answer.status_code == 302 and answer["Location"].endswith(f"/research/labelsets/{label_set.pk}/#cxc-table5")
    waiting = Evaluation.objects.get(label_set=label_set)
    assert waiting.status == EvaluationStatus.QUEUED and waiting.name == "tfidf_pivot"
    page = client.get(f"/research/labelsets/{label_set.pk}/").content.decode()
    assert f'data-job-url="/jobs/cxc-scores/{waiting.pk}/status.json"' in page and 'data-job-state="queued"' in page
    assert "computed by tfidf_pivot" in page and "js/jobs.js" in page
    status = client.get(f"/jobs/cxc-scores/{waiting.pk}/status.json").json()
    assert status["state"] == "queued" and status["active"] and status["page_url"].endswith("#cxc-table5")

    # Another seed, this time let through: the request hands the computation to the background.
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(url, {"annotator": "tfidf_pivot", "name": "lexical", "samples": "40", "seed": "2"})
    assert answer.status_code == 302
    done = Evaluation.objects.get(label_set=label_set, name="lexical")
    assert (task_names.CXC_ANNOTATOR_SCORES, done.pk) in background_tasks
    assert done.status == EvaluationStatus.SUCCEEDED, done.error
    spearman = done.results["cxc"]["tasks"]["sts"]["spearman_x100"]
    page = client.get(f"/research/labelsets/{label_set.pk}/").content.decode()
    assert f"STS {spearman}" in page
    board = client.get(
        f"/research/leaderboard/labelset/{label_set.pk}/?direction=t2t&sort=cxc_spearman"
    ).content.decode()
    assert "lexical" in board and "CxC scores computed by tfidf_pivot" in board

    bad = client.post(url, {"annotator": "nope", "samples": "40"})
    assert bad.status_code == 400 and "Unknown annotator kind &#x27;nope&#x27;" in bad.content.decode()
    both = client.post(
        url, {"annotator": "tfidf_pivot", "sts_scores": SimpleUploadedFile("s.csv", b"caption1,caption2,score\n")}
    )
    assert both.status_code == 400 and "not both" in both.content.decode()


@pytest.mark.django_db
def test_a_stalled_computation_is_retried_from_its_job_widget(world, client, django_capture_on_commit_callbacks):
    _world, owner, label_set = world
    with django_capture_on_commit_callbacks(execute=False):
        evaluation, _ = cxc_annotator_evaluation_request(label_set=label_set, user=owner, kind="tfidf_pivot")
    assert job_state(evaluation) == JobState.QUEUED
    lost = (timezone.now() - timedelta(hours=1)).isoformat()  # its message was lost an hour ago
    Evaluation.objects.filter(pk=evaluation.pk).update(
        created_at=timezone.now() - timedelta(hours=1), results={"progress": {"queued_at": lost}}
    )
    evaluation.refresh_from_db()
    assert job_state(evaluation) == JobState.STALLED
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        answer = client.post(f"/jobs/cxc-scores/{evaluation.pk}/retry/")
    assert answer.status_code == 302 and answer.url.endswith("#cxc-table5") and len(queued) == 1
    evaluation.refresh_from_db()
    assert job_state(evaluation) == JobState.QUEUED  # queued again just now


@pytest.mark.django_db
def test_the_api_takes_an_annotator_instead_of_scores_and_refuses_an_unknown_kind(
    world, django_capture_on_commit_callbacks
):
    _world, owner, label_set = world
    api = APIClient()
    api.force_authenticate(owner)
    url = f"/api/v1/labelsets/{label_set.pk}/cxc-table5/"
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post(url, {"annotator": "tfidf_pivot", "samples": 25, "seed": 3})
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["status"] == "queued" and body["name"] == "tfidf_pivot"
    assert body["settings"]["annotator_kind"] == "tfidf_pivot" and "queued_at" in body["results"]["progress"]
    done = api.get(f"/api/v1/evaluations/{body['id']}/").json()
    assert done["status"] == "succeeded", done["error"]
    assert done["results"]["cxc"]["annotator"] == "tfidf_pivot" and done["results"]["cxc"]["samples"] == 25
    assert done["results"]["metrics"]["t2t"]["cxc_spearman"]["value"] > 0.2
    again = api.post(url, {"annotator": "tfidf_pivot", "samples": 25, "seed": 3})
    assert again.status_code == 200 and again.json()["id"] == body["id"]

    unknown = api.post(url, {"annotator": "nope"})
    assert unknown.status_code == 400
    assert "Unknown annotator kind 'nope'" in unknown.content.decode() and "tfidf_pivot" in unknown.content.decode()
    checkpoint = api.post(url, {"annotator": "clip"})
    assert checkpoint.status_code == 400 and "loads a checkpoint" in checkpoint.content.decode()
    scores = SimpleUploadedFile("s.csv", b"caption1,caption2,score\na,b,1\n")
    both = api.post(url, {"annotator": "tfidf_pivot", "sts_scores": scores})
    assert both.status_code == 400 and "not both" in both.content.decode()
    neither = api.post(url, {"name": "x"})
    assert neither.status_code == 400 and "or name an annotator" in neither.content.decode()
    assert Evaluation.objects.filter(label_set=label_set).count() == 1
