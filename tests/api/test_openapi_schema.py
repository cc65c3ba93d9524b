"""The OpenAPI schema tells the truth: error responses, paging bounds, response shapes; bad paging is a 400."""

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db

ERROR_REF = {"$ref": "#/components/schemas/Error"}


@pytest.fixture(scope="module")
def spec():
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(spec):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            yield path, method.upper(), operation


def test_every_operation_declares_its_standard_errors_with_the_error_body(spec):
    found = list(operations(spec))
    assert len(found) > 50
    for path, method, operation in found:
        responses = operation["responses"]
        where = f"{method} {path}"
        for code in ("401", "403", "429", "503"):
            assert responses[code]["content"]["application/json"]["schema"] == ERROR_REF, where
        assert "Retry-After" in responses["429"]["headers"] and "Retry-After" in responses["503"]["headers"], where
        if "{id}" in path:
            assert "404" in responses, where
        if method != "GET" or "requestBody" in operation:
            assert "400" in responses, where
        if "requestBody" in operation:
            assert "413" in responses and "415" in responses, where


@pytest.mark.parametrize(
    ("method", "path", "codes"),
    [
        ("POST", "/api/v1/runs/", {"202", "404", "409"}),
        ("POST", "/api/v1/runs/{id}/cancel/", {"200", "409"}),
        ("POST", "/api/v1/campaigns/{id}/build/", {"202", "409"}),
        ("POST", "/api/v1/campaigns/{id}/launch/", {"200", "409"}),
        ("GET", "/api/v1/exports/{id}/download/", {"200", "409"}),
        ("POST", "/api/v1/exports/", {"202", "404"}),
        ("GET", "/api/v1/leaderboard/", {"200", "400", "404", "409"}),
    ],
)
def test_state_conflicts_and_unknown_references_are_declared_where_services_raise_them(spec, method, path, codes):
    assert codes <= set(spec["paths"][path][method.lower()]["responses"])


def test_the_error_component_requires_a_message(spec):
    error = spec["components"]["schemas"]["Error"]
    assert error["required"] == ["error"] and error["properties"]["error"]["type"] == "string"


def test_label_counts_is_a_plain_list_without_paging(spec):
    operation = spec["paths"]["/api/v1/campaigns/{id}/label-counts/"]["get"]
    body = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert body == {"type": "array", "items": {"$ref": "#/components/schemas/LabelCount"}}
    assert not [parameter for parameter in operation["parameters"] if parameter["in"] == "query"]


def test_paging_parameters_state_their_bounds(spec):
    parameters = {
        parameter["name"]: parameter["schema"] for parameter in spec["paths"]["/api/v1/labels/"]["get"]["parameters"]
    }
    assert parameters["limit"] == {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}
    assert parameters["offset"]["minimum"] == 0 and parameters["offset"]["type"] == "integer"


def test_a_label_sets_blank_fields_are_allowed_by_its_schema(spec):
    properties = spec["components"]["schemas"]["LabelSet"]["properties"]
    for name in ("variant", "source_format", "operation", "query_rule"):
        assert {"$ref": "#/components/schemas/BlankEnum"} in properties[name]["oneOf"], name
    assert properties["created_by"]["nullable"] is True


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("limit=0", "limit must be a whole number from 1 to 1000; got '0'."),
        ("limit=1001", "limit must be a whole number from 1 to 1000; got '1001'."),
        ("limit=ten", "limit must be a whole number from 1 to 1000; got 'ten'."),
        ("limit=", "limit must be a whole number from 1 to 1000; got ''."),
        ("offset=-1", "offset must be a whole number from 0 to 4611686018427387904; got '-1'."),
        ("offset=1.5", "offset must be a whole number from 0 to 4611686018427387904; got '1.5'."),
    ],
)
def test_bad_paging_values_are_a_400_that_names_the_bounds(world, query, message):
    response = world.client("requester").get(f"/api/v1/campaigns/?{query}")
    assert response.status_code == 400
    assert response.json()["error"] == f"{query.split('=')[0]}: {message}"


def test_paging_within_the_bounds_pages(world):
    client = world.client("requester")
    everything = client.get("/api/v1/campaigns/?limit=1000").json()
    assert everything["count"] >= 3
    second = client.get("/api/v1/campaigns/?limit=1&offset=1").json()
    assert [campaign["id"] for campaign in second["results"]] == [everything["results"][1]["id"]]
    assert client.get(f"/api/v1/campaigns/?offset={everything['count']}").json()["results"] == []
