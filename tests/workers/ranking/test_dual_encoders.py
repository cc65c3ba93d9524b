"""OpenCLIP checkpoint files and Hugging Face dual encoders (SigLIP): tiny random-weight checkpoints saved as the
real ones are, loaded through the real path, checked against an independent forward, ranked, resumed after an
interrupted chunk; a missing or wrong checkpoint is refused with what is expected."""

import pytest
import torch
import torch.nn.functional as F
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command
from PIL import Image

from annotator import models
from annotator.core.errors import ApplicationError
from annotator.ranking.services.annotators import annotator_register
from tests import factories
from tests.ranking_models import (
    reference_open_clip_image,
    reference_open_clip_text,
    tiny_bert_dir,
    tiny_open_clip_file,
    tiny_siglip_dir,
)
from tests.ranking_support import candidate_rows, chunks_ranked
from workers.ranking.annotators import load_annotator
from workers.ranking.dual import open_clip_state
from workers.ranking.pipeline import ranking_run_execute

SMALL_CHUNKS = {"rows_per_chunk": 2, "shard_size": 4, "text_batch": 3, "image_batch": 2}
COLOURS = [(220, 20, 20), (20, 20, 220), (20, 200, 20), (240, 240, 240), (20, 20, 20)]
TEXTS = ["a red dog", "a blue bus", "a green cat", "the dog and the cat", "a bus on the green", "red wall"]


class Crash(BaseException):
    """Stands in for a killed worker: not an Exception, so the pipeline does not mark the run failed."""


@pytest.fixture(scope="module")
def open_clip_file(tmp_path_factory):
    return tiny_open_clip_file(tmp_path_factory.mktemp("open-clip"))


@pytest.fixture(scope="module")
def siglip_dir(tmp_path_factory):
    return tiny_siglip_dir(tmp_path_factory.mktemp("siglip"))


def small_dataset():
    dataset = factories.DatasetFactory()
    images = [
        factories.ImageFactory(dataset=dataset, file=ContentFile(factories.png_bytes(c, (40, 30)), name=f"c{i}.png"))
        for i, c in enumerate(COLOURS)
    ]
    captions = [
        factories.CaptionFactory(dataset=dataset, image=images[i % len(images)], text=text)
        for i, text in enumerate(TEXTS)
    ]
    return dataset, images, captions


@pytest.mark.parametrize("suffix", [".bin", ".safetensors"])
def test_an_open_clip_file_computes_what_open_clip_computes(tmp_path, suffix):
    """The weights copied into transformers' CLIPModel give OpenCLIP's features (an independent forward of its
    CLIP module: causal blocks pooled at the highest token id, the class token through ln_post)."""
    path = tiny_open_clip_file(tmp_path, suffix=suffix)
    annotator = load_annotator(kind="open_clip", checkpoint_path=str(path), device="cpu")
    state = open_clip_state(path)
    texts = ["a red dog", "the blue bus on the green wall", "zebra"]
    ids = annotator.tokenizer(texts, padding=True, return_tensors="pt")["input_ids"]
    expected = F.normalize(reference_open_clip_text(state, ids), dim=1)
    torch.testing.assert_close(annotator.encode_texts(texts), expected, atol=1e-5, rtol=1e-4)
    pictures = [Image.new("RGB", (40, 30), (200, 0, 0)), Image.new("L", (30, 50), 90)]
    pixels = annotator.image_processor(images=[p.convert("RGB") for p in pictures], return_tensors="pt")
    expected = F.normalize(reference_open_clip_image(state, pixels["pixel_values"]), dim=1)
    torch.testing.assert_close(annotator.encode_images(pictures), expected, atol=1e-5, rtol=1e-4)
    assert len(annotator.weights_hash()) == 64


def test_a_siglip_directory_loads_as_an_hf_dual_encoder(siglip_dir):
    from transformers import SiglipModel

    annotator = load_annotator(kind="hf_dual", checkpoint_path=str(siglip_dir), device="cpu")
    assert isinstance(annotator.model, SiglipModel) and annotator.padding == "max_length"
    vectors = annotator.encode_texts(TEXTS)
    pictures = [Image.new("RGB", (40, 30), c) for c in COLOURS]
    images = annotator.encode_images(pictures)
    assert vectors.shape == (len(TEXTS), 32) and images.shape == (len(COLOURS), 32)
    torch.testing.assert_close(vectors.norm(dim=1), torch.ones(len(TEXTS)))
    batch = annotator.tokenizer(TEXTS, padding="max_length", max_length=16, truncation=True, return_tensors="pt")
    with torch.no_grad():
        own = annotator.model.get_text_features(input_ids=batch["input_ids"]).pooler_output
    torch.testing.assert_close(vectors, F.normalize(own, dim=1), atol=1e-5, rtol=1e-4)


def rank_resumed_and_whole(kind: str, checkpoint: str, config=None):
    """A run of `kind` killed after its second t2i chunk and resumed ends with the candidates of an
    uninterrupted run; returns (run, images, captions)."""
    dataset, images, captions = small_dataset()
    annotator = annotator_register(name=f"tiny-{kind}", kind=kind, checkpoint_path=checkpoint, config=config)
    whole = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=3, status=models.RunStatus.QUEUED)
    assert ranking_run_execute(whole.pk, options=SMALL_CHUNKS) == models.RunStatus.SUCCEEDED
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=3, status=models.RunStatus.QUEUED)

    def crash(key, done):
        if key == models.Direction.T2I and done == 2:
            raise Crash()

    with pytest.raises(Crash):
        ranking_run_execute(run.pk, after_unit=crash, options=SMALL_CHUNKS)
    assert chunks_ranked(run, models.Direction.T2I) == 2
    resumed = []
    outcome = ranking_run_execute(
        run.pk, after_unit=lambda key, done: resumed.append((key, done)), options=SMALL_CHUNKS
    )
    assert outcome == models.RunStatus.SUCCEEDED and resumed[0] == (models.Direction.T2I, 3)
    assert candidate_rows(run) == candidate_rows(whole)
    return run, images, captions


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["open_clip", "hf_dual"])
def test_each_dual_encoder_ranks_a_dataset_and_resumes_after_an_interrupted_chunk(kind, open_clip_file, siglip_dir):
    checkpoint = str(open_clip_file if kind == "open_clip" else siglip_dir)
    run, images, captions = rank_resumed_and_whole(kind, checkpoint)
    encoder = load_annotator(kind=kind, checkpoint_path=checkpoint, device="cpu")
    scores = encoder.encode_texts(TEXTS) @ encoder.encode_images([Image.new("RGB", (40, 30), c) for c in COLOURS]).t()
    for row, caption in enumerate(captions):  # the stored ranking is the model's own, best first
        stored = list(models.Candidate.objects.filter(run=run, direction="t2i", query_id=caption.pk).order_by("rank"))
        order = torch.argsort(scores[row], descending=True)[:3].tolist()
        assert [c.target_id for c in stored] == [images[i].pk for i in order]
    assert models.Candidate.objects.filter(run=run, direction="i2t").count() == len(images) * 3
    run.annotator.refresh_from_db()
    assert run.annotator.weights_hash == encoder.weights_hash()


@pytest.mark.django_db
def test_missing_or_wrong_checkpoints_are_refused_with_what_is_expected(tmp_path, open_clip_file, siglip_dir):
    cases = [
        ("open_clip", str(tmp_path / "nope.bin"), {}, "No OpenCLIP checkpoint file at"),
        ("open_clip", str(open_clip_file.parent), {}, "needs the checkpoint file itself"),
        ("open_clip", str(open_clip_file.parent / "vocab.json"), {}, "is not an OpenCLIP checkpoint: expected a"),
        ("open_clip", "", {"model": "ViT-B-32"}, "needs an OpenCLIP checkpoint file"),
        ("hf_dual", str(tmp_path / "nowhere"), {}, "No Hugging Face dual-encoder checkpoint directory at"),
        ("hf_dual", str(tmp_path), {}, "No Hugging Face dual-encoder checkpoint (config.json) in"),
        ("clip", str(siglip_dir), {}, "holds a siglip model; a clip annotator expects a CLIPModel"),
    ]
    for kind, path, config, message in cases:
        with pytest.raises(ApplicationError) as error:
            annotator_register(name="x", kind=kind, checkpoint_path=path, config=config)
        assert message in error.value.message and error.value.status == 400, (kind, path)
    # A file without open_clip_config.json beside it needs a model name OpenCLIP knows.
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "model.pt").write_bytes(open_clip_file.read_bytes())
    for name in ("vocab.json", "merges.txt"):
        (lone / name).write_bytes((open_clip_file.parent / name).read_bytes())
    with pytest.raises(
        ApplicationError, match="Unknown OpenCLIP model 'ViT-Q-99': give one of ViT-B-16, ViT-B-16-quickgelu"
    ):
        annotator_register(
            name="x", kind="open_clip", checkpoint_path=str(lone / "model.pt"), config={"model": "ViT-Q-99"}
        )
    (lone / "vocab.json").unlink()
    with pytest.raises(ApplicationError, match="No tokenizer beside model.pt"):
        annotator_register(
            name="x", kind="open_clip", checkpoint_path=str(lone / "model.pt"), config={"model": "ViT-B-32"}
        )


@pytest.mark.django_db
def test_a_checkpoint_of_the_wrong_model_fails_the_run_with_what_it_is(tmp_path, siglip_dir):
    dataset, _images, _captions = small_dataset()
    bert = annotator_register(name="bert", kind="hf_dual", checkpoint_path=str(tiny_bert_dir(tmp_path / "bert")))
    run = factories.RankingRunFactory(dataset=dataset, annotator=bert, status=models.RunStatus.QUEUED)
    assert ranking_run_execute(run.pk) == models.RunStatus.FAILED
    run.refresh_from_db()
    assert "BertModel in" in run.error and "is not a dual encoder" in run.error
    # Hugging Face weights under an OpenCLIP name: the names OpenCLIP's CLIP module has are missing.
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "open_clip_model.safetensors").write_bytes((siglip_dir / "model.safetensors").read_bytes())
    for name in ("vocab.json", "merges.txt"):
        (wrong / name).write_text("{}" if name == "vocab.json" else "#version: 0.2\n")
    annotator = annotator_register(
        name="wrong",
        kind="open_clip",
        checkpoint_path=str(wrong / "open_clip_model.safetensors"),
        config={"model": "ViT-B-32"},
    )
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, status=models.RunStatus.QUEUED)
    assert ranking_run_execute(run.pk) == models.RunStatus.FAILED
    run.refresh_from_db()
    assert "Not an OpenCLIP ViT checkpoint: it lacks token_embedding.weight" in run.error


@pytest.mark.django_db
def test_the_api_and_the_command_refuse_a_missing_checkpoint(tmp_path):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    user = factories.user_with_role(models.Role.REQUESTER)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    body = {
        "name": "oc",
        "kind": "open_clip",
        "checkpoint_path": str(tmp_path / "x.bin"),
        "config": {"model": "ViT-B-32"},
    }
    response = client.post("/api/v1/annotators/", body, format="json")
    assert response.status_code == 400 and "No OpenCLIP checkpoint file at" in response.json()["error"]
    small_dataset()
    dataset = models.Dataset.objects.get()
    arguments = [
        "--dataset",
        dataset.name,
        "--annotator",
        "sig",
        "--kind",
        "hf_dual",
        "--checkpoint",
        str(tmp_path / "s"),
    ]
    with pytest.raises(CommandError, match="No Hugging Face dual-encoder checkpoint directory at"):
        call_command("rank", *arguments)


@pytest.mark.django_db(transaction=True)  # commits for real, so the eager task runs inside the command
def test_the_rank_command_ranks_with_an_open_clip_file(open_clip_file, capsys):
    dataset, _images, _captions = small_dataset()
    call_command(
        "rank", "--dataset", dataset.name, "--annotator", "oc", "--kind", "open_clip",
        "--checkpoint", str(open_clip_file), "--model", "tiny", "--top-k", "2",
    )  # fmt: skip
    run = models.RankingRun.objects.get(dataset=dataset)
    assert run.status == models.RunStatus.SUCCEEDED and run.annotator.config == {"model": "tiny"}
    assert f"Run {run.pk} (oc on {dataset.name}) succeeded" in capsys.readouterr().out


def test_the_loaders_spell_the_kinds_as_the_model_does():
    """annotator/ranking/services/checkpoints.py spells the kinds itself so a worker's loaders need no Django."""
    from annotator.crowd.scales import FOUR_CHOICE_QUESTION
    from annotator.models import AnnotatorKind
    from annotator.ranking.services import checkpoints
    from workers.ranking import judge

    spelled = (
        checkpoints.CLIP,
        checkpoints.OPEN_CLIP,
        checkpoints.HF_DUAL,
        checkpoints.CROSS_ENCODER,
        checkpoints.VLM_JUDGE,
    )
    kinds = (AnnotatorKind.CLIP, AnnotatorKind.OPEN_CLIP, AnnotatorKind.HF_DUAL, AnnotatorKind.CROSS_ENCODER)
    assert spelled == (*kinds, AnnotatorKind.VLM_JUDGE)
    assert judge.QUESTION == FOUR_CHOICE_QUESTION  # the judge is asked what the crowd is asked


@pytest.mark.django_db
def test_the_page_and_the_api_register_and_rank_with_open_clip_and_siglip(
    client, open_clip_file, siglip_dir, django_capture_on_commit_callbacks
):
    from django.urls import reverse
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    user = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(user)
    dataset, _images, _captions = small_dataset()
    dataset.owner = user
    dataset.save(update_fields=["owner"])
    page = client.get(reverse("dataset-ranking", args=[dataset.pk]))
    assert b'<option value="open_clip">' in page.content and b'<option value="hf_dual">' in page.content
    form = {"name": "oc-page", "kind": "open_clip", "checkpoint_path": str(open_clip_file), "model": "tiny"}
    assert client.post(reverse("annotator-register"), form).status_code == 302
    registered = models.MachineAnnotator.objects.get(name="oc-page")
    assert registered.kind == "open_clip" and registered.config == {"model": "tiny"}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("ranking-start", args=[dataset.pk]), {"annotator": registered.pk, "top_k": "2"})
    assert models.RankingRun.objects.get(annotator=registered).status == models.RunStatus.SUCCEEDED

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    body = {"name": "siglip-api", "kind": "hf_dual", "checkpoint_path": str(siglip_dir)}
    created = api.post("/api/v1/annotators/", body, format="json")
    assert created.status_code == 201
    with django_capture_on_commit_callbacks(execute=True):
        started = api.post(
            "/api/v1/runs/", {"dataset": dataset.pk, "annotator": created.json()["id"], "top_k": 2}, format="json"
        )
    assert started.status_code == 202
    run = models.RankingRun.objects.get(pk=started.json()["id"])
    assert run.annotator.kind == "hf_dual" and run.status == models.RunStatus.SUCCEEDED, run.error
