"""A small world for the API tests: one account per role, a campaign shared with the researcher, work on it."""

from dataclasses import dataclass, field

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator import models
from tests import factories
from tests.annotator.campaign_support import add_run, make_dataset
from tests.research_helpers import research_campaign


@dataclass
class World:
    users: dict
    campaign: models.Campaign
    foreign_campaign: models.Campaign
    ids: dict = field(default_factory=dict)

    def client(self, role: str) -> APIClient:
        client = APIClient()
        if role != "anonymous":
            token, _ = Token.objects.get_or_create(user=self.users[role])
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client


@pytest.fixture
def world(db) -> World:
    users = {
        "requester": factories.user_with_role(models.Role.REQUESTER, username="req-owner"),
        "other_requester": factories.user_with_role(models.Role.REQUESTER, username="req-other"),
        "researcher": factories.user_with_role(models.Role.RESEARCHER, username="res-shared"),
        "other_researcher": factories.user_with_role(models.Role.RESEARCHER, username="res-other"),
        "worker": factories.user_with_role(models.Role.WORKER, username="wrk-own"),
    }
    campaign = research_campaign(owner=users["requester"])
    campaign.shared_with.add(users["researcher"])
    campaign.dataset.owner = users["requester"]
    campaign.dataset.save()
    foreign = research_campaign(owner=users["other_requester"])
    foreign.dataset.owner = users["other_requester"]
    foreign.dataset.save()
    worker = factories.WorkerFactory(user=users["worker"], pseudonym="w-own")
    hit = factories.HitFactory(campaign=campaign, index=1)
    submitted = factories.AssignmentFactory(
        hit=hit, worker=worker, status=models.AssignmentStatus.SUBMITTED, submitted_at=timezone.now()
    )
    run = factories.RankingRunFactory(
        dataset=campaign.dataset, status=models.RunStatus.RUNNING, created_by=users["requester"]
    )
    job = factories.ExportJobFactory(campaign=campaign, created_by=users["requester"])
    evaluation = factories.EvaluationFactory(campaign=campaign, created_by=users["requester"])
    # A crowd-verified label set of the shared campaign: readable wherever the campaign is.
    from annotator.labels.services.labelsets.builds import labelset_from_campaign

    label_set = labelset_from_campaign(campaign=campaign, user=users["requester"], name="shared-crowd")
    # A second dataset with a succeeded run, for the campaign life cycle (create, build, launch, ...).
    build_dataset = make_dataset(images=6, captions_per_image=5)
    build_dataset.owner = users["requester"]
    build_dataset.save()
    build_run = add_run(dataset=build_dataset, name="api-tfidf", seed=7)
    states = {}
    for state in ("draft", "built", "live", "paused"):
        lifecycle = factories.CampaignFactory(
            owner=users["requester"], dataset=build_dataset, status=state, candidates_per_hit=4, name=f"cycle-{state}"
        )
        lifecycle.runs.add(build_run)
        if state != "draft":
            factories.HitFactory(campaign=lifecycle, index=0)
        states[f"{state}_campaign"] = lifecycle.pk
    # A webhook endpoint of the requester (a public name of the tests' resolver hook, tests/conftest.py:
    # attempts are refused at once) with a given-up delivery.
    from annotator.core.services.webhooks.delivery import webhook_endpoint_create

    endpoint = webhook_endpoint_create(
        owner=users["requester"], url="https://hooks.example/hook", events=["campaign.finished"]
    )
    delivery = models.WebhookDelivery.objects.create(
        endpoint=endpoint, message_id="msg_world", event="import.done", status=models.DeliveryStatus.FAILED
    )
    # An outside pool of the requester's dataset, with a proposed enlargement.
    pool = models.ImagePool.objects.create(
        dataset=campaign.dataset, name="world-pool", status=models.PoolStatus.READY, created_by=users["requester"]
    )
    enlargement = models.GalleryEnlargement.objects.create(
        pool=pool, dataset=campaign.dataset, status=models.EnlargementStatus.PROPOSED
    )
    ids = {
        **states,
        "pool": pool.pk,
        "enlargement": enlargement.pk,
        "webhook": endpoint.pk,
        "webhook_delivery": delivery.pk,
        "build_dataset": build_dataset.pk,
        "build_run": build_run.pk,
        "campaign": campaign.pk,
        "foreign_campaign": foreign.pk,
        "dataset": campaign.dataset_id,
        "foreign_dataset": foreign.dataset_id,
        "run": run.pk,
        "annotator": run.annotator_id,
        "assignment": submitted.pk,
        "worker": worker.pk,
        "label": models.Label.objects.filter(pair__campaign=campaign).order_by("id").first().pk,
        "foreign_label": models.Label.objects.filter(pair__campaign=foreign).order_by("id").first().pk,
        "export": job.pk,
        "evaluation": evaluation.pk,
        "labelset": label_set.pk,
    }
    return World(users=users, campaign=campaign, foreign_campaign=foreign, ids=ids)
