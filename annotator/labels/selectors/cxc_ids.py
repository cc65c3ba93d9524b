"""How Crisscrossed Captions spells a dataset's ids.

CxC writes MS-COCO images by their file name (`COCO_val2014_000000365325.jpg`) and captions by the split and
Karpathy sentence id (`COCO_val2014:sentid:732091`). A dataset carries COCO ids when an image's file name is
COCO's spelling of its own source id; its captions then take the split of their image. Any other dataset's
ids are written as they are (its source ids), so a CxC file always names what the dataset names.
"""

from __future__ import annotations

import re

from annotator.datasets.models.dataset import Caption, Image

COCO_FILE = re.compile(r"^(?P<split>COCO_[a-z]+\d{4})_(?P<number>\d{12})\.jpg$")


def coco_split(*, file_name: str, source_id: str) -> str | None:
    """`COCO_val2014` when `file_name` is COCO's name for image `source_id`, else None."""
    found = COCO_FILE.match(file_name.rsplit("/", 1)[-1])
    if not found or not source_id.isdigit() or int(found["number"]) != int(source_id):
        return None
    return found["split"]


def cxc_ids(*, dataset_id: int) -> dict[str, dict[int, str]]:
    """{"image": {pk: CxC id}, "caption": {pk: CxC id}} for a dataset (source ids where it has no COCO ids)."""
    images, splits = {}, {}
    for pk, source_id, file_name in Image.objects.filter(dataset_id=dataset_id).values_list(
        "pk", "source_id", "file_name"
    ):
        split = coco_split(file_name=file_name, source_id=source_id)
        splits[pk] = split
        images[pk] = file_name.rsplit("/", 1)[-1] if split else source_id
    captions = {}
    for pk, source_id, image_id in Caption.objects.filter(dataset_id=dataset_id).values_list(
        "pk", "source_id", "image_id"
    ):
        split = splits.get(image_id)
        captions[pk] = f"{split}:sentid:{source_id}" if split else source_id
    return {"image": images, "caption": captions}
