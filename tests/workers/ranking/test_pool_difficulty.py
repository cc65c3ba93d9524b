"""MSCOCO-FG Fig. 8 (`manage.py fg_random_vs_similar`): R@k over the gallery enlarged with the proposed similar
images and over one enlarged with as many random pool images, checked against a brute-force ranking of the
same encodings (the tiny random CLIP checkpoint, loaded as a real one), reproducible for a seed."""

import json
from io import StringIO

import pytest
import torch
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.finegrained.services.pools.enlargement import enlargement_request
from annotator.finegrained.services.pools.imports import pool_import
from annotator.models import Caption, GalleryEnlargement, Image, PoolImage
from annotator.ranking.services.annotators import annotator_register
from tests import factories
from tests.annotator.finegrained.pool_support import PoolWorld
from workers.ranking.annotators import load_annotator
from workers.ranking.pipeline import load_pil
from workers.ranking.pool import enlargement_execute
from workers.ranking.pool_difficulty import _recall

pytestmark = pytest.mark.django_db


def _fig8(*args) -> dict:
    out = StringIO()
    call_command("fg_random_vs_similar", *args, stdout=out)
    return json.loads(out.getvalue())


def test_recall_counts_a_tie_with_the_match_against_the_query():
    texts = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    gallery = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    # Query 0's match (column 1) ties column 0: rank 2. Query 1's match (column 2) is first.
    assert _recall(texts, gallery, [{1}, {2}], (1, 2)) == {"r1": 0.5, "r2": 1.0}
    assert _recall(texts, gallery, [{0, 1}, {2}], (1,)) == {"r1": 1.0}  # two matches tied are not each other's miss


def test_fig_8_ranks_both_galleries_as_a_brute_force_does(tmp_path, tiny_clip_checkpoint):
    world = PoolWorld(tmp_path, images=8, pool_size=12, owner=factories.UserFactory())
    pool = pool_import(dataset=world.dataset, name="aux", images_path=world.pool_dir)
    annotator_register(name="tiny-clip", kind="clip", checkpoint_path=str(tiny_clip_checkpoint))
    enlargement = enlargement_request(
        pool=pool, image_annotator="tiny-clip", caption_annotator="tiny-clip", k_image=4, k_caption=4, keep=1
    )
    enlargement_execute(enlargement.pk)
    enlargement = GalleryEnlargement.objects.get(pk=enlargement.pk)

    result = _fig8("--enlargement", str(enlargement.pk), "--annotator", "tiny-clip", "--seed", "3")
    similar = sorted({item[0] for items in enlargement.proposal["targets"].values() for item in items})
    captions = list(Caption.objects.filter(dataset=world.dataset).order_by("pk").values_list("image_id", "text"))
    assert result["queries"] == len(captions) and result["gallery"] == {"original": 8, "added": len(similar)}
    for side in ("similar", "random"):
        assert 0 <= result[side]["r1"] <= result[side]["r5"] <= result[side]["r10"] <= 1
    assert _fig8("--enlargement", str(enlargement.pk), "--annotator", "tiny-clip", "--seed", "3") == result

    # Brute force for the similar side: every caption against the originals and the proposed pool images.
    clip = load_annotator(kind="clip", checkpoint_path=str(tiny_clip_checkpoint), device="cpu")
    originals = list(Image.objects.filter(dataset=world.dataset).order_by("pk").values_list("pk", "file"))
    files = [f for _pk, f in originals] + [PoolImage.objects.get(pk=pk).file.name for pk in similar]
    scores = clip.encode_texts([t for _i, t in captions]) @ clip.encode_images([load_pil(f) for f in files]).T
    column = {pk: n for n, (pk, _f) in enumerate(originals)}
    ranks = [int((scores[row] >= scores[row, column[image]]).sum()) - 1 for row, (image, _t) in enumerate(captions)]
    assert result["similar"]["r5"] == pytest.approx(sum(rank < 5 for rank in ranks) / len(ranks))


def test_fig_8_refuses_an_annotator_that_cannot_read_a_pool_image_and_an_unscored_enlargement(
    tmp_path, tiny_clip_checkpoint
):
    world = PoolWorld(tmp_path, images=6, pool_size=8, owner=factories.UserFactory())
    pool = pool_import(dataset=world.dataset, name="aux", images_path=world.pool_dir)
    annotator_register(name="tfidf_pivot", kind="tfidf_pivot")
    enlargement = GalleryEnlargement.objects.create(pool=pool, dataset=world.dataset)
    with pytest.raises(CommandError, match="cannot rank pool images from a caption"):
        _fig8("--enlargement", str(enlargement.pk), "--annotator", "tfidf_pivot")
    annotator_register(name="clip-x", kind="clip", checkpoint_path=str(tiny_clip_checkpoint))
    with pytest.raises(CommandError, match="no proposal yet"):
        _fig8("--enlargement", str(enlargement.pk), "--annotator", "clip-x")
    with pytest.raises(CommandError, match="No enlargement"):
        _fig8("--enlargement", "999999", "--annotator", "clip-x")
