"""Every endpoint for every role, allowed and refused.

Roles: anonymous, the requester who owns the campaign, another requester, the researcher it is shared with,
another researcher, and a worker with an assignment on it. Out-of-scope objects are 404s, wrong roles 403s.
"""

import pytest

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "requester", "other_requester", "researcher", "other_researcher", "worker"]


def codes(*values):
    return dict(zip(ROLES, values, strict=False))


REQ_LIST = codes(401, 200, 200, 403, 403, 403)
REQ_DETAIL = codes(401, 200, 404, 403, 403, 403)
READ_LIST = codes(401, 200, 200, 200, 200, 403)
READ_DETAIL = codes(401, 200, 404, 200, 404, 403)

ENDPOINTS = [
    ("datasets-list", "get", "datasets/", None, REQ_LIST),
    ("datasets-detail", "get", "datasets/{dataset}/", None, REQ_DETAIL),
    # JSON without the files: the requester is let in and told what is missing; the others are refused.
    ("datasets-import", "post", "datasets/", {"name": "x"}, codes(401, 400, 400, 403, 403, 403)),
    ("datasets-retry", "post", "datasets/{dataset}/retry/", None, codes(401, 409, 404, 403, 403, 403)),
    ("annotators-list", "get", "annotators/", None, REQ_LIST),
    ("annotators-detail", "get", "annotators/{annotator}/", None, REQ_LIST),
    (
        "annotators-create",
        "post",
        "annotators/",
        {"name": "tfidf-2", "kind": "tfidf_pivot"},
        codes(401, 201, 201, 403, 403, 403),
    ),
    # Researchers read the runs on the datasets of the campaigns shared with them, as on the pages.
    ("runs-list", "get", "runs/", None, READ_LIST),
    ("runs-detail", "get", "runs/{run}/", None, READ_DETAIL),
    (
        "runs-start",
        "post",
        "runs/",
        {"dataset": "{dataset}", "annotator": "{annotator}"},
        codes(401, 202, 404, 403, 403, 403),
    ),
    ("runs-cancel", "post", "runs/{run}/cancel/", {}, REQ_DETAIL),
    ("campaigns-list", "get", "campaigns/", None, READ_LIST),
    ("campaigns-detail", "get", "campaigns/{campaign}/", None, READ_DETAIL),
    (
        "campaigns-create",
        "post",
        "campaigns/",
        {"dataset": "{build_dataset}", "runs": ["{build_run}"], "name": "api"},
        codes(401, 201, 404, 403, 403, 403),
    ),
    ("campaigns-build", "post", "campaigns/{draft_campaign}/build/", {}, codes(401, 202, 404, 403, 403, 403)),
    ("campaigns-launch", "post", "campaigns/{built_campaign}/launch/", {}, REQ_DETAIL),
    ("campaigns-pause", "post", "campaigns/{live_campaign}/pause/", {}, REQ_DETAIL),
    ("campaigns-resume", "post", "campaigns/{paused_campaign}/resume/", {}, REQ_DETAIL),
    ("campaigns-statistics", "get", "campaigns/{campaign}/statistics/", None, REQ_DETAIL),
    ("campaigns-share", "post", "campaigns/{campaign}/share/", {"usernames": ["res-other"]}, REQ_DETAIL),
    ("campaigns-label-counts", "get", "campaigns/{campaign}/label-counts/", None, READ_DETAIL),
    ("assignments-list", "get", "assignments/", None, codes(401, 200, 200, 403, 403, 200)),
    ("assignments-detail", "get", "assignments/{assignment}/", None, codes(401, 200, 404, 403, 403, 200)),
    ("assignments-approve", "post", "assignments/{assignment}/approve/", {}, REQ_DETAIL),
    ("assignments-reject", "post", "assignments/{assignment}/reject/", {"reason": "gold answers wrong"}, REQ_DETAIL),
    # The world's assignment is a local worker's: nothing for MTurk, so the requester is told so (409).
    (
        "assignments-retry-mturk-decision",
        "post",
        "assignments/{assignment}/retry-mturk-decision/",
        {},
        codes(401, 409, 404, 403, 403, 403),
    ),
    ("workers-list", "get", "workers/", None, REQ_LIST),
    ("workers-detail", "get", "workers/{worker}/", None, REQ_DETAIL),
    ("workers-block", "post", "workers/{worker}/block/", {"reason": "random answers"}, REQ_DETAIL),
    ("workers-unblock", "post", "workers/{worker}/unblock/", {"reason": "appeal accepted"}, REQ_DETAIL),
    ("labels-list", "get", "labels/", None, READ_LIST),
    ("labels-detail", "get", "labels/{label}/", None, READ_DETAIL),
    ("exports-list", "get", "exports/", None, READ_LIST),
    ("exports-detail", "get", "exports/{export}/", None, READ_DETAIL),
    (
        "exports-create",
        "post",
        "exports/",
        {"campaign": "{campaign}", "format": "eccv_json"},
        codes(401, 202, 404, 202, 404, 403),
    ),
    ("exports-download-unfinished", "get", "exports/{export}/download/", None, codes(401, 409, 404, 409, 404, 403)),
    ("evaluations-list", "get", "evaluations/", None, READ_LIST),
    ("evaluations-detail", "get", "evaluations/{evaluation}/", None, READ_DETAIL),
    (
        "evaluations-create",
        "post",
        "evaluations/",
        {"campaign": "{campaign}", "name": "m", "rankings": {"i2t": {"1": ["11"]}, "t2i": {}}},
        # Keyed: the researcher (first) stores it, the owner asking for the same evaluation gets it back.
        codes(401, 200, 404, 201, 404, 403),
    ),
    ("evaluations-csv", "get", "evaluations/{evaluation}/csv/", None, READ_DETAIL),
    ("leaderboard", "get", "leaderboard/?campaign={campaign}", None, READ_DETAIL),
    ("schema", "get", "schema/", None, codes(200, 200, 200, 200, 200, 200)),
    ("webhooks-list", "get", "webhooks/", None, REQ_LIST),
    ("webhooks-detail", "get", "webhooks/{webhook}/", None, REQ_DETAIL),
    ("webhooks-deliveries", "get", "webhooks/{webhook}/deliveries/", None, REQ_DETAIL),
    ("webhooks-create", "post", "webhooks/", {"url": "https://example.org/h"}, codes(401, 201, 201, 403, 403, 403)),
    ("webhook-deliveries-list", "get", "webhook-deliveries/", None, REQ_LIST),
    ("webhook-deliveries-detail", "get", "webhook-deliveries/{webhook_delivery}/", None, REQ_DETAIL),
    (
        "webhook-deliveries-redeliver",
        "post",
        "webhook-deliveries/{webhook_delivery}/redeliver/",
        {},
        codes(401, 202, 404, 403, 403, 403),
    ),
]


def _fill(value, ids):
    if isinstance(value, str):
        if value.startswith("{") and value.endswith("}") and value[1:-1] in ids:
            return ids[value[1:-1]]
        return value.format(**ids)
    if isinstance(value, dict):
        return {key: _fill(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, ids) for item in value]
    return value


# Refused roles first, allowed mutations last, so one world serves every role of an endpoint.
ORDER = ["anonymous", "worker", "other_researcher", "other_requester", "researcher", "requester"]


@pytest.mark.parametrize(("method", "url", "body", "expected"), [pytest.param(*e[1:], id=e[0]) for e in ENDPOINTS])
def test_endpoint_for_every_role(world, method, url, body, expected):
    """Each role gets exactly the expected status; every refusal is JSON with an `error` message."""
    wrong = []
    for role in ORDER:
        client = world.client(role)
        path = "/api/v1/" + _fill(url, world.ids)
        if method == "get":
            response = client.get(path)
        else:
            response = client.post(path, _fill(body, world.ids), format="json")
        if response.status_code != expected[role]:
            wrong.append(f"{role}: {response.status_code} != {expected[role]}: {response.content[:300]!r}")
        elif expected[role] >= 400 and not (response.json().get("error") or "").strip():
            wrong.append(f"{role}: {response.status_code} without an error message")
    assert not wrong, "\n".join(wrong)
