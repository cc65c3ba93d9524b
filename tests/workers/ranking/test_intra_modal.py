"""Caption-caption and image-image rankings: the pivots compare captions directly and images through their
captions, the visual annotator ranks images from their pixels alone; nothing is ever its own candidate."""

import numpy as np
import pytest
from django.core.files.base import ContentFile
from PIL import Image as PILImage
from PIL import ImageDraw

from annotator import models
from annotator.ranking.services.annotators import annotator_register
from tests import factories
from tests.ranking_support import ranking_dataset
from workers.ranking.annotators import load_annotator
from workers.ranking.pipeline import ranking_run_execute

pytestmark = pytest.mark.django_db


def new_run(dataset, kind, top_k=5):
    annotator = annotator_register(name=kind, kind=kind)
    return factories.RankingRunFactory(
        dataset=dataset, annotator=annotator, top_k=top_k, status=models.RunStatus.QUEUED
    )


def top1(run, direction):
    return dict(
        models.Candidate.objects.filter(run=run, direction=direction, rank=1).values_list("query_id", "target_id")
    )


@pytest.mark.parametrize("kind", ["tfidf_pivot", "minilm_pivot"])
def test_pivots_rank_captions_against_captions_and_images_against_images(kind):
    dataset, images, captions = ranking_dataset()
    run = new_run(dataset, kind, top_k=4)
    assert ranking_run_execute(run.pk, options={"rows_per_chunk": 3}) == models.RunStatus.SUCCEEDED
    t2t = models.Candidate.objects.filter(run=run, direction="t2t")
    i2i = models.Candidate.objects.filter(run=run, direction="i2i")
    caption_pks, image_pks = {c.pk for c in captions}, {i.pk for i in images}
    assert t2t.exists() and i2i.exists()
    assert set(t2t.values_list("query_id", flat=True)) | set(t2t.values_list("target_id", flat=True)) <= caption_pks
    assert set(i2i.values_list("query_id", flat=True)) | set(i2i.values_list("target_id", flat=True)) <= image_pks
    for rows in (t2t, i2i):  # diagonal zero: never itself
        assert not any(q == t for q, t in rows.values_list("query_id", "target_id"))
    # A caption with co-captions finds one of them first: they describe the same scene.
    own = {c.pk: c.image_id for c in captions}
    best = top1(run, "t2t")
    with_co = [c for c in captions if sum(1 for o in captions if o.image_id == c.image_id) > 1]
    assert sum(1 for c in with_co if own.get(best.get(c.pk)) == c.image_id) / len(with_co) > 0.7


def _scene(colour, shape, where):
    picture = PILImage.new("RGB", (96, 96), (200, 200, 200))
    draw = ImageDraw.Draw(picture)
    x = {"left": 10, "right": 56}[where]
    box = (x, 30, x + 30, 60)
    (draw.ellipse if shape == "ball" else draw.rectangle)(box, fill=colour)
    return picture


def _image(dataset, number, picture):
    import io

    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    image = factories.ImageFactory(dataset=dataset, source_id=f"v{number}")
    image.file.save(f"visual-{dataset.pk}-{number}.png", ContentFile(buffer.getvalue()), save=True)
    return image


def test_the_visual_annotator_ranks_images_by_their_pixels_without_any_caption():
    dataset = factories.DatasetFactory()
    scenes = [
        ((220, 40, 40), "ball", "left"),
        ((230, 50, 30), "ball", "left"),
        ((40, 80, 220), "box", "right"),
        ((30, 90, 230), "box", "right"),
        ((30, 150, 50), "ball", "right"),
        ((40, 160, 60), "ball", "right"),
    ]
    images = [_image(dataset, n, _scene(*scene)) for n, scene in enumerate(scenes)]
    assert not models.Caption.objects.filter(dataset=dataset).exists()
    run = new_run(dataset, "visual", top_k=3)
    assert ranking_run_execute(run.pk) == models.RunStatus.SUCCEEDED
    assert set(models.Candidate.objects.filter(run=run).values_list("direction", flat=True)) == {"i2i"}
    best = top1(run, "i2i")
    twins = {images[a].pk: images[a ^ 1].pk for a in range(len(images))}
    assert best == twins
    scores = np.array(models.Candidate.objects.filter(run=run).values_list("score", flat=True))
    assert np.all(scores <= 1.0001)


def test_the_visual_annotator_reads_no_text():
    annotator = load_annotator(kind="visual")
    assert annotator.directions == ("i2i",) and not annotator.reads_texts
    with pytest.raises(ValueError, match="no text"):
        annotator.encode_texts(["a red ball"])


def test_on_the_synthetic_scenes_the_visual_annotator_finds_related_images_far_above_chance(tmp_path):
    """Two scenes are related when one caption describes both; the visual annotator sees only pixels."""
    import json
    import random

    from annotator.analysis.hit_rate import hit_rates, intra_modal_truth
    from annotator.datasets.services.imports import dataset_import
    from annotator.ranking.selectors.ranking import top_lists
    from annotator.scenarios.synthetic import make_synthetic_dataset

    make_synthetic_dataset(out_dir=tmp_path, images=400, seed=4)
    dataset = dataset_import(
        name="visual-scenes", captions_path=tmp_path / "captions.json", images_path=tmp_path / "images"
    )
    truth = json.loads((tmp_path / "truth.json").read_text())
    image_pk = dict(models.Image.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    caption_pk = dict(models.Caption.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    related = intra_modal_truth(
        t2i={caption_pk[c]: {image_pk[str(i)] for i in ids} for c, ids in truth["t2i"].items()},
        i2t={image_pk[i]: {caption_pk[str(c)] for c in ids} for i, ids in truth["i2t"].items()},
    )["i2i"]
    run = new_run(dataset, "visual", top_k=10)
    assert ranking_run_execute(run.pk) == models.RunStatus.SUCCEEDED
    visual = hit_rates(ranked=top_lists(run=run, direction="i2i"), truth=related, ks=(1, 5))
    rng = random.Random(0)
    images = list(image_pk.values())
    chance = hit_rates(
        ranked={q: [t for t in rng.sample(images, 6) if t != q][:5] for q in related}, truth=related, ks=(1, 5)
    )
    assert visual["top1"] > 3 * chance["top1"] and visual["top5"] > 2 * chance["top5"]
