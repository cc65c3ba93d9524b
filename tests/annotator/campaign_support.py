"""Test data for the campaign area: a dataset of images x captions and ranking runs with synthetic candidates.

Images are bulk-created with file names only (no bytes on disk): the campaign code needs ids and URLs,
not pixels. Candidates are random but seeded, like the output of a ranking run, with top_k per query.
"""

import numpy as np

from annotator.models import Candidate, Caption, Image
from tests.factories import DatasetFactory, MachineAnnotatorFactory, RankingRunFactory


def make_dataset(*, images: int = 12, captions_per_image: int = 5, name: str | None = None):
    dataset = DatasetFactory(**({"name": name} if name else {}))
    image_objects = Image.objects.bulk_create(
        [
            Image(
                dataset=dataset,
                source_id=str(100000 + i),
                file_name=f"{100000 + i}.jpg",
                file=f"images/{dataset.pk}/{100000 + i}.jpg",
                thumbnail=f"thumbnails/{dataset.pk}/{100000 + i}.jpg",
                content_hash=f"{dataset.pk:08x}{i:056x}",
                width=640,
                height=480,
            )
            for i in range(images)
        ]
    )
    Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                image=image,
                source_id=str(500000 + i * captions_per_image + j),
                text=f"Photo {i}, description {j}: a scene with <b>things</b> & people.",
            )
            for i, image in enumerate(image_objects)
            for j in range(captions_per_image)
        ]
    )
    return dataset


def add_run(*, dataset, name: str, seed: int, top_k: int = 25, directions=("i2t", "t2i"), query_limit=None):
    """A succeeded run whose candidates are a seeded random top_k per query (own pairs likely near the top)."""
    run = RankingRunFactory(dataset=dataset, annotator=MachineAnnotatorFactory(name=name), top_k=top_k)
    rng = np.random.default_rng(seed)
    images = np.array(sorted(dataset.images.values_list("pk", flat=True)))
    caption_rows = list(dataset.captions.order_by("pk").values_list("pk", "image_id"))
    captions = np.array([c for c, _ in caption_rows])
    image_of = dict(caption_rows)
    captions_of = {}
    for caption, image in caption_rows:
        captions_of.setdefault(image, []).append(caption)
    rows = []
    for direction in directions:
        queries, targets = {
            "i2t": (images, captions),
            "t2i": (captions, images),
            "t2t": (captions, captions),
            "i2i": (images, images),
        }[direction]
        if query_limit is not None:
            queries = queries[:query_limit]
        for query in queries.tolist():
            pool = targets[targets != query] if direction in ("t2t", "i2i") else targets
            k = min(top_k, len(pool))
            # Bias: the query's own partner(s) first, like a decent retrieval model.
            if direction == "i2t":
                own = captions_of.get(query, [])[:2]
            elif direction == "t2i":
                own = [image_of[query]]
            else:
                own = []
            rest = [
                int(t) for t in rng.choice(pool, size=min(len(pool), k + len(own)), replace=False) if int(t) not in own
            ]
            chosen = (own + rest)[:k]
            rows.extend(
                Candidate(run=run, direction=direction, query_id=query, target_id=t, rank=r + 1, score=1.0 - r / 100)
                for r, t in enumerate(chosen)
            )
    Candidate.objects.bulk_create(rows, batch_size=5000)
    return run


def campaign_snapshot(campaign) -> list:
    """The built campaign as plain data: per HIT (index, stage, redundancy, [(position, role, members...)])."""
    from annotator.models import HitItem

    rows = (
        HitItem.objects.filter(hit__campaign=campaign)
        .order_by("hit__index", "position")
        .values_list(
            "hit__index",
            "hit__stage",
            "hit__assignments_required",
            "position",
            "role",
            "pair__kind",
            "pair__image_id",
            "pair__caption_id",
            "pair__other_image_id",
            "pair__other_caption_id",
        )
    )
    hits: dict = {}
    for index, stage, required, *item in rows:
        hits.setdefault((index, stage, required), []).append(tuple(item))
    return [(*head, items) for head, items in hits.items()]
