"""/api/v1/labelsets/: every endpoint for every role, and the researcher's flows through it."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.models import Campaign, LabelSet, RankingRun

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "requester", "other_requester", "researcher", "other_researcher", "worker"]
ORDER = ["anonymous", "worker", "other_researcher", "other_requester", "researcher", "requester"]


def codes(*values):
    return dict(zip(ROLES, values, strict=True))


READ_LIST = codes(401, 200, 200, 200, 200, 403)
READ_DETAIL = codes(401, 200, 404, 200, 404, 403)
RANKINGS = {"i2t": {"1": ["11", "12", "21"]}, "t2i": {"22": ["3", "1"]}}

ENDPOINTS = [
    ("list", "get", "labelsets/", None, READ_LIST),
    ("detail", "get", "labelsets/{labelset}/", None, READ_DETAIL),
    ("export", "get", "labelsets/{labelset}/export/?file_format=csv", None, READ_DETAIL),
    ("compare", "get", "labelsets/compare/?sets={labelset}", None, READ_DETAIL),
    ("bias", "get", "labelsets/{labelset}/bias/", None, READ_DETAIL),
    ("evaluate", "post", "labelsets/{labelset}/evaluate/", {"rankings": RANKINGS}, READ_DETAIL),
    ("judged", "post", "labelsets/{labelset}/judged/", {"rankings": RANKINGS, "k": 2}, READ_DETAIL),
    (
        "from-campaign",
        "post",
        "labelsets/from-campaign/",
        {"campaign": "{campaign}", "variant": "strict"},
        codes(401, 201, 404, 201, 404, 403),
    ),
    (
        "from-original",
        "post",
        "labelsets/from-original/",
        {"dataset": "{dataset}"},
        codes(401, 201, 404, 201, 404, 403),
    ),
    (
        "derive",
        "post",
        "labelsets/",
        {"name": "both", "operation": "union", "operands": ["{labelset}", "{labelset}"]},
        codes(401, 400, 404, 400, 404, 403),
    ),
    (
        "rankings",
        "post",
        "labelsets/{labelset}/rankings/",
        {"model_name": "mine", "rankings": RANKINGS},
        codes(401, 201, 404, 201, 404, 403),
    ),
    (
        "unjudged-campaign",
        "post",
        "labelsets/{labelset}/unjudged-campaign/",
        {"run": 999999},
        codes(401, 404, 404, 403, 403, 403),
    ),
    (
        "merge-campaign",
        "post",
        "labelsets/{labelset}/merge-campaign/",
        {"campaign": "{campaign}"},
        codes(401, 201, 404, 201, 404, 403),
    ),
]


@pytest.mark.parametrize(("method", "url", "body", "expected"), [pytest.param(*e[1:], id=e[0]) for e in ENDPOINTS])
def test_endpoint_for_every_role(world, method, url, body, expected):
    """Each role gets exactly the expected status; every refusal is JSON with an `error` message."""
    wrong = []
    for role in ORDER:
        client = world.client(role)
        path = "/api/v1/" + url.format(**world.ids)
        if method == "get":
            response = client.get(path)
        else:
            filled = json.loads(json.dumps(body).replace('"{labelset}"', str(world.ids["labelset"])))
            filled = json.loads(
                json.dumps(filled)
                .replace('"{campaign}"', str(world.ids["campaign"]))
                .replace('"{dataset}"', str(world.ids["dataset"]))
            )
            response = client.post(path, filled, format="json")
        if response.status_code != expected[role]:
            wrong.append(f"{role}: {response.status_code} != {expected[role]}: {response.content[:300]!r}")
        elif expected[role] >= 400 and not (response.json().get("error") or "").strip():
            wrong.append(f"{role}: {response.status_code} without an error message")
    assert not wrong, "\n".join(wrong)


def test_a_researcher_imports_the_released_split_files_and_downloads_them_back(world):
    client = world.client("researcher")
    i2t = json.dumps({"1": [11, 21, 22], "2": [12]}).encode()
    t2i = json.dumps({"22": [1, 3]}).encode()
    response = client.post(
        "/api/v1/labelsets/import/",
        {
            "dataset": world.ids["dataset"],
            "name": "eccv",
            "files": [
                SimpleUploadedFile("eccv_image_to_caption.json", i2t),
                SimpleUploadedFile("eccv_caption_to_image.json", t2i),
            ],
            "annotators": "tfidf, clip",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["label"] == "eccv@1" and body["source_format"] == "eccv_split"
    assert body["stats"]["i2t"]["queries"] == 2 and body["stats"]["t2i"]["queries"] == 1
    assert body["annotators"] == ["tfidf", "clip"]
    download = client.get(f"/api/v1/labelsets/{body['id']}/export/?file_format=eccv_split&direction=i2t")
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="eccv_image_to_caption.json"'
    assert json.loads(b"".join(download.streaming_content)) == {"1": [11, 21, 22], "2": [12]}
    # The other researcher cannot see it, nor import onto a dataset they have no access to.
    other = world.client("other_researcher")
    assert other.get(f"/api/v1/labelsets/{body['id']}/").status_code == 404
    refused = other.post(
        "/api/v1/labelsets/import/",
        {
            "dataset": world.ids["dataset"],
            "name": "x",
            "files": [SimpleUploadedFile("eccv_image_to_caption.json", i2t)],
        },
        format="multipart",
    )
    assert refused.status_code == 404


def test_an_import_whose_ids_match_nothing_is_a_400_that_names_the_problem(world):
    response = world.client("requester").post(
        "/api/v1/labelsets/import/",
        {
            "dataset": world.ids["dataset"],
            "name": "nothing",
            "format": "eccv_json",
            "files": [SimpleUploadedFile("x.json", b'{"i2t": {"nope": ["x"]}}')],
        },
        format="multipart",
    )
    assert response.status_code == 400
    assert "None of the file's ids" in response.json()["error"]


def test_derive_compare_and_evaluate_through_the_api(world):
    client = world.client("researcher")
    original = client.post("/api/v1/labelsets/from-original/", {"dataset": world.ids["dataset"]}, format="json").json()
    union = client.post(
        "/api/v1/labelsets/",
        {
            "name": "crowd-plus-coco",
            "operation": "union",
            "operands": [world.ids["labelset"], original["id"]],
            "query_rule": "first",
        },
        format="json",
    )
    assert union.status_code == 201, union.content
    union = union.json()
    assert union["kind"] == "derived" and union["operands"] == [world.ids["labelset"], original["id"]]
    compared = client.get(
        f"/api/v1/labelsets/compare/?sets={original['id']},{world.ids['labelset']},{union['id']}"
    ).json()
    assert compared["baseline"] == original["label"]
    assert len(compared["precision_recall"]) == 6
    scores = client.post(
        f"/api/v1/labelsets/{union['id']}/evaluate/", {"rankings": RANKINGS, "model_name": "TFIDF"}, format="json"
    ).json()
    assert scores["counts"]["i2t"]["queries"] == 2
    assert any("tfidf proposed the candidates" in warning for warning in scores["warnings"])
    bias = client.get(f"/api/v1/labelsets/{union['id']}/bias/")
    assert bias.status_code == 409 and "crowd-verified" in bias.json()["error"]


def test_bring_your_own_ranking_through_the_api(world):
    researcher, requester = world.client("researcher"), world.client("requester")
    labelset = world.ids["labelset"]
    uploaded = researcher.post(
        f"/api/v1/labelsets/{labelset}/rankings/",
        {"model_name": "my-model", "rankings": {"i2t": {"1": ["11", "12", "32"]}}, "top_k": 3, "k": 3},
        format="json",
    )
    assert uploaded.status_code == 201, uploaded.content
    body = uploaded.json()
    run_id = body["run"]["id"]
    assert RankingRun.objects.get(pk=run_id).annotator.name == "my-model"
    # Of image 1's top 3, the crowd set has labelled 11 and 32 but not 12.
    assert body["judged"]["i2t"]["judged_at_k"] == pytest.approx(2 / 3)
    assert body["judged"]["i2t"]["unjudged_pairs"] == 1
    made = requester.post(f"/api/v1/labelsets/{labelset}/unjudged-campaign/", {"run": run_id, "k": 3}, format="json")
    assert made.status_code == 201, made.content
    campaign = Campaign.objects.get(pk=made.json()["id"])
    assert campaign.owner == world.users["requester"] and campaign.status == "draft"
    assert (
        researcher.post(
            f"/api/v1/labelsets/{labelset}/unjudged-campaign/", {"run": run_id, "k": 3}, format="json"
        ).status_code
        == 403
    )


def test_list_filters_and_bad_query_parameters(world):
    client = world.client("requester")
    assert [s["name"] for s in client.get("/api/v1/labelsets/?kind=crowd").json()["results"]] == ["shared-crowd"]
    assert client.get("/api/v1/labelsets/?kind=nope").status_code == 400
    assert client.get("/api/v1/labelsets/compare/?sets=a,b").status_code == 400
    assert client.get(f"/api/v1/labelsets/{world.ids['labelset']}/export/?file_format=xml").status_code == 400
    assert (
        client.post(
            f"/api/v1/labelsets/{world.ids['labelset']}/evaluate/", {"rankings": "not an object"}, format="json"
        ).status_code
        == 400
    )
    assert LabelSet.objects.count() == 1


def test_openapi_schema_documents_the_label_set_endpoints_without_warnings(tmp_path):
    """drf-spectacular builds the schema with no warning, and every label-set operation is in it with
    its parameters and request body."""
    import yaml
    from django.core.management import call_command

    out = tmp_path / "schema.yml"
    call_command("spectacular", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    paths = schema["paths"]
    assert {
        "/api/v1/labelsets/",
        "/api/v1/labelsets/{id}/",
        "/api/v1/labelsets/import/",
        "/api/v1/labelsets/from-campaign/",
        "/api/v1/labelsets/from-original/",
        "/api/v1/labelsets/compare/",
        "/api/v1/labelsets/{id}/export/",
        "/api/v1/labelsets/{id}/bias/",
        "/api/v1/labelsets/{id}/evaluate/",
        "/api/v1/labelsets/{id}/judged/",
        "/api/v1/labelsets/{id}/rankings/",
        "/api/v1/labelsets/{id}/unjudged-campaign/",
        "/api/v1/labelsets/{id}/merge-campaign/",
    } <= set(paths)
    imported = paths["/api/v1/labelsets/import/"]["post"]["requestBody"]["content"]
    assert "multipart/form-data" in imported
    export_params = {p["name"] for p in paths["/api/v1/labelsets/{id}/export/"]["get"]["parameters"]}
    assert {"file_format", "direction"} <= export_params
    compare_params = {p["name"] for p in paths["/api/v1/labelsets/compare/"]["get"]["parameters"]}
    assert {"sets", "queries_of", "baseline"} <= compare_params
    assert set(schema["components"]["schemas"]["LabelSetKindEnum"]["enum"]) == {
        "crowd",
        "original",
        "imported",
        "derived",
    }
