"""Real label data for the label-set tests: the graphs shipped in the PyPI package eccv-caption==0.1.0 (ECCV
Caption, CxC and the original COCO pairs of the COCO 5K test split, as ids) and the released CxC SITS test
ratings (fixtures/cxc/sits_test.csv.gz, the released file unchanged).

The package ships ids, not pictures: the dataset built here has the real COCO image and caption ids with
placeholder files and texts, which is all label sets, evaluation and the analyses look at.
"""

from __future__ import annotations

import importlib.resources
import json
import random
from pathlib import Path

from annotator.models import Caption, Dataset, DatasetStatus, Image

PACKAGE_DATA = importlib.resources.files("eccv_caption") / "data"
SITS_GZ = Path(__file__).resolve().parents[1] / "fixtures" / "cxc" / "sits_test.csv.gz"


def package_file(name: str) -> bytes:
    return (PACKAGE_DATA / name).read_bytes()


def package_graph(name: str) -> dict[str, dict[str, list[str]]]:
    """{"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}} of "eccv", "cxc" or "original"."""
    return {
        direction: {
            str(key): [str(v) for v in values]
            for key, values in json.loads(package_file(f"{name}_{file_part}.json")).items()
        }
        for direction, file_part in (("i2t", "image_to_caption"), ("t2i", "caption_to_image"))
    }


def sits_csv_gz() -> bytes:
    """The released CxC SITS test file, gzip-compressed as the repository keeps it."""
    return SITS_GZ.read_bytes()


def make_coco_test_dataset(*, name: str = "coco-5k-test") -> Dataset:
    """The COCO 5K test split with its real ids: 5,000 images, their 25,000 captions (the package's
    original pairs), and the 2 caption ids ECCV Caption lists that are not among those five per image
    (144675 and 467259; COCO val2014 has more than five captions for some images). Each of those two is
    attached to the image whose ECCV list names it, so the released files import without unknown ids."""
    original = package_graph("original")
    eccv = package_graph("eccv")
    dataset = Dataset.objects.create(name=name, status=DatasetStatus.READY)
    image_ids = sorted(original["i2t"], key=int)
    Image.objects.bulk_create(
        [
            Image(
                dataset=dataset,
                source_id=image_id,
                file_name=f"COCO_val2014_{int(image_id):012d}.jpg",
                file=f"images/placeholder/{image_id}.jpg",
                content_hash=f"{int(image_id):064x}",
                width=640,
                height=480,
            )
            for image_id in image_ids
        ],
        batch_size=5000,
    )
    image_pk = dict(Image.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    image_of = {caption_id: images[0] for caption_id, images in original["t2i"].items()}
    for image_id, captions in eccv["i2t"].items():
        for caption_id in captions:
            image_of.setdefault(caption_id, image_id)
    Caption.objects.bulk_create(
        [
            Caption(dataset=dataset, image_id=image_pk[image_id], source_id=caption_id, text=f"Caption {caption_id}.")
            for caption_id, image_id in sorted(image_of.items(), key=lambda item: int(item[0]))
        ],
        batch_size=5000,
    )
    return dataset


EXTRA_ECCV_CAPTIONS = {"144675": "575916", "467259": "421999"}


def random_rankings(*, graphs: list[dict], dataset_ids: dict[str, list[str]], seed: int, extra: int = 30) -> dict:
    """A model's rankings for every query of `graphs`: each query's positives of all the graphs mixed with
    `extra` random other targets, shuffled (a retrieval model of middling quality), so every query's ranking
    is longer than any graph's positives (eccv_caption's reference code needs that)."""
    rng = random.Random(seed)
    rankings: dict[str, dict[str, list[str]]] = {"i2t": {}, "t2i": {}}
    for direction, targets_all in (("i2t", dataset_ids["caption"]), ("t2i", dataset_ids["image"])):
        queries = set().union(*(graph[direction] for graph in graphs))
        for query in sorted(queries):
            pool = list(dict.fromkeys(t for graph in graphs for t in graph[direction].get(query, [])))
            keep = [t for t in pool if rng.random() < 0.7]
            fill = []
            while len(fill) < extra:
                candidate = rng.choice(targets_all)
                if candidate not in pool and candidate not in fill:
                    fill.append(candidate)
            ranked = keep + fill
            rng.shuffle(ranked)
            # Some positives near the top, as a trained model would have them.
            ranked.sort(key=lambda t: (t not in pool) and rng.random() < 0.6)
            missing = [t for t in pool if t not in keep]
            rankings[direction][query] = ranked + missing
    return rankings
