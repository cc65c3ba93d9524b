"""A small synthetic world for the Crisscrossed Captions tests: scenes imported like a requester would, ranked
by a caption annotator (tfidf_pivot) and the visual one, with the true similarity of any two captions or
images taken from the scenes' exact truth."""

from __future__ import annotations

import json
from pathlib import Path

from annotator.datasets.services.imports import dataset_import
from annotator.models import Caption, Image, RankingRun, RunStatus
from annotator.ranking.services.annotators import annotator_register
from annotator.scenarios.synthetic import make_synthetic_dataset
from workers.ranking.pipeline import ranking_run_execute


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


class SyntheticWorld:
    def __init__(self, out_dir: Path, *, images: int = 40, seed: int = 3, owner=None):
        make_synthetic_dataset(out_dir=out_dir, images=images, seed=seed, size=(128, 96))
        self.dataset = dataset_import(
            name=f"cxc-synthetic-{images}-{seed}",
            captions_path=out_dir / "captions.json",
            images_path=out_dir / "images",
            owner=owner,
        )
        truth = json.loads((out_dir / "truth.json").read_text())
        image_pk = dict(Image.objects.filter(dataset=self.dataset).values_list("source_id", "pk"))
        caption_pk = dict(Caption.objects.filter(dataset=self.dataset).values_list("source_id", "pk"))
        self.images_of = {caption_pk[c]: {image_pk[str(i)] for i in ids} for c, ids in truth["t2i"].items()}
        self.captions_of = {image_pk[i]: {caption_pk[str(c)] for c in ids} for i, ids in truth["i2t"].items()}
        self.runs = {}
        for kind in ("tfidf_pivot", "visual"):
            annotator = annotator_register(name=kind, kind=kind)
            run = RankingRun.objects.create(
                dataset=self.dataset, annotator=annotator, top_k=25, status=RunStatus.QUEUED
            )
            assert ranking_run_execute(run.pk) == RunStatus.SUCCEEDED, RankingRun.objects.get(pk=run.pk).error
            run.refresh_from_db()
            self.runs[kind] = run

    def caption_similarity(self, a: int, b: int) -> float:
        """Two captions that describe a common scene are similar, the more so the more scenes they share."""
        first, second = self.images_of.get(a, set()), self.images_of.get(b, set())
        return 3.2 + 1.8 * jaccard(first, second) if first & second else 0.6

    def image_similarity(self, a: int, b: int) -> float:
        """Two images that one caption describes both share its facts."""
        first, second = self.captions_of.get(a, set()), self.captions_of.get(b, set())
        return 2.7 + 2.3 * jaccard(first, second) if first & second else 0.4

    def pair_similarity(self, pair) -> float:
        if pair.kind == "caption_caption":
            return self.caption_similarity(pair.caption_id, pair.other_caption_id)
        return self.image_similarity(pair.image_id, pair.other_image_id)
