"""The released Crisscrossed Captions test files (fixtures/cxc, gzip-compressed, unchanged) and the COCO 5k
test split they are about, with real ids and placeholder files."""

import csv
import gzip
from pathlib import Path

from annotator.core.bulk import rows_insert
from annotator.models import Caption, Dataset, DatasetStatus, Image

RELEASED = Path(__file__).resolve().parents[3] / "fixtures" / "cxc"  # the released files, gzip-compressed
FILES = {"cxc_sits": "sits_test.csv", "cxc_sts": "sts_test.csv", "cxc_sis": "sis_test.csv"}


def released_bytes(fmt: str) -> bytes:
    """The released file of `fmt` (cxc_sits, cxc_sts, cxc_sis), uncompressed."""
    return gzip.decompress((RELEASED / f"{FILES[fmt]}.gz").read_bytes())


def _number(coco_id: str) -> int:
    return int(coco_id.rsplit("_", 1)[-1].removesuffix(".jpg"))


def coco_test_split() -> Dataset:
    """The COCO 5k test split as CxC knows it: every image and caption its files name, the captions paired
    with their images by SITS' original pairs (source ids: COCO image ids and Karpathy sentence ids)."""
    with gzip.open(RELEASED / "sits_test.csv.gz", "rt", newline="") as handle:
        originals = [row for row in csv.DictReader(handle) if row["sampling_method"] == "c2i_original"]
    dataset = Dataset.objects.create(name="coco-5k-test", status=DatasetStatus.READY)
    images = sorted({row["image"] for row in originals})
    pks = rows_insert(
        Image,
        [
            {
                "dataset_id": dataset.pk,
                "source_id": str(_number(name)),
                "file_name": name,
                "file": f"images/{name}",
                "content_hash": "",
                "width": 640,
                "height": 480,
            }
            for name in images
        ],
    )
    image_pk = dict(zip(images, pks, strict=True))
    rows_insert(
        Caption,
        [
            {
                "dataset_id": dataset.pk,
                "image_id": image_pk[row["image"]],
                "source_id": row["caption"].rsplit(":", 1)[-1],
                "text": f"caption {row['caption']}",
            }
            for row in originals
        ],
        ids=False,
    )
    return dataset
