"""Test images repeated in a training split (ECCV Caption App. C), across two datasets: byte-identical and
re-encoded copies are found, different pictures are not (`manage.py find_duplicates`)."""

import json
import shutil
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from PIL import Image as PILImage

from annotator.datasets.services.imports import dataset_import

pytestmark = pytest.mark.django_db
DEMO = Path(settings.BASE_DIR) / "fixtures" / "demo"


def _train_split(root: Path) -> Path:
    """Two demo pictures copied as they are, one re-encoded at 90% size, and two noise pictures."""
    coco = json.loads((DEMO / "captions.json").read_text())
    (root / "images").mkdir(parents=True)
    images, annotations = [], []
    demo = coco["images"]
    for n, image in enumerate(demo[:3]):
        target = root / "images" / f"train-{n}.jpg"
        if n < 2:
            shutil.copyfile(DEMO / "images" / image["file_name"], target)
        else:
            with PILImage.open(DEMO / "images" / image["file_name"]) as picture:
                picture.convert("RGB").resize((int(picture.width * 0.9), int(picture.height * 0.9))).save(
                    target, quality=80
                )
        images.append({"id": 100 + n, "file_name": target.name})
    rng = np.random.default_rng(1)
    for n in range(3, 5):
        target = root / "images" / f"train-{n}.jpg"
        PILImage.fromarray(rng.integers(0, 255, size=(96, 128, 3), dtype=np.uint8)).save(target)
        images.append({"id": 100 + n, "file_name": target.name})
    for image in images:
        annotations.append({"id": image["id"] * 10, "image_id": image["id"], "caption": f"a picture {image['id']}"})
    (root / "captions.json").write_text(json.dumps({"images": images, "annotations": annotations}))
    return root


def test_identical_and_re_encoded_test_images_are_found_in_another_dataset(tmp_path):
    test = dataset_import(name="demo-test", captions_path=DEMO / "captions.json", images_path=DEMO / "images")
    root = _train_split(tmp_path / "train")
    dataset_import(name="demo-train", captions_path=root / "captions.json", images_path=root / "images")
    out, err = StringIO(), StringIO()
    call_command("find_duplicates", "--test", "demo-test", "--train", "demo-train", stdout=out, stderr=err)
    result = json.loads(out.getvalue())
    assert result["identical"] == 2 and result["near"] == 1
    coco = json.loads((DEMO / "captions.json").read_text())
    expected = {str(100 + n): str(image["id"]) for n, image in enumerate(coco["images"][:3])}
    assert {pair["train_image"]: pair["test_image"] for pair in result["pairs"]} == expected
    assert "2 identical and 1 near-identical" in err.getvalue()
    with pytest.raises(CommandError, match="two different datasets"):
        call_command("find_duplicates", "--test", "demo-test", "--train", str(test.pk))
    with pytest.raises(CommandError, match="No dataset"):
        call_command("find_duplicates", "--test", "demo-test", "--train", "nope")
