"""Labels, exports and evaluations through the API: scoping, filters, downloads, numbers."""

import io
import json

import pytest

from annotator import models
from tests.research_helpers import EXPECTED, LABELLED_PAIRS, eccv_positives

pytestmark = pytest.mark.django_db

# A ranking scored by hand against EXPECTED[("lenient", False)] (see test_evaluation_* below).
RANKINGS = {"i2t": {"1": ["11", "12", "21", "99", "31"]}, "t2i": {"22": [2, 3, 1]}}
BY_HAND = {
    # i2t: R=4; ranks 1 and 3 are positives: (1/1 + 2/3) / 4; precision at 4 = 2/4.
    "i2t": {"r1": 1.0, "r5": 1.0, "r10": 1.0, "r_precision": 0.5, "map_at_r": (1 + 2 / 3) / 4},
    # t2i: R=2; rank 2 is the first positive: (1/2) / 2; precision at 2 = 1/2.
    "t2i": {"r1": 0.0, "r5": 1.0, "r10": 1.0, "r_precision": 0.5, "map_at_r": 0.25},
}
# Against the original pairs: image 1's captions are 11 and 12, caption 22's image is 2.
ORIGINAL_BY_HAND = {"i2t": {"r1": 1.0, "r5": 1.0, "r10": 1.0}, "t2i": {"r1": 1.0, "r5": 1.0, "r10": 1.0}}


def test_labels_are_scoped_filtered_and_paginated(world):
    client = world.client("researcher")
    everything = client.get("/api/v1/labels/").json()
    assert everything["count"] == len(LABELLED_PAIRS)  # the foreign campaign's labels are not there
    assert {row["campaign"] for row in everything["results"]} == {world.campaign.pk}
    positives = client.get("/api/v1/labels/", {"campaign": world.campaign.pk, "positive": "true"}).json()
    assert positives["count"] == sum(1 for *_, choice in LABELLED_PAIRS if choice in models.POSITIVE_CHOICES)
    strict = client.get("/api/v1/labels/", {"positive": "true", "strict": "true"}).json()
    assert {(r["image"], r["caption"]) for r in strict["results"]} == {("1", "11"), ("1", "21"), ("3", "22")}
    page = client.get("/api/v1/labels/", {"limit": 2, "offset": 2}).json()
    assert len(page["results"]) == 2 and page["next"] and page["previous"]
    assert client.get("/api/v1/labels/", {"method": "dawid_skene"}).json()["count"] == 0
    assert client.get("/api/v1/labels/", {"campaign": world.foreign_campaign.pk}).json()["count"] == 0


def test_labels_carry_the_probability_and_its_interval(world):
    label = models.Label.objects.filter(pair__campaign=world.campaign).order_by("pk").first()
    label.probability, label.probability_low, label.probability_high = 0.83, 0.61, 0.95
    label.save()
    row = world.client("researcher").get(f"/api/v1/labels/{label.pk}/").json()
    assert (row["probability"], row["probability_low"], row["probability_high"]) == (0.83, 0.61, 0.95)
    assert row["score_low"] is None and row["score_high"] is None


def test_labels_leave_out_captions_removed_in_post_processing(world):
    client = world.client("researcher")
    caption = models.Caption.objects.get(dataset=world.campaign.dataset, source_id="11")
    with_caption = models.Label.objects.filter(pair__campaign=world.campaign, pair__caption=caption).count()
    assert with_caption > 0
    proposal = models.CleanupProposal.objects.create(
        campaign=world.campaign, kind=models.CleanupKind.choices[0][0], caption=caption
    )
    assert client.get("/api/v1/labels/").json()["count"] == len(LABELLED_PAIRS)  # proposed: still there
    proposal.status = models.CleanupStatus.CONFIRMED
    proposal.save()
    rows = client.get("/api/v1/labels/").json()
    assert rows["count"] == len(LABELLED_PAIRS) - with_caption
    assert "11" not in {row["caption"] for row in rows["results"]}


@pytest.mark.parametrize(
    ("params", "field"),
    [({"positive": "maybe"}, "positive"), ({"campaign": "x"}, "campaign"), ({"method": "vote"}, "method")],
)
def test_bad_label_filters_are_a_400_with_a_message(world, params, field):
    response = world.client("researcher").get("/api/v1/labels/", params)
    assert response.status_code == 400
    body = response.json()
    assert body["error"].startswith(field) and field in body["fields"]


def test_worker_sees_only_their_own_assignments_without_gold_scores(world):
    response = world.client("worker").get("/api/v1/assignments/").json()
    assert [row["id"] for row in response["results"]] == [world.ids["assignment"]]
    assert set(response["results"][0]) == {
        "id",
        "campaign",
        "campaign_name",
        "status",
        "reserved_at",
        "expires_at",
        "submitted_at",
        "decided_at",
    }


def test_requester_filters_assignments_and_reviews_them(world):
    client = world.client("requester")
    submitted = client.get("/api/v1/assignments/", {"status": "submitted"}).json()
    assert [row["id"] for row in submitted["results"]] == [world.ids["assignment"]]
    approved = client.get("/api/v1/assignments/", {"status": "approved", "campaign": world.campaign.pk}).json()
    assert approved["count"] == 1 and approved["results"][0]["worker"] == "w-alpha"
    assert client.get("/api/v1/assignments/", {"flagged": "true"}).json()["count"] == 0
    rejected = client.post(
        f"/api/v1/assignments/{world.ids['assignment']}/reject/", {"reason": "gold wrong"}, format="json"
    )
    assert rejected.json()["status"] == "rejected"
    no_reason = client.post(f"/api/v1/assignments/{world.ids['assignment']}/approve/", {}, format="json")
    assert no_reason.json()["status"] == "approved"  # a requester may overturn a rejection
    bad = client.post(f"/api/v1/assignments/{world.ids['assignment']}/reject/", {}, format="json")
    assert bad.status_code == 400 and "reason" in bad.json()["fields"]


def test_blocking_a_worker_through_the_api(world):
    client = world.client("requester")
    blocked = client.post(f"/api/v1/workers/{world.ids['worker']}/block/", {"reason": "random clicks"}, format="json")
    assert blocked.json()["blocked"] is True and blocked.json()["platform_blocked"] is False
    standing = models.WorkerStanding.objects.get(worker_id=world.ids["worker"], requester=world.users["requester"])
    assert standing.blocked and not models.Worker.objects.get(pk=world.ids["worker"]).blocked
    client.post(f"/api/v1/workers/{world.ids['worker']}/unblock/", {"reason": "appeal"}, format="json")
    standing.refresh_from_db()
    assert not standing.blocked


def test_sharing_decides_what_a_researcher_reads(world):
    owner, other = world.client("requester"), world.client("other_researcher")
    assert other.get(f"/api/v1/campaigns/{world.campaign.pk}/").status_code == 404
    shared = owner.post(f"/api/v1/campaigns/{world.campaign.pk}/share/", {"usernames": ["res-other"]}, format="json")
    assert shared.json()["shared_with"] == ["res-other"]
    assert other.get("/api/v1/labels/").json()["count"] == len(LABELLED_PAIRS)
    assert world.client("researcher").get("/api/v1/labels/").json()["count"] == 0  # unshared
    refused = owner.post(f"/api/v1/campaigns/{world.campaign.pk}/share/", {"usernames": ["wrk-own"]}, format="json")
    assert refused.status_code == 400 and refused.json()["unknown"] == ["wrk-own"]


def test_label_counts(world):
    counts = world.client("researcher").get(f"/api/v1/campaigns/{world.campaign.pk}/label-counts/").json()
    assert counts == [{"method": "majority", "labels": 7, "positives": 5, "strict_positives": 3}]


def test_export_job_to_download_round_trip(world, django_capture_on_commit_callbacks):
    """A researcher starts an ECCV JSON export, polls it, downloads it: the same positives come back."""
    client = world.client("researcher")
    with django_capture_on_commit_callbacks(execute=True):
        created = client.post(
            "/api/v1/exports/",
            {"campaign": world.campaign.pk, "format": "eccv_json", "merge_original": True},
            format="json",
        )
    assert created.status_code == 202
    job = client.get(f"/api/v1/exports/{created.json()['id']}/").json()
    assert job["status"] == "succeeded" and job["download_url"].endswith(f"/api/v1/exports/{job['id']}/download/")
    download = client.get(job["download_url"])
    assert download.status_code == 200
    assert "attachment" in download["Content-Disposition"]
    assert eccv_positives(json.loads(b"".join(download.streaming_content))) == EXPECTED[("lenient", True)]
    # The owner may download it too; a researcher it is not shared with may not even see it.
    assert world.client("requester").get(job["download_url"]).status_code == 200
    assert world.client("other_researcher").get(job["download_url"]).status_code == 404


def test_export_input_errors_are_400s(world):
    client = world.client("requester")
    response = client.post("/api/v1/exports/", {"campaign": world.campaign.pk, "format": "xml"}, format="json")
    assert response.status_code == 400 and "format" in response.json()["fields"]
    response = client.post("/api/v1/exports/", {"campaign": world.campaign.pk, "format": "cxc_csv"}, format="json")
    assert response.status_code == 400 and "similarity" in response.json()["error"]


def test_evaluation_upload_gives_the_numbers_computed_by_hand(world):
    upload = io.BytesIO(json.dumps(RANKINGS).encode())
    upload.name = "rankings.json"
    response = world.client("researcher").post(
        "/api/v1/evaluations/",
        {"campaign": world.campaign.pk, "name": "my-model", "rankings_file": upload},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    results = response.json()["results"]
    for direction in ("i2t", "t2i"):
        assert results["verified"][direction] == pytest.approx(BY_HAND[direction])
        assert results["original"][direction] == pytest.approx(ORIGINAL_BY_HAND[direction])
    assert models.Evaluation.objects.get(pk=response.json()["id"]).name == "my-model"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"rankings": {"x2y": {}}}, "unknown keys"),
        ({"rankings": {"i2t": {"1": "11"}}}, "list of ids"),
        ({"rankings": {"i2t": {"1": ["11"]}, "verified_negatives": {"i2t": {}}}}, "unknown keys"),
        ({}, "as rankings_file, as rankings, or name a ranking_run"),
    ],
)
def test_bad_rankings_are_a_400_with_a_message(world, payload, message):
    response = world.client("researcher").post(
        "/api/v1/evaluations/", {"campaign": world.campaign.pk, "name": "m", **payload}, format="json"
    )
    assert response.status_code == 400 and message in response.json()["error"]


def test_not_json_rankings_file_is_a_400(world):
    upload = io.BytesIO(b"{not json")
    upload.name = "r.json"
    response = world.client("researcher").post(
        "/api/v1/evaluations/",
        {"campaign": world.campaign.pk, "name": "m", "rankings_file": upload},
        format="multipart",
    )
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]


def test_a_revoked_or_wrong_token_is_a_401_with_a_message(world):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    response = client.get("/api/v1/labels/")
    assert response.status_code == 401 and "token" in response.json()["error"].lower()


def test_documentation_page_serves_local_assets(world):
    page = world.client("anonymous").get("/api/v1/docs/")
    assert page.status_code == 200
    assert b"drf_spectacular_sidecar/swagger-ui-dist" in page.content
    assert world.client("anonymous").get("/api/v1/redoc/").status_code == 200


@pytest.mark.parametrize(
    "path", ["labels/abc/", "labels/²/", "labels/99999999999999999999999/", "nope/", "labels/1.5/"]
)
def test_odd_paths_are_json_404s(world, path):
    response = world.client("researcher").get(f"/api/v1/{path}")
    assert response.status_code == 404 and response.json()["error"]


def test_post_to_an_unknown_path_is_a_json_404_not_a_csrf_page(world):
    response = world.client("requester").post("/api/v1/campaigns/1.5/build/", {}, format="json")
    assert response.status_code == 404 and response.json()["error"]


def test_an_oversized_rankings_file_is_a_413_on_the_campaign_and_the_label_set_paths(world, monkeypatch):
    """One rankings reader, one size guard: both evaluation paths answer the same 413."""
    from annotator.labels.services.labelsets import readers

    monkeypatch.setattr(readers, "MAX_FILE_BYTES", 16)
    client = world.client("researcher")
    upload = io.BytesIO(json.dumps(RANKINGS).encode())
    upload.name = "rankings.json"
    response = client.post(
        "/api/v1/evaluations/",
        {"campaign": world.campaign.pk, "name": "m", "rankings_file": upload},
        format="multipart",
    )
    assert response.status_code == 413 and "larger than" in response.json()["error"]
    from annotator.labels.services.labelsets.builds import labelset_from_original

    label_set = labelset_from_original(dataset=world.campaign.dataset, public=True)
    upload.seek(0)
    response = client.post(
        "/api/v1/evaluations/", {"label_set": label_set.pk, "name": "m", "rankings_file": upload}, format="multipart"
    )
    assert response.status_code == 413 and "larger than" in response.json()["error"]
