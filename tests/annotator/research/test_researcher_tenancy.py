"""Researchers see only what is shared with them, on every page: the URL list comes from the URLconf, so a
new page is walked too (a new URL parameter fails the test until it is given an object here)."""

import pytest
from django.urls import URLResolver, get_resolver, reverse
from django.utils import timezone

from annotator import models
from annotator.core.services.webhooks.delivery import webhook_endpoint_create
from tests import factories

pytestmark = pytest.mark.django_db

# Pages meant for everyone who is logged in, whatever they may see: they are walked too, and must not show
# a word of the requester's work.
FOR_EVERYONE = {
    "healthz",
    "home",
    "signup",
    "login",
    "logout",
    "audit",  # one's own account events
    "api-token",
    "api-token-new",
    "api-token-revoke",
    "mturk_arrival",  # the landing page of an MTurk HIT; it names no campaign without MTurk's parameters
    "research-home",  # lists the campaigns shared with the caller
    "research-leaderboards",  # lists the boards of what the caller may read
    "labelset-list",  # lists public sets and those the caller may read
    "labelset-compare",  # compares sets the caller may read, chosen in the query string
    "benchmark-list",  # lists the renovated benchmarks the caller may read
}
# Not pages of the product: the admin (staff log-in) and the API (tests/api/test_permissions_matrix.py).
NOT_WALKED_PREFIXES = ("admin/", "api/", "^media/")
# String parameters: a real value, so the view reaches its access check.
STRING_ARGS = {"action": "launch", "fmt": "csv", "kind": "ranking"}  # kind: of the job (annotator/core/jobs.py)
STRING_ARGS_BY_NAME = {"review-worker": {"action": "block"}}

SECRETS = ("tenant-dataset-zq", "tenant-campaign-zq", "tenant-labels-zq", "tenant-other-zq")


def _routes():
    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern

    for route, pattern in walk(get_resolver().url_patterns):
        if not route.startswith(NOT_WALKED_PREFIXES):
            assert pattern.name, f"{route} has no name: name it so this walk can reverse it"
            yield pattern.name, list(pattern.pattern.regex.groupindex)


def _world(owner, *, suffix: str = ""):
    """One requester's work: a dataset with a run, a live campaign with an assignment, labels, an export,
    an evaluation, a cleanup proposal, a failed MTurk decision and a failed bonus, a private label set of the
    campaign, a webhook with a delivery."""
    dataset = factories.DatasetFactory(name=f"tenant-dataset-zq{suffix}", owner=owner)
    run = factories.RankingRunFactory(dataset=dataset, created_by=owner)
    campaign = factories.live_campaign_with_hits(name=f"tenant-campaign-zq{suffix}", owner=owner, dataset=dataset)
    hit = campaign.hits.first()
    assignment = factories.AssignmentFactory(
        hit=hit, status=models.AssignmentStatus.SUBMITTED, submitted_at=timezone.now()
    )
    pair = hit.items.first().pair
    factories.LabelFactory(pair=pair)
    export = factories.ExportJobFactory(campaign=campaign, status=models.ExportStatus.SUCCEEDED)
    evaluation = factories.EvaluationFactory(campaign=campaign, status=models.EvaluationStatus.SUCCEEDED)
    proposal = models.CleanupProposal.objects.create(campaign=campaign, kind="not_description", caption=pair.caption)
    label_set = models.LabelSet.objects.create(
        dataset=dataset,
        name=f"tenant-labels-zq{suffix}",
        kind=models.LabelSetKind.CROWD,
        campaign=campaign,
        method=models.AggregationMethod.MAJORITY,
        variant=models.ExportVariant.LENIENT,
        created_by=owner,
    )
    decision = models.ExternalDecision.objects.create(
        assignment=assignment, decision="approve", status=models.ExternalDecisionStatus.FAILED
    )
    bonus = models.Bonus.objects.create(
        assignment=assignment,
        worker_id=assignment.worker_id,
        campaign=campaign,
        amount_cents=50,
        reason="careful work",
        idempotency_key=f"bonus-{dataset.pk}",
        status=models.PayoutStatus.FAILED,
    )
    endpoint = webhook_endpoint_create(owner=owner, url=f"https://hooks.example/{dataset.pk}")
    delivery = models.WebhookDelivery.objects.create(
        endpoint=endpoint, message_id=f"msg-{dataset.pk}", event=models.WebhookEvent.values[0]
    )
    pool = models.ImagePool.objects.create(dataset=dataset, name=f"tenant-pool-zq{suffix}", status="ready")
    enlargement = models.GalleryEnlargement.objects.create(pool=pool, dataset=dataset, status="proposed")
    refinement = models.Refinement.objects.create(dataset=dataset, owner=owner, name=f"tenant-refine-zq{suffix}")
    refinement_proposal = models.RefinementProposal.objects.create(
        refinement=refinement, caption=pair.caption, original_text=pair.caption.text, text="zq", generator="upload"
    )
    correction = models.CorrectionAssignment.objects.create(
        proposal=refinement_proposal, worker=assignment.worker, status="review", expires_at=timezone.now()
    )
    return {
        "refinement_id": refinement.pk,
        "correction_id": correction.pk,
        "caption_id": pair.caption_id,
        "pool_id": pool.pk,
        "enlargement_id": enlargement.pk,
        "decision_id": decision.pk,
        "endpoint_id": endpoint.pk,
        "delivery_id": delivery.pk,
        "dataset_id": dataset.pk,
        "run_id": run.pk,
        "job_id": run.pk,  # the job pages are walked with the ranking run
        "campaign_id": campaign.pk,
        "assignment_id": assignment.pk,
        "worker_id": assignment.worker_id,
        "export_id": export.pk,
        "evaluation_id": evaluation.pk,
        "proposal_id": proposal.pk,
        "label_set_id": label_set.pk,
        "bonus_id": bonus.pk,
    }


def _post_body(ids: dict) -> dict:
    """Ids a form may carry in its body (a label set from a campaign, a merge, a compare) point at the
    requester's objects too."""
    return {
        "dataset": ids["dataset_id"],
        "campaign": ids["campaign_id"],
        "run": ids["run_id"],
        "operands": [ids["label_set_id"]],
        "a": ids["label_set_id"],
        "b": ids["label_set_id"],
        "annotator": "kind:tfidf_pivot",
        "decision": "approve",
        "assignment": [ids["assignment_id"]],
        "reason": "walk",
        "name": "walk",
        "format": "eccv_json",
    }


def _answers(client, ids: dict):
    """(name, method, status, body) for every walked URL, with the requester's objects as its arguments."""
    for name, params in _routes():
        kwargs = {}
        for param in params:
            if param in ids:
                kwargs[param] = ids[param]
            else:
                value = STRING_ARGS_BY_NAME.get(name, {}).get(param, STRING_ARGS.get(param))
                assert value is not None, f"{name}: no object for URL parameter {param!r}; add one to _world()"
                kwargs[param] = value
        url = reverse(name, kwargs=kwargs)
        client.force_login(client.researcher)  # again: the walk passes the log-out page too
        query = {"a": ids["label_set_id"], "b": ids["label_set_id"], "campaign": ids["campaign_id"]}
        response = client.get(url, query)
        method = "GET"
        if response.status_code == 405:
            response = client.post(url, _post_body(ids))
            method = "POST"
        body = b"".join(response.streaming_content) if response.streaming else response.content
        yield name, method, response.status_code, body.decode("utf-8", "replace")


@pytest.fixture
def owner():
    return factories.user_with_role(models.Role.REQUESTER)


@pytest.fixture
def researcher_client(client):
    researcher = factories.user_with_role(models.Role.RESEARCHER)
    client.force_login(researcher)
    client.raise_request_exception = False
    client.researcher = researcher
    return client


def test_a_researcher_shared_with_nothing_is_refused_every_requester_page(researcher_client, owner):
    """Every page of the URLconf, with another requester's objects: 403 or 404; pages for everyone answer
    but show none of it."""
    ids = _world(owner)
    leaks, walked = [], 0
    for name, method, status, body in _answers(researcher_client, ids):
        walked += 1
        if name in FOR_EVERYONE:
            if status >= 500 or any(secret in body for secret in SECRETS):
                leaks.append((name, method, status, "shows the requester's work"))
        elif status not in (403, 404):
            leaks.append((name, method, status))
    assert walked > 60  # the whole URLconf, not a handful
    assert not leaks, leaks


def test_a_share_opens_exactly_the_shared_campaign_and_its_dataset(researcher_client, owner):
    """Shared one campaign: its label, export, leaderboard pages and its dataset's ranking pages open; the
    requester's other dataset and campaign stay 403/404, as do the requester-only pages of the shared one."""
    shared = _world(owner)
    other = _world(owner, suffix="-other")
    models.Campaign.objects.get(pk=shared["campaign_id"]).shared_with.add(researcher_client.researcher)

    opened = {name for name, method, status, _ in _answers(researcher_client, shared) if status == 200}
    assert {
        "research-campaign",
        "research-leaderboard",
        "research-leaderboard-download",
        "research-evaluation-download",
        "dataset-ranking",
        "ranking-run",
        "job-status",
        "labelset-detail",
        "research-leaderboard-labelset",
    } <= opened
    requester_only = {"dataset-detail", "campaign-detail", "review-queue", "review-quality", "review-assignment"}
    assert not opened & requester_only, opened & requester_only

    leaks = []
    for name, method, status, body in _answers(researcher_client, other):
        if name in FOR_EVERYONE:
            unshared = ("tenant-dataset-zq-other", "tenant-campaign-zq-other")
            if status >= 500 or any(secret in body for secret in unshared):
                leaks.append((name, method, status, "shows the unshared work"))
        elif status not in (403, 404):
            leaks.append((name, method, status))
    assert not leaks, leaks


def test_the_api_agrees_with_the_pages_on_runs(researcher_client, owner):
    """One rule serves both: the runs a researcher reads on the pages are the runs the API lists."""
    shared = _world(owner)
    _world(owner, suffix="-other")
    models.Campaign.objects.get(pk=shared["campaign_id"]).shared_with.add(researcher_client.researcher)
    listed = researcher_client.get("/api/v1/runs/").json()
    assert [row["id"] for row in listed["results"]] == [shared["run_id"]]
