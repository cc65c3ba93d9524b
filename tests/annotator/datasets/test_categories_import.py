"""COCO instances files: categories and image classes, streamed, matched by source id, idempotent."""

import json

import pytest

from annotator import models
from annotator.core.errors import ApplicationError
from annotator.datasets.services.categories import categories_import
from annotator.scenarios.synthetic import generate, instances
from tests import factories

pytestmark = pytest.mark.django_db

COCO_LIKE = {
    "info": {},
    "images": [{"id": 1}, {"id": 2}, {"id": 99}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 18, "bbox": [1, 2, 3, 4], "segmentation": [[1, 2, 3, 4]]},
        {"id": 2, "image_id": 1, "category_id": 18, "bbox": [1, 2, 3, 4]},
        {"id": 3, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4]},
        {"id": 4, "image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4]},
        {"id": 5, "image_id": 99, "category_id": 1, "bbox": [1, 2, 3, 4]},
    ],
    "categories": [
        {"id": 1, "name": "person", "supercategory": "person"},
        {"id": 18, "name": "dog", "supercategory": "animal"},
        {"id": 90, "name": "toothbrush", "supercategory": "indoor"},
    ],
}


@pytest.fixture
def dataset():
    dataset = factories.DatasetFactory()
    for source in ("1", "2", "3"):
        factories.ImageFactory(dataset=dataset, source_id=source)
    return dataset


def classes(dataset):
    return {
        (link.image.source_id, link.category.name, link.instances)
        for link in models.ImageCategory.objects.filter(image__dataset=dataset).select_related("image", "category")
    }


def test_a_coco_instances_file_gives_each_image_its_classes(dataset, tmp_path):
    path = tmp_path / "instances_val2014.json"
    path.write_text(json.dumps(COCO_LIKE))
    summary = categories_import(dataset=dataset, path=path)
    assert summary == {
        "categories": 3,
        "images_with_categories": 2,
        "images_without_categories": 1,
        "links": 3,
        "instances": 4,
        "unknown_images": 1,
    }
    assert classes(dataset) == {("1", "dog", 2), ("1", "person", 1), ("2", "person", 1)}
    assert models.Category.objects.get(dataset=dataset, source_id="18").supercategory == "animal"
    # Importing again replaces, never duplicates.
    categories_import(dataset=dataset, path=path)
    assert classes(dataset) == {("1", "dog", 2), ("1", "person", 1), ("2", "person", 1)}
    assert models.Category.objects.filter(dataset=dataset).count() == 3


def test_the_synthetic_generators_instances_hold_each_scenes_objects(tmp_path):
    scenes, _ = generate(images=6, seed=2)
    dataset = factories.DatasetFactory()
    for scene in scenes:
        factories.ImageFactory(dataset=dataset, source_id=str(scene.image_id))
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(instances(scenes)))
    categories_import(dataset=dataset, path=path)
    expected = {(str(s.image_id), g.kind, g.count) for s in scenes for g in s.groups}
    assert classes(dataset) == expected


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"annotations": []}), 'no "categories"'),
        (json.dumps({**COCO_LIKE, "annotations": [{"image_id": 7, "category_id": 1}]}), "None of the 1 images"),
        (json.dumps({**COCO_LIKE, "annotations": [{"image_id": 1, "category_id": 5}]}), "undeclared category"),
        (json.dumps({**COCO_LIKE, "annotations": [{"image_id": 1}]}), "category_id"),
        (json.dumps({"categories": [{"id": 1}]}), 'needs an "id" and a "name"'),
    ],
)
def test_bad_files_are_refused_and_change_nothing(dataset, tmp_path, content, message):
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(COCO_LIKE))
    categories_import(dataset=dataset, path=path)
    path.write_text(content)
    with pytest.raises(ApplicationError, match=message):
        categories_import(dataset=dataset, path=path)
    assert len(classes(dataset)) == 3
