"""Annotators as installed plugins: the example package (tests/plugins/vericap_example_annotator, installed by
requirements-dev.txt) becomes the kind `example_colours` on the page, in the API and in `manage.py rank`,
and ranks a dataset through the real pipeline."""

import pytest
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotator import models
from annotator.core.errors import ApplicationError
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.kinds import plugin_kinds, rankable_kinds
from annotator.ranking.services.runs import ranking_run_start
from tests import factories
from workers.ranking.annotators import load_annotator
from workers.ranking.plugins import PluginError, plugin_class

KIND = "example_colours"
COLOURS = {"red": (220, 30, 30), "blue": (30, 60, 220), "green": (30, 170, 40), "yellow": (230, 220, 40)}


def colour_dataset(name="colours", owner=None):
    dataset = factories.DatasetFactory(name=name, **({"owner": owner} if owner else {}))
    images, captions = {}, {}
    for colour, rgb in COLOURS.items():
        images[colour] = factories.ImageFactory(
            dataset=dataset, file=ContentFile(factories.png_bytes(rgb, (24, 24)), name=f"{colour}.png")
        )
        captions[colour] = factories.CaptionFactory(dataset=dataset, image=images[colour], text=f"A {colour} wall.")
    return dataset, images, captions


def test_the_installed_example_plugin_is_a_kind():
    assert plugin_kinds() == {**plugin_kinds(), KIND: "vericap_example_annotator:ColourWordsAnnotator"}
    assert KIND in rankable_kinds()
    annotator = load_annotator(kind=KIND, device="cpu")
    assert type(annotator).__name__ == "ColourWordsAnnotator" and annotator.kind == ""
    assert set(annotator.directions) == {"i2t", "t2i", "t2t", "i2i"} and len(annotator.weights_hash()) == 64
    with pytest.raises(PluginError, match="No installed plugin declares the annotator kind 'nonesuch'"):
        plugin_class("nonesuch")


@pytest.mark.django_db
def test_a_plugin_kind_ranks_a_dataset_through_the_pipeline(django_capture_on_commit_callbacks):
    dataset, images, captions = colour_dataset()
    annotator = annotator_register(name="colour-words", kind=KIND)
    with django_capture_on_commit_callbacks(execute=True):
        run = ranking_run_start(dataset=dataset, annotator=annotator, top_k=2)
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED, run.error
    for colour in COLOURS:  # every caption's best image is the one of its colour, and the other way round
        best = models.Candidate.objects.get(run=run, direction="t2i", query_id=captions[colour].pk, rank=1)
        assert best.target_id == images[colour].pk
        best = models.Candidate.objects.get(run=run, direction="i2t", query_id=images[colour].pk, rank=1)
        assert best.target_id == captions[colour].pk
    assert models.Candidate.objects.filter(run=run, direction="i2i").count() == 4 * 2
    annotator.refresh_from_db()
    assert annotator.weights_hash == load_annotator(kind=KIND).weights_hash()


@pytest.mark.django_db
def test_a_run_of_an_uninstalled_plugin_is_refused_with_what_is_missing():
    dataset, _images, _captions = colour_dataset()
    annotator = models.MachineAnnotator.objects.create(name="gone", kind="pcme_gone")
    with pytest.raises(ApplicationError) as error:
        ranking_run_start(dataset=dataset, annotator=annotator)
    assert error.value.status == 409 and "plugin of kind 'pcme_gone', which is not installed" in error.value.message
    with pytest.raises(ApplicationError, match="Unknown annotator kind 'pcme_gone'"):
        annotator_register(name="other", kind="pcme_gone")


@pytest.mark.django_db
def test_the_page_lists_the_plugin_kind_and_ranks_with_it(client, django_capture_on_commit_callbacks):
    user = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(user)
    dataset, images, captions = colour_dataset(owner=user)
    page = client.get(reverse("dataset-ranking", args=[dataset.pk]))
    assert f'<option value="kind:{KIND}">{KIND} (plugin)</option>'.encode() in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("ranking-start", args=[dataset.pk]), {"annotator": f"kind:{KIND}", "top_k": "2"})
    run = models.RankingRun.objects.get(dataset=dataset)
    assert response.status_code == 302 and run.annotator.kind == KIND
    assert run.status == models.RunStatus.SUCCEEDED
    refused = client.post(reverse("ranking-start", args=[dataset.pk]), {"annotator": "kind:nonesuch"})
    assert refused.status_code == 400


@pytest.mark.django_db
def test_the_api_lists_and_registers_the_plugin_kind():
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    user = factories.user_with_role(models.Role.REQUESTER)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    kinds = client.get("/api/v1/annotators/kinds/").json()
    by_kind = {row["kind"]: row for row in kinds}
    assert by_kind[KIND]["plugin"] is True and by_kind[KIND]["needs_checkpoint"] is False
    assert by_kind["open_clip"]["needs_checkpoint"] is True and by_kind["clip"]["plugin"] is False
    created = client.post("/api/v1/annotators/", {"name": "colours", "kind": KIND}, format="json")
    assert created.status_code == 201 and created.json()["kind"] == KIND
    unknown = client.post("/api/v1/annotators/", {"name": "x", "kind": "pvse"}, format="json")
    assert unknown.status_code == 400 and "Unknown annotator kind 'pvse'" in unknown.json()["error"]
    worker = factories.user_with_role(models.Role.WORKER)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=worker).key}")
    assert client.get("/api/v1/annotators/kinds/").status_code == 403


@pytest.mark.django_db(transaction=True)  # commits for real, so the eager task runs inside the command
def test_the_rank_command_takes_the_plugin_kind(capsys):
    dataset, _images, _captions = colour_dataset(name="tiny-colours")
    call_command("rank", "--dataset", "tiny-colours", "--annotator", "colours", "--kind", KIND, "--top-k", "2")
    run = models.RankingRun.objects.get(dataset=dataset)
    assert run.status == models.RunStatus.SUCCEEDED
    assert f"Run {run.pk} (colours on tiny-colours) succeeded" in capsys.readouterr().out
    with pytest.raises(CommandError, match="invalid choice: 'nonesuch'"):
        call_command("rank", "--dataset", "tiny-colours", "--annotator", "x", "--kind", "nonesuch")


class Crash(BaseException):
    """Stands in for a killed worker: not an Exception, so the pipeline does not mark the run failed."""


@pytest.mark.django_db
def test_a_plugin_run_resumes_after_an_interrupted_chunk():
    from tests.ranking_support import candidate_rows, chunks_ranked
    from workers.ranking.pipeline import ranking_run_execute

    dataset, _images, _captions = colour_dataset()
    annotator = annotator_register(name="colour-words", kind=KIND)
    small = {"rows_per_chunk": 1, "shard_size": 2, "text_batch": 2, "image_batch": 2}
    whole = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=2, status="queued")
    assert ranking_run_execute(whole.pk, options=small) == models.RunStatus.SUCCEEDED
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=2, status="queued")

    def crash(key, done):
        if key == models.Direction.T2I and done == 2:
            raise Crash()

    with pytest.raises(Crash):
        ranking_run_execute(run.pk, after_unit=crash, options=small)
    assert chunks_ranked(run, models.Direction.T2I) == 2
    resumed = []
    outcome = ranking_run_execute(run.pk, after_unit=lambda key, done: resumed.append((key, done)), options=small)
    assert outcome == models.RunStatus.SUCCEEDED and resumed[0] == (models.Direction.T2I, 3)
    assert candidate_rows(run) == candidate_rows(whole)
