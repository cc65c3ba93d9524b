"""Import the instance classes of a dataset's images from a COCO `instances_*.json` file.

The file is streamed twice with ijson (COCO puts "annotations" before "categories", and a val2014 file is
hundreds of MB): once for the categories, once for the (image_id, category_id) of every instance
annotation; boxes and segmentations are skipped. Images are matched by source id (the COCO image id);
annotations of images the dataset does not have are counted and left out (a 5K test split imports from
the whole val2014 file).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import ijson
from django.db import transaction

from annotator.core.errors import ApplicationError
from annotator.datasets.models.categories import Category, ImageCategory
from annotator.datasets.models.dataset import Dataset, Image


def _read_categories(path: Path) -> list[dict]:
    with path.open("rb") as handle:
        try:
            items = list(ijson.items(handle, "categories.item"))
        except ijson.JSONError as error:
            raise ApplicationError(f"{path.name} is not valid JSON: {error}") from None
    categories = []
    for item in items:
        if not isinstance(item, dict) or "id" not in item or not str(item.get("name", "")).strip():
            raise ApplicationError(f'{path.name}: every category needs an "id" and a "name" ({item!r:.80}).')
        categories.append(
            {
                "source_id": str(item["id"]),
                "name": str(item["name"]).strip()[:200],
                "supercategory": str(item.get("supercategory") or "")[:200],
            }
        )
    if not categories:
        raise ApplicationError(f'{path.name} has no "categories": is it a COCO instances file?')
    return categories


def _read_instances(path: Path) -> Counter:
    counts: Counter = Counter()
    with path.open("rb") as handle:
        try:
            for pair in _pairs(handle):
                counts[pair] += 1
        except ijson.JSONError as error:
            raise ApplicationError(f"{path.name} is not valid JSON: {error}") from None
    return counts


def _pairs(handle):
    """(image id, category id) of every annotation, as strings, without building the annotation objects."""
    image_id = category_id = None
    for prefix, event, value in ijson.parse(handle, use_float=True):
        if prefix == "annotations.item" and event == "start_map":
            image_id = category_id = None
        elif prefix == "annotations.item.image_id":
            image_id = value
        elif prefix == "annotations.item.category_id":
            category_id = value
        elif prefix == "annotations.item" and event == "end_map":
            if image_id is None or category_id is None:
                raise ApplicationError('Every annotation needs an "image_id" and a "category_id".')
            yield _id(image_id), _id(category_id)


def _id(value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def categories_import(*, dataset: Dataset, path: str | Path) -> dict:
    """Replace the dataset's categories and image-category links by those of `path`.

    Runs in one transaction; idempotent (importing the same file again gives the same rows). Refuses a file
    whose annotations name none of the dataset's images, or a category the file does not declare.
    Returns {"categories", "images_with_categories", "links", "instances", "unknown_images",
    "images_without_categories"}.
    """
    path = Path(path)
    if not path.is_file():
        raise ApplicationError(f"There is no file {path}.")
    categories = _read_categories(path)
    counts = _read_instances(path)
    declared = {category["source_id"] for category in categories}
    undeclared = sorted({category for _, category in counts} - declared)
    if undeclared:
        raise ApplicationError(f"{path.name}: annotations use undeclared category ids {undeclared[:10]}.")
    images = dict(Image.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    known = {key: n for key, n in counts.items() if key[0] in images}
    unknown_images = len({image for image, _ in counts} - set(images))
    if counts and not known:
        raise ApplicationError(
            f"None of the {len({image for image, _ in counts})} images annotated in {path.name} is an image of "
            f"dataset {dataset.name} (image ids are matched with the dataset's source ids)."
        )
    with transaction.atomic():
        ImageCategory.objects.filter(image__dataset=dataset).delete()
        Category.objects.filter(dataset=dataset).delete()
        rows = [Category(dataset=dataset, **category) for category in categories]
        for row in rows:
            row.full_clean(validate_unique=False, validate_constraints=False)
        Category.objects.bulk_create(rows)
        pk_of = dict(Category.objects.filter(dataset=dataset).values_list("source_id", "pk"))
        ImageCategory.objects.bulk_create(
            [
                ImageCategory(image_id=images[image], category_id=pk_of[category], instances=n)
                for (image, category), n in sorted(known.items())
            ],
            batch_size=5000,
        )
    with_categories = len({image for image, _ in known})
    return {
        "categories": len(categories),
        "images_with_categories": with_categories,
        "images_without_categories": len(images) - with_categories,
        "links": len(known),
        "instances": sum(known.values()),
        "unknown_images": unknown_images,
    }
