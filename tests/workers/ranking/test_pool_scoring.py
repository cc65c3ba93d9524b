"""Pool scoring on the worker: image-image and caption-image similarity of pool images through a CLIP
checkpoint (the tiny random one, loaded like a real one), checked against a brute-force computation."""

import pytest
import torch

from annotator.finegrained.services.pools.enlargement import enlargement_request
from annotator.finegrained.services.pools.imports import pool_import
from annotator.models import Caption, EnlargementStatus, GalleryEnlargement, PoolImage
from annotator.ranking.services.annotators import annotator_register
from tests import factories
from tests.annotator.finegrained.pool_support import PoolWorld
from tests.workers.ranking.test_annotators import tiny_clip  # noqa: F401 (the fixture)
from workers.ranking.annotators import load_annotator
from workers.ranking.pipeline import load_pil
from workers.ranking.pool import enlargement_execute

pytestmark = pytest.mark.django_db


def test_clip_scores_pool_images_from_both_sides_as_a_brute_force_does(tmp_path, tiny_clip):  # noqa: F811
    world = PoolWorld(tmp_path, images=8, pool_size=12, owner=factories.UserFactory())
    pool = pool_import(dataset=world.dataset, name="aux", images_path=world.pool_dir)
    annotator_register(name="tiny-clip", kind="clip", checkpoint_path=str(tiny_clip))
    enlargement = enlargement_request(
        pool=pool, image_annotator="tiny-clip", caption_annotator="tiny-clip", k_image=4, k_caption=4, keep=3
    )  # inside the test's transaction the task is not sent: run it as the gpu worker would
    assert enlargement_execute(enlargement.pk) == EnlargementStatus.PROPOSED
    enlargement = GalleryEnlargement.objects.get(pk=enlargement.pk)
    assert set(enlargement.proposal["counts"]["via"]) & {"t2i", "both"}

    clip = load_annotator(kind="clip", checkpoint_path=str(tiny_clip), device="cpu")
    pool_rows = list(PoolImage.objects.filter(pool=pool).order_by("pk").values_list("pk", "file"))
    pool_vectors = clip.encode_images([load_pil(name) for _pk, name in pool_rows])
    column = {pk: n for n, (pk, _file) in enumerate(pool_rows)}
    checked = 0
    for target, items in enlargement.proposal["targets"].items():
        texts = list(Caption.objects.filter(image_id=int(target)).values_list("text", flat=True))
        best = (clip.encode_texts(texts) @ pool_vectors.T).max(dim=0).values
        for pool_id, _score, via, _image_score, caption_score in items:
            if via in ("t2i", "both"):
                assert caption_score == pytest.approx(float(best[column[pool_id]]), abs=1e-4)
                checked += 1
    assert checked > 0
    assert torch.allclose(pool_vectors.norm(dim=1), torch.ones(len(pool_rows)), atol=1e-4)
