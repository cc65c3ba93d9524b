"""demo_users and demo_dataset (the foundation's two demo steps): logins per role, the demo set, idempotent."""

import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management.base import OutputWrapper
from PIL import Image as PILImage

from annotator.models import Caption, Dataset, DatasetStatus, Image, Profile, Role, Worker
from annotator.scenarios.demo import DEMO_PASSWORD, demo_dataset, demo_users

pytestmark = pytest.mark.django_db
FIXTURES = Path(settings.BASE_DIR) / "fixtures" / "demo"


def test_demo_fixture_is_real_photographs_with_five_captions_each():
    coco = json.loads((FIXTURES / "captions.json").read_text())
    assert len(coco["images"]) >= 12
    for image in coco["images"]:
        picture = PILImage.open(FIXTURES / "images" / image["file_name"])
        assert picture.format == "JPEG" and max(picture.size) <= 640
        assert picture.size == (image["width"], image["height"])
    per_image = {}
    for annotation in coco["annotations"]:
        per_image.setdefault(annotation["image_id"], []).append(annotation["caption"])
    assert sorted(per_image) == sorted(image["id"] for image in coco["images"])
    assert all(len(captions) == 5 and len(set(captions)) == 5 for captions in per_image.values())


def test_demo_users_and_dataset_are_created_once(client):
    out = io.StringIO()
    for _ in range(2):
        demo_users(out=OutputWrapper(out))
        demo_dataset(out=OutputWrapper(out))
    roles = dict(Profile.objects.values_list("user__username", "role"))
    assert roles == {"requester": Role.REQUESTER, "researcher": Role.RESEARCHER, "worker": Role.WORKER}
    assert Worker.objects.filter(user__username="worker").count() == 1
    for username in roles:
        logged_in = client.post("/accounts/login/", {"username": username, "password": DEMO_PASSWORD})
        assert logged_in.status_code == 302, username
        assert f"{username} / {DEMO_PASSWORD}" in out.getvalue()
    dataset = Dataset.objects.get(name="demo")
    coco = json.loads((FIXTURES / "captions.json").read_text())
    assert dataset.status == DatasetStatus.READY and dataset.owner.username == "requester"
    assert Image.objects.filter(dataset=dataset).count() == len(coco["images"])
    assert Caption.objects.filter(dataset=dataset).count() == len(coco["annotations"])
    assert dataset.report["images_created"] == 0  # the second run found everything in place
