"""A requester's work through the API: import a dataset, register an annotator, run it, build and run a campaign."""

import io
import json
import zipfile

import pytest

from annotator import models
from tests.factories import png_bytes

pytestmark = pytest.mark.django_db


def _upload(name: str, data: bytes):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def _images_zip(names):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for index, name in enumerate(names):
            archive.writestr(name, png_bytes(color=(index * 40 % 255, 80, 120)))
    return buffer.getvalue()


COCO = {
    "images": [{"id": 7, "file_name": "a.png"}, {"id": 8, "file_name": "b.png"}],
    "annotations": [
        {"id": 70, "image_id": 7, "caption": "A red square."},
        {"id": 71, "image_id": 7, "caption": "A square, <i>red</i>."},
        {"id": 80, "image_id": 8, "caption": "A teal square."},
    ],
}


def test_dataset_import_by_upload(world):
    """COCO captions + a zip of images become a ready dataset owned by the requester."""
    response = world.client("requester").post(
        "/api/v1/datasets/",
        {"name": "uploaded", "captions": _upload("captions.json", json.dumps(COCO).encode()),
         "images": _upload("images.zip", _images_zip(["a.png", "b.png"]))},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "ready" and body["name"] == "uploaded"
    dataset = models.Dataset.objects.get(pk=body["id"])
    assert dataset.owner == world.users["requester"]
    assert sorted(dataset.captions.values_list("source_id", flat=True)) == ["70", "71", "80"]
    # The other requester does not see it.
    assert world.client("other_requester").get(f"/api/v1/datasets/{dataset.pk}/").status_code == 404


def test_dataset_import_errors_name_the_offenders(world):
    coco = {**COCO, "annotations": [*COCO["annotations"], {"id": 90, "image_id": 9, "caption": "orphan"}]}
    response = world.client("requester").post(
        "/api/v1/datasets/",
        {"name": "broken", "captions": _upload("captions.json", json.dumps(coco).encode()),
         "images": _upload("images.zip", _images_zip(["a.png", "b.png"]))},
        format="multipart",
    )
    assert response.status_code == 400
    assert "refused" in response.json()["error"] and response.json()["errors"]


def test_dataset_import_refuses_wrong_file_types(world):
    response = world.client("requester").post(
        "/api/v1/datasets/",
        {"name": "x", "captions": _upload("captions.txt", b"{}"), "images": _upload("images.zip", _images_zip(["a.png"]))},
        format="multipart",
    )
    assert response.status_code == 400 and ".json" in response.json()["error"]


def test_campaign_life_cycle_through_the_api(world):
    """create -> build -> launch -> pause -> resume, statistics on the way; a wrong transition is a 409."""
    client = world.client("requester")
    created = client.post(
        "/api/v1/campaigns/",
        {"dataset": world.ids["build_dataset"], "runs": [world.ids["build_run"]], "name": "via api",
         "candidates_per_hit": 4, "direction": "i2t"},
        format="json",
    )
    assert created.status_code == 201, created.content
    campaign_id = created.json()["id"]
    assert created.json()["status"] == "draft" and created.json()["owner"] == "req-owner"
    assert client.post(f"/api/v1/campaigns/{campaign_id}/launch/").status_code == 409
    built = client.post(f"/api/v1/campaigns/{campaign_id}/build/")
    assert built.status_code == 200 and built.json()["status"] == "built"
    statistics = client.get(f"/api/v1/campaigns/{campaign_id}/statistics/").json()
    assert statistics["hits"] > 0 and statistics["unique_pairs"] > 0
    for step, expected in (("launch", "live"), ("pause", "paused"), ("resume", "live")):
        response = client.post(f"/api/v1/campaigns/{campaign_id}/{step}/")
        assert response.status_code == 200 and response.json()["status"] == expected


def test_campaign_create_errors(world):
    client = world.client("requester")
    response = client.post("/api/v1/campaigns/", {"dataset": world.ids["build_dataset"], "runs": [999999], "name": "x"},
                           format="json")
    assert response.status_code == 400 and response.json()["runs"] == [999999]
    response = client.post(
        "/api/v1/campaigns/",
        {"dataset": world.ids["build_dataset"], "runs": [world.ids["build_run"]], "name": "x", "pool_depth": 30},
        format="json",
    )
    assert response.status_code == 400 and "exclusion depth" in response.json()["error"]


def test_annotator_registration_and_ranking_run_through_the_api(world):
    client = world.client("requester")
    annotator = client.post("/api/v1/annotators/", {"name": "lexical", "kind": "tfidf_pivot"}, format="json").json()
    run = client.post(
        "/api/v1/runs/", {"dataset": world.ids["build_dataset"], "annotator": annotator["id"], "top_k": 10}, format="json"
    )
    assert run.status_code == 201 and run.json()["status"] == "queued"
    progress = client.get(f"/api/v1/runs/{run.json()['id']}/").json()
    assert progress["progress_fraction"] == 0.0
    cancelled = client.post(f"/api/v1/runs/{run.json()['id']}/cancel/")
    assert cancelled.json()["status"] == "cancelled"
    clash = client.post("/api/v1/annotators/", {"name": "lexical", "kind": "minilm_pivot"}, format="json")
    assert clash.status_code == 409 and "already exists" in clash.json()["error"]
