"""A synthetic world for the pool tests: fine captions with planted coarse ones, imported like a requester
would, and an outside pool whose truth is known (variants of target scenes, random scenes, duplicates)."""

from __future__ import annotations

import json
from pathlib import Path

from annotator.datasets.services.imports import dataset_import
from annotator.models import Caption, Image
from annotator.scenarios.synthetic import generate, make_synthetic_dataset
from annotator.scenarios.synthetic_pool import make_synthetic_pool

SIZE = (128, 96)


class PoolWorld:
    def __init__(self, root: Path, *, images: int = 40, pool_size: int = 60, seed: int = 5, owner=None):
        options = {"images": images, "seed": seed, "coarse_share": 0.15, "fine": True}
        make_synthetic_dataset(out_dir=root / "dataset", size=SIZE, **options)
        self.scenes, self.captions = generate(**options)
        self.dataset = dataset_import(
            name=f"pool-world-{seed}",
            captions_path=root / "dataset" / "captions.json",
            images_path=root / "dataset" / "images",
            owner=owner,
        )
        self.truth = json.loads((root / "dataset" / "truth.json").read_text())
        self.pool_dir = root / "pool" / "images"
        self.pool_truth = make_synthetic_pool(
            out_dir=self.pool_dir,
            dataset_dir=root / "dataset",
            scenes=self.scenes,
            captions=self.captions,
            pool_size=pool_size,
            seed=seed,
            exact_duplicates=2,
            near_duplicates=2,
            size=SIZE,
        )
        self.image_pk = dict(Image.objects.filter(dataset=self.dataset).values_list("source_id", "pk"))
        self.caption_pk = dict(Caption.objects.filter(dataset=self.dataset).values_list("source_id", "pk"))
        self.caption_source = {pk: int(source) for source, pk in self.caption_pk.items()}
        self.image_source = {pk: source for source, pk in self.image_pk.items()}
        self.t2i = {int(c): set(ids) for c, ids in self.truth["t2i"].items()}

    def describes(self, caption_pk: int, image) -> bool:
        """The truth of a (caption, image) pair, for a test image or an added pool image."""
        caption = self.caption_source[caption_pk]
        if ":" in image.source_id:  # an added pool image: pool<id>:<file name>
            return caption in self.pool_truth["described_by"].get(image.source_id.split(":", 1)[1], [])
        return int(image.source_id) in self.t2i[caption]
