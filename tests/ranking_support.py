"""Small datasets for the ranking tests: images with captions on distinct themes."""

from annotator import models
from tests import factories

THEMES = [
    [
        "A brown dog runs along the sandy beach.",
        "A dog playing with a ball near the sea waves.",
        "Puppy running on a beach.",
    ],
    ["A red double decker bus drives down a city street.", "A big bus parked at the bus stop in town."],
    [
        "A plate of pasta with tomato sauce and basil.",
        "Spaghetti served on a white plate.",
        "A bowl of noodles with sauce.",
    ],
    ["A man riding a skateboard doing a trick on a ramp.", "A skateboarder jumps over the ramp in the skate park."],
    ["Two cats sleeping on a sofa.", "A grey cat curled up on the couch."],
    ["A train arriving at the railway station platform.", "A passenger train on the tracks near a station."],
    ["A bowl of fresh fruit with apples and bananas.", "Bananas and apples on the kitchen table."],
    ["A surfer riding a large wave in the ocean."],  # one caption: it can never be its own pivot
]


def ranking_dataset(themes=THEMES, *, name=None):
    """A READY dataset with one image per theme and the theme's captions; returns (dataset, images, captions)."""
    dataset = factories.DatasetFactory(**({"name": name} if name else {}))
    images, captions = [], []
    for index, texts in enumerate(themes):
        image = factories.ImageFactory(dataset=dataset, source_id=f"img{index}")
        images.append(image)
        for number, text in enumerate(texts):
            captions.append(
                factories.CaptionFactory(dataset=dataset, image=image, source_id=f"cap{index}-{number}", text=text)
            )
    return dataset, images, captions


def candidate_rows(run) -> list[tuple]:
    """Every candidate of `run` as comparable tuples (direction, query, target, rank, rounded score)."""
    return sorted(
        (c.direction, c.query_id, c.target_id, c.rank, round(c.score, 5))
        for c in models.Candidate.objects.filter(run=run)
    )


def chunks_ranked(run, direction) -> int:
    """Top-K chunks of `direction` committed over all of the run's shards."""
    from django.db.models import Sum

    return models.RankingShard.objects.filter(run=run, direction=direction).aggregate(n=Sum("chunks_done"))["n"] or 0


WORDS = "dog cat bus red small big two on near beach street snow grass ball kite car tree house boat sky".split()


def synthetic_dataset(n_images: int = 30, *, seed: int = 0, name=None):
    """A READY dataset of short random captions over a small vocabulary (many exact score ties), 1 to 4
    captions per image; returns (dataset, images, captions)."""
    import random

    rng = random.Random(seed)
    themes = [
        [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(rng.randint(1, 4))]
        for _ in range(n_images)
    ]
    return ranking_dataset(themes, name=name)
