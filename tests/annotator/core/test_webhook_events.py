"""The product sends its four webhook events from where they happen: a campaign finishing, an export file
ready, a dataset import done, an assignment flagged. Each reaches the owner's endpoint signed and once."""

import pytest
from standardwebhooks.webhooks import Webhook

from annotator.campaigns.services.lifecycle import campaign_finish
from annotator.core.services.webhooks.delivery import webhook_endpoint_create
from annotator.datasets.services.imports import dataset_import
from annotator.labels.services.exports.jobs import export_create
from annotator.models import CampaignStatus, DeliveryStatus, WebhookDelivery
from annotator.quality.services.scoring import assignment_score
from tests.annotator.core.test_webhooks import _Receiver
from tests.annotator.datasets.test_dataset_import import small_coco
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import CampaignFactory, user_with_role
from tests.research_helpers import research_campaign

pytestmark = pytest.mark.django_db


def _received(receiver, endpoint) -> list[dict]:
    """The messages the receiver got, each verified with the reference library."""
    verifier = Webhook(endpoint.secret)
    return [verifier.verify(body, {k.lower(): v for k, v in headers.items()}) for headers, body in receiver.received]


def test_a_finished_campaign_sends_campaign_finished_once(django_capture_on_commit_callbacks):
    campaign = CampaignFactory(status=CampaignStatus.LIVE)
    with _Receiver([]) as receiver:
        endpoint = webhook_endpoint_create(owner=campaign.owner, url=receiver.url, events=["campaign.finished"])
        with django_capture_on_commit_callbacks(execute=True):
            campaign_finish(campaign=campaign)
            campaign_finish(campaign=campaign)  # already finished: nothing more
    [message] = _received(receiver, endpoint)
    assert message["type"] == "campaign.finished" and message["data"]["campaign"] == campaign.pk


def test_an_export_sends_export_ready(django_capture_on_commit_callbacks):
    campaign = research_campaign()
    with _Receiver([]) as receiver:
        endpoint = webhook_endpoint_create(owner=campaign.owner, url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            job = export_create(campaign=campaign, user=campaign.owner, format="jsonl")
    [message] = _received(receiver, endpoint)
    assert message["type"] == "export.ready"
    assert message["data"] == {"export": job.pk, "campaign": campaign.pk, "format": "jsonl", "rows": 7}


def test_an_import_sends_import_done(tmp_path, django_capture_on_commit_callbacks):
    owner = user_with_role("requester")
    with _Receiver([]) as receiver:
        endpoint = webhook_endpoint_create(owner=owner, url=receiver.url, events=["import.done"])
        with django_capture_on_commit_callbacks(execute=True):
            dataset = dataset_import(
                name="hooked", captions_path=small_coco(tmp_path), images_path=tmp_path / "images", owner=owner
            )
    [message] = _received(receiver, endpoint)
    assert message["type"] == "import.done"
    assert message["data"] == {"dataset": dataset.pk, "name": "hooked", "status": "ready"}


def test_a_flagged_assignment_sends_assignment_flagged_and_a_clean_one_nothing(django_capture_on_commit_callbacks):
    hit = hit_with_gold(candidates=4, redundancy=2)
    with _Receiver([]) as receiver:
        endpoint = webhook_endpoint_create(owner=hit.campaign.owner, url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            assignment_score(assignment_id=submit(hit).pk)  # gold right: not flagged
            flagged = assignment_score(assignment_id=submit(hit, candidate="no", gold_negative="yes").pk)
    [message] = _received(receiver, endpoint)
    assert message["type"] == "assignment.flagged"
    assert message["data"] == {"assignment": flagged.pk, "campaign": hit.campaign.pk, "flags": ["gold_failed"]}
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {DeliveryStatus.SUCCEEDED}
