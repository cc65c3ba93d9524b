"""Ranking pages: who may see and do what, the start form, progress JSON, cancel and retry, bad input as 4xx."""

import pytest
from django.urls import reverse

from annotator import models
from annotator.ranking.services.annotators import annotator_register
from tests import factories
from tests.ranking_support import ranking_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def requester(client):
    user = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(user)
    return user


def owned_dataset(user):
    dataset, _images, _captions = ranking_dataset()
    dataset.owner = user
    dataset.save(update_fields=["owner"])
    return dataset


def test_requester_ranks_from_the_dataset_page_and_sees_the_result(
    client, requester, django_capture_on_commit_callbacks, background_tasks
):
    dataset = owned_dataset(requester)
    page = client.get(reverse("dataset-ranking", args=[dataset.pk]))
    assert page.status_code == 200
    assert b"Rank with" in page.content and b"tfidf_pivot (built in)" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("ranking-start", args=[dataset.pk]), {"annotator": "kind:tfidf_pivot", "top_k": "3"}
        )
    run = models.RankingRun.objects.get(dataset=dataset)
    assert response.status_code == 302 and response.url == reverse("ranking-run", args=[run.pk])
    assert background_tasks == [("workers.tasks.ranking.ranking_run_task", run.pk)]  # not in the request
    assert run.status == models.RunStatus.SUCCEEDED
    detail = client.get(response.url)
    assert detail.status_code == 200 and b"Candidates" in detail.content
    shards = models.RankingShard.objects.filter(run=run).count()
    assert f"{shards} of {shards} done; 1 worker process took part".encode() in detail.content
    first_caption = dataset.captions.order_by("pk").first()
    assert first_caption.text.encode() in detail.content
    progress = client.get(reverse("job-status", args=["ranking", run.pk])).json()
    assert progress["status"] == "succeeded" and progress["state"] == "done" and progress["percent"] == 100.0


def test_two_annotators_show_diversity_on_the_dataset_page(client, requester, django_capture_on_commit_callbacks):
    dataset = owned_dataset(requester)
    for kind in ("kind:tfidf_pivot", "kind:minilm_pivot"):
        with django_capture_on_commit_callbacks(execute=True):
            client.post(reverse("ranking-start", args=[dataset.pk]), {"annotator": kind, "top_k": "5"})
    page = client.get(reverse("dataset-ranking", args=[dataset.pk]))
    assert b"Annotator diversity" in page.content and b"Kendall" in page.content


def test_workers_and_anonymous_users_cannot_reach_ranking(client):
    dataset, _images, _captions = ranking_dataset()
    run = factories.RankingRunFactory(dataset=dataset)
    anonymous = client.get(reverse("ranking-run", args=[run.pk]))
    assert anonymous.status_code == 302 and "login" in anonymous.url
    client.force_login(factories.user_with_role(models.Role.WORKER))
    assert client.get(reverse("ranking-run", args=[run.pk])).status_code == 403
    assert client.get(reverse("job-status", args=["ranking", run.pk])).status_code == 403
    assert (
        client.post(reverse("ranking-start", args=[dataset.pk]), {"annotator": "kind:tfidf_pivot"}).status_code == 403
    )
    assert not models.RankingRun.objects.exclude(pk=run.pk).exists()


def test_researchers_read_but_do_not_start_or_cancel(client):
    """A researcher with a campaign on the dataset shared with them reads its runs, and changes nothing."""
    dataset, _images, _captions = ranking_dataset()
    run = factories.RankingRunFactory(dataset=dataset, status=models.RunStatus.RUNNING)
    researcher = factories.user_with_role(models.Role.RESEARCHER)
    factories.CampaignFactory(dataset=dataset).shared_with.add(researcher)
    client.force_login(researcher)
    page = client.get(reverse("ranking-run", args=[run.pk]))
    assert page.status_code == 200 and b"Cancel run" not in page.content
    assert client.post(reverse("ranking-run-cancel", args=[run.pk])).status_code == 403
    run.refresh_from_db()
    assert run.status == models.RunStatus.RUNNING


def test_another_requesters_dataset_is_refused(client, requester):
    other = factories.user_with_role(models.Role.REQUESTER)
    dataset = owned_dataset(other)
    response = client.post(reverse("ranking-start", args=[dataset.pk]), {"annotator": "kind:tfidf_pivot"})
    assert response.status_code == 404  # out of scope reads as missing, as in the API
    assert not models.RankingRun.objects.exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"annotator": "kind:clip"}, b"Choose an annotator"),
        ({"annotator": "999999"}, b"Choose an annotator"),
        ({"annotator": "abc"}, b"Choose an annotator"),
        ({"annotator": "kind:tfidf_pivot", "top_k": "0"}, b"top_k must be between"),
        ({"annotator": "kind:tfidf_pivot", "top_k": "lots"}, b"top_k must be a whole number"),
    ],
)
def test_bad_start_input_is_a_readable_400(client, requester, data, message):
    dataset = owned_dataset(requester)
    response = client.post(reverse("ranking-start", args=[dataset.pk]), data)
    assert response.status_code == 400 and message in response.content
    assert not models.RankingRun.objects.exists()


def test_cancel_and_retry_buttons(client, requester, django_capture_on_commit_callbacks):
    dataset = owned_dataset(requester)
    run = factories.RankingRunFactory(dataset=dataset, status=models.RunStatus.QUEUED)
    assert b"Cancel run" in client.get(reverse("ranking-run", args=[run.pk])).content
    assert client.post(reverse("ranking-run-cancel", args=[run.pk])).status_code == 302
    run.refresh_from_db()
    assert run.status == models.RunStatus.CANCELLED
    retry = reverse("job-retry", args=["ranking", run.pk])
    assert f'action="{retry}"'.encode() in client.get(reverse("ranking-run", args=[run.pk])).content
    with django_capture_on_commit_callbacks(execute=False) as queued:  # its task is not run: it stays queued
        assert client.post(retry).status_code == 302
    run.refresh_from_db()
    assert run.status == models.RunStatus.QUEUED and len(queued) == 1
    run.status = models.RunStatus.SUCCEEDED
    run.save()
    refused = client.post(retry)
    assert refused.status_code == 409 and b"cannot become" in refused.content


def test_register_clip_annotator_form_and_escaping(client, requester, tiny_clip_checkpoint):
    response = client.post(
        reverse("annotator-register"),
        {
            "name": "<b>clip</b>",
            "kind": "clip",
            "checkpoint_path": str(tiny_clip_checkpoint),
            "next": "https://evil.example/",
        },
    )
    assert response.status_code == 302 and response.url == reverse("home")  # no open redirect
    assert models.MachineAnnotator.objects.filter(name="<b>clip</b>", kind="clip").exists()
    dataset = owned_dataset(requester)
    page = client.get(reverse("dataset-ranking", args=[dataset.pk]))
    assert b"&lt;b&gt;clip&lt;/b&gt;" in page.content and b"<b>clip</b>" not in page.content
    bad = client.post(reverse("annotator-register"), {"name": "x", "kind": "clip", "checkpoint_path": ""})
    assert bad.status_code == 400
    missing = client.post(reverse("annotator-register"), {"name": "x", "kind": "clip", "checkpoint_path": "/models/no"})
    assert missing.status_code == 400 and b"No CLIP checkpoint directory at /models/no" in missing.content


def test_ranking_panel_tag_renders_in_any_template(rf, requester):
    from django.template import Context, Template

    dataset = owned_dataset(requester)
    annotator_register(name="tfidf", kind="tfidf_pivot")
    request = rf.get("/")
    request.user = requester
    html = Template("{% load ranking %}{% ranking_panel dataset %}").render(
        Context({"dataset": dataset, "request": request})
    )
    assert "Machine annotators" in html and "tfidf (tfidf_pivot)" in html


def test_another_requesters_runs_are_not_found(client, requester):
    dataset = owned_dataset(factories.user_with_role(models.Role.REQUESTER))
    run = factories.RankingRunFactory(dataset=dataset)
    assert client.get(reverse("ranking-run", args=[run.pk])).status_code == 404
    assert client.get(reverse("job-status", args=["ranking", run.pk])).status_code == 404
    assert client.get(reverse("dataset-ranking", args=[dataset.pk])).status_code == 404


def test_the_dataset_page_carries_the_ranking_panel(client, requester):
    dataset = owned_dataset(requester)
    page = client.get(reverse("dataset-detail", args=[dataset.pk]))
    assert page.status_code == 200
    assert (
        b"Machine annotators" in page.content and reverse("ranking-start", args=[dataset.pk]).encode() in page.content
    )


def test_the_visual_annotator_is_built_in_and_its_run_page_shows_image_neighbours(
    client, requester, django_capture_on_commit_callbacks
):
    dataset = owned_dataset(requester)
    page = client.get(reverse("dataset-ranking", args=[dataset.pk]))
    assert b"visual (built in)" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("ranking-start", args=[dataset.pk]), {"annotator": "kind:visual", "top_k": "3"})
    run = models.RankingRun.objects.get(dataset=dataset)
    assert run.status == models.RunStatus.SUCCEEDED
    detail = client.get(response.url).content.decode()
    assert 'value="i2i" selected' in detail and detail.count('<tr><td class="num">') == 3  # three image neighbours
    captions = client.get(reverse("ranking-run", args=[run.pk]) + "?direction=t2t").content.decode()
    assert "No candidates for this query" in captions  # it reads no captions
