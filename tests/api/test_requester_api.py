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


def _post_dataset(client, name, coco, images):
    return client.post(
        "/api/v1/datasets/",
        {
            "name": name,
            "captions": _upload("captions.json", json.dumps(coco).encode()),
            "images": _upload("images.zip", images),
        },
        format="multipart",
    )


def test_dataset_import_by_upload(world, django_capture_on_commit_callbacks):
    """202 at once with the dataset's URL (importing); the task imports after commit; GET then shows it ready."""
    client = world.client("requester")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = _post_dataset(client, "uploaded", COCO, _images_zip(["a.png", "b.png"]))
        assert response.status_code == 202, response.content
        body = response.json()
        assert body["status"] == "importing" and body["report"] == {"phase": "queued"} and body["name"] == "uploaded"
        assert body["url"] == f"http://testserver/api/v1/datasets/{body['id']}/" and response["Location"] == body["url"]
    assert len(callbacks) == 1
    shown = client.get(body["url"]).json()
    assert shown["status"] == "ready" and shown["images_done"] == shown["images_total"] == 2
    assert shown["captions_done"] == 3 and shown["report"]["images_created"] == 2
    dataset = models.Dataset.objects.get(pk=body["id"])
    assert dataset.owner == world.users["requester"]
    assert sorted(dataset.captions.values_list("source_id", flat=True)) == ["70", "71", "80"]
    # The other requester does not see it.
    assert world.client("other_requester").get(f"/api/v1/datasets/{dataset.pk}/").status_code == 404


def test_dataset_import_errors_name_the_offenders(world, django_capture_on_commit_callbacks):
    """An archive whose faults only the import sees (a file the captions name is missing, a caption of an
    unknown image) is accepted (202), then the dataset is failed with every offender in its report. (A file
    that is not an image is refused at upload: tests/annotator/datasets/test_upload_hostility.py.)"""
    coco = {**COCO, "annotations": [*COCO["annotations"], {"id": 90, "image_id": 9, "caption": "orphan"}]}
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.png", png_bytes(color=(1, 2, 3)))
    client = world.client("requester")
    with django_capture_on_commit_callbacks(execute=True):
        response = _post_dataset(client, "broken", coco, archive.getvalue())
    assert response.status_code == 202, response.content
    shown = client.get(response.json()["url"]).json()
    assert shown["status"] == "failed" and shown["report"]["phase"] == "refused"
    assert shown["report"]["error_count"] == 2 and len(shown["report"]["errors"]) == 2
    assert any("b.png" in error for error in shown["report"]["errors"])
    assert any("refers to unknown image 9" in error for error in shown["report"]["errors"])
    assert {row["id"] for row in shown["report"]["offenders"]} == {"8", "90"}
    assert not models.Image.objects.filter(dataset_id=shown["id"]).exists()
    retry = client.post(f"/api/v1/datasets/{shown['id']}/retry/")
    assert retry.status_code == 409 and "corrected files" in retry.json()["error"]


def test_dataset_import_refuses_wrong_file_types(world):
    client = world.client("requester")
    response = client.post(
        "/api/v1/datasets/",
        {
            "name": "x",
            "captions": _upload("captions.txt", b"{}"),
            "images": _upload("images.zip", _images_zip(["a.png"])),
        },
        format="multipart",
    )
    assert response.status_code == 400 and ".json" in response.json()["error"]
    not_zip = _post_dataset(client, "y", COCO, b"PK but not really a zip")
    assert not_zip.status_code == 400 and not_zip.json()["error"] == "The images file is not a zip archive."
    missing = client.post(
        "/api/v1/datasets/", {"name": "z", "captions": _upload("captions.json", b"{}")}, format="multipart"
    )
    assert missing.status_code == 400 and missing.json()["error"].startswith("images:")
    assert not models.Dataset.objects.filter(name__in=["x", "y", "z"]).exists()


def test_only_requesters_import_datasets(world):
    for role in ("worker", "researcher"):
        response = _post_dataset(world.client(role), "nope", COCO, _images_zip(["a.png", "b.png"]))
        assert response.status_code == 403 and response.json()["error"]
    assert _post_dataset(world.client("anonymous"), "nope", COCO, _images_zip(["a.png"])).status_code == 401
    assert not models.Dataset.objects.filter(name="nope").exists()


def test_campaign_life_cycle_through_the_api(world, django_capture_on_commit_callbacks):
    """create -> build (202, queued) -> launch -> pause -> resume, statistics on the way; a wrong transition
    is a 409."""
    client = world.client("requester")
    created = client.post(
        "/api/v1/campaigns/",
        {
            "dataset": world.ids["build_dataset"],
            "runs": [world.ids["build_run"]],
            "name": "via api",
            "candidates_per_hit": 4,
            "direction": "i2t",
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    campaign_id = created.json()["id"]
    assert created.json()["status"] == "draft" and created.json()["owner"] == "req-owner"
    assert client.post(f"/api/v1/campaigns/{campaign_id}/launch/").status_code == 409
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        queued = client.post(f"/api/v1/campaigns/{campaign_id}/build/")
        assert queued.status_code == 202 and queued.json()["status"] == "building"
        # Building already: a 409, nothing more queued.
        again = client.post(f"/api/v1/campaigns/{campaign_id}/build/")
        assert again.status_code == 409 and "being built already" in again.json()["error"]
    assert len(callbacks) == 1
    built = client.get(f"/api/v1/campaigns/{campaign_id}/").json()
    assert built["status"] == "built" and built["build_error"] == "" and built["built_at"]
    statistics = client.get(f"/api/v1/campaigns/{campaign_id}/statistics/").json()
    assert statistics["hits"] > 0 and statistics["unique_pairs"] > 0
    for step, expected in (("launch", "live"), ("pause", "paused"), ("resume", "live")):
        response = client.post(f"/api/v1/campaigns/{campaign_id}/{step}/")
        assert response.status_code == 200 and response.json()["status"] == expected


def test_a_failed_build_through_the_api_is_draft_again_with_its_error(world, django_capture_on_commit_callbacks):
    client = world.client("requester")
    created = client.post(
        "/api/v1/campaigns/",
        {
            "dataset": world.ids["build_dataset"],
            "runs": [world.ids["build_run"]],
            "name": "no queries",
            "candidates_per_hit": 4,
            "direction": "i2t",
            "sample_fraction": 0.0,
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    campaign_id = created.json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        queued = client.post(f"/api/v1/campaigns/{campaign_id}/build/")
    assert queued.status_code == 202 and queued.json()["status"] == "building"
    shown = client.get(f"/api/v1/campaigns/{campaign_id}/").json()
    assert shown["status"] == "draft" and "query sample is empty" in shown["build_error"]
    # Only the owner builds: another requester's POST finds no such campaign.
    assert world.client("other_requester").post(f"/api/v1/campaigns/{campaign_id}/build/").status_code == 404


def test_campaign_create_errors(world):
    client = world.client("requester")
    response = client.post(
        "/api/v1/campaigns/", {"dataset": world.ids["build_dataset"], "runs": [999999], "name": "x"}, format="json"
    )
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
        "/api/v1/runs/",
        {"dataset": world.ids["build_dataset"], "annotator": annotator["id"], "top_k": 10},
        format="json",
    )
    assert run.status_code == 202 and run.json()["status"] == "queued"
    assert run["Location"] == run.json()["url"] and run.json()["url"].endswith(f"/api/v1/runs/{run.json()['id']}/")
    progress = client.get(f"/api/v1/runs/{run.json()['id']}/").json()
    assert progress["progress_fraction"] == 0.0
    cancelled = client.post(f"/api/v1/runs/{run.json()['id']}/cancel/")
    assert cancelled.json()["status"] == "cancelled"
    clash = client.post("/api/v1/annotators/", {"name": "lexical", "kind": "minilm_pivot"}, format="json")
    assert clash.status_code == 409 and "already exists" in clash.json()["error"]


def test_policy_patch_goes_through_the_one_policy_service(world):
    client = world.client("requester")
    url = f"/api/v1/campaigns/{world.campaign.pk}/policy/"
    response = client.patch(
        url, {"settle_probability": 0.9, "max_answers_per_pair": 4, "gold_light_share": 0.3}, format="json"
    )
    assert response.status_code == 200, response.content
    world.campaign.refresh_from_db()
    assert (world.campaign.settle_probability, world.campaign.max_answers_per_pair) == (0.9, 4)
    assert world.campaign.gold_light_share == 0.3  # adaptive gold
    assert client.patch(url, {"gold_light_share": 1.5}, format="json").status_code == 400
    refused = client.patch(url, {"settle_min_answers": 5}, format="json")
    assert refused.status_code == 400 and "max_answers_per_pair" in refused.content.decode()
    assert world.client("other_requester").patch(url, {"settle_probability": 0.8}, format="json").status_code == 404
