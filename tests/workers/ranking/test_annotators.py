"""Annotator plugins: the tiny CLIP loads through the real loading path and ranks; MiniLM and TF-IDF encoders."""

import pytest
import scipy.sparse
import torch
from django.core.files.base import ContentFile

from annotator import models
from annotator.ranking.services.annotators import annotator_register
from tests import factories
from workers.ranking.annotators import REGISTRY, load_annotator, resolve_device
from workers.ranking.pipeline import ranking_run_execute


@pytest.fixture
def tiny_clip(tiny_clip_checkpoint):
    return tiny_clip_checkpoint


def test_registry_knows_every_rankable_kind():
    assert {"clip", "minilm_pivot", "tfidf_pivot"} <= set(REGISTRY)
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")


def test_tiny_clip_loads_and_encodes_normalised_vectors(tiny_clip):
    from PIL import Image

    annotator = load_annotator(kind="clip", checkpoint_path=str(tiny_clip), device="cpu")
    assert load_annotator(kind="clip", checkpoint_path=str(tiny_clip), device="cpu") is annotator  # cached
    texts = annotator.encode_texts(["a red dog", "the blue bus on the green", "zebra unknown words"])
    images = annotator.encode_images([Image.new("RGB", (40, 30), (200, 0, 0)), Image.new("L", (20, 50), 90)])
    assert texts.shape == (3, 16) and images.shape == (2, 16)
    assert texts.dtype == images.dtype == torch.float32
    torch.testing.assert_close(texts.norm(dim=1), torch.ones(3))
    torch.testing.assert_close(images.norm(dim=1), torch.ones(2))
    assert len(annotator.weights_hash()) == 64


@pytest.mark.django_db
def test_tiny_clip_ranks_a_dataset_through_the_pipeline(tiny_clip):
    from PIL import Image

    from tests.factories import png_bytes

    dataset = factories.DatasetFactory()
    colors = [(220, 20, 20), (20, 20, 220), (20, 200, 20), (240, 240, 240)]
    images = [
        factories.ImageFactory(dataset=dataset, file=ContentFile(png_bytes(color, (40, 30)), name=f"c{i}.png"))
        for i, color in enumerate(colors)
    ]
    texts = ["a red dog", "a blue bus", "a green cat", "the dog and the cat", "a bus on the green"]
    captions = [
        factories.CaptionFactory(dataset=dataset, image=images[i % len(images)], text=text)
        for i, text in enumerate(texts)
    ]
    annotator = annotator_register(name="tiny-clip", kind="clip", checkpoint_path=str(tiny_clip))
    run = factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=3, status=models.RunStatus.QUEUED)
    assert ranking_run_execute(run.pk, options={"image_batch": 3, "text_batch": 2}) == models.RunStatus.SUCCEEDED
    run.refresh_from_db()
    annotator.refresh_from_db()
    clip = load_annotator(kind="clip", checkpoint_path=str(tiny_clip), device="cpu")
    assert annotator.weights_hash == clip.weights_hash()
    assert run.progress["images"] == 1 and run.device == "cpu"
    # The stored ranking is the model's own: scores from the same encoders, best first.
    text_vectors = clip.encode_texts(texts)
    image_vectors = clip.encode_images([Image.new("RGB", (40, 30), color) for color in colors])
    expected = text_vectors @ image_vectors.t()
    for c, caption in enumerate(captions):
        rows = list(models.Candidate.objects.filter(run=run, direction="t2i", query_id=caption.pk).order_by("rank"))
        assert len(rows) == 3
        order = torch.argsort(expected[c], descending=True)[:3].tolist()
        assert [row.target_id for row in rows] == [images[i].pk for i in order]
        assert rows[0].score == pytest.approx(float(expected[c, order[0]]), abs=1e-4)
    assert models.Candidate.objects.filter(run=run, direction="i2t").count() == 4 * 3


def test_minilm_pivot_encodes_384_d_and_images_as_the_mean_of_their_captions():
    annotator = load_annotator(kind="minilm_pivot", device="cpu")
    texts = ["A dog on the beach.", "A puppy running in the sand.", "A bus in the city."]
    vectors = annotator.encode_texts(texts)
    assert vectors.shape == (3, 384)
    torch.testing.assert_close(vectors.norm(dim=1), torch.ones(3))
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    image = annotator.encode_images([texts[:2], texts[2:]])
    expected = torch.nn.functional.normalize(vectors[:2].sum(0), dim=0)
    torch.testing.assert_close(image[0], expected, rtol=1e-4, atol=1e-5)
    assert annotator.pivot and not annotator.sparse


def test_tfidf_pivot_is_fitted_on_the_corpus_and_returns_normalised_sparse_rows():
    base = load_annotator(kind="tfidf_pivot")
    corpus = ["a red bus in the street", "a red car", "the dog sleeps", "the the the"]
    fitted = base.for_corpus(corpus)
    assert base.vectorizer is None  # the cached plugin itself stays unfitted, shared by every dataset
    rows = fitted.encode_texts(corpus)
    assert scipy.sparse.issparse(rows) and rows.shape[0] == 4
    norms = scipy.sparse.linalg.norm(rows, axis=1)
    assert norms[:3] == pytest.approx([1, 1, 1], abs=1e-5)
    assert norms[3] == 0  # only stop words: an empty row, scored as no evidence
    assert fitted.weights_hash() == base.weights_hash()
