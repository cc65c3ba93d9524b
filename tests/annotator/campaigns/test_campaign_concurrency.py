"""Two requests building (or launching) the same campaign at once serialise on the campaign row lock."""

import threading

import pytest
from django.db import connections

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.models import CampaignStatus, HitItem, Pair, Role
from tests.annotator.campaign_support import add_run, campaign_snapshot, make_dataset
from tests.factories import user_with_role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def run_twice_at_once(function, campaign):
    errors, barrier = [], threading.Barrier(2)

    def worker():
        try:
            barrier.wait()
            function(campaign=campaign)
        except Exception as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


def test_concurrent_builds_give_one_campaign_and_concurrent_launches_one_launch():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks")
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name=f"lock-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    owner = user_with_role(Role.REQUESTER)
    campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, name="locks", sample_count=20)
    assert run_twice_at_once(campaign_build, campaign) == []
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.BUILT
    pairs = Pair.objects.filter(campaign=campaign)
    assert pairs.count() == len(set(pairs.values_list("image_id", "caption_id")))
    snapshot = campaign_snapshot(campaign)
    assert HitItem.objects.filter(hit__campaign=campaign).count() == 18 * len(snapshot)
    assert run_twice_at_once(campaign_launch, campaign) == []
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.LIVE and campaign.launched_at is not None
    assert campaign_snapshot(campaign) == snapshot
