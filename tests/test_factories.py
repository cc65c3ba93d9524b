"""The factories build what production builds: a HIT from live_campaign_with_hits has the shape of a HIT from
campaign_build (positions from 1, the campaign's gold flagged as a build flags it, has_room after a lease)."""

from collections import Counter

import pytest

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.crowd.services.assignments import assignment_claim_external
from annotator.models import ItemRole, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import AssignmentFactory, WorkerFactory, live_campaign_with_hits, user_with_role

pytestmark = pytest.mark.django_db

GOLD = (ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE)


def built_hit(**options):
    dataset = make_dataset(images=20)
    runs = [add_run(dataset=dataset, name=f"m{i}", seed=i, directions=("i2t",)) for i in range(2)]
    campaign = campaign_create(
        owner=user_with_role(Role.REQUESTER), dataset=dataset, runs=runs, name="built", direction="i2t", **options
    )
    campaign = campaign_launch(campaign=campaign_build(campaign=campaign))
    return campaign.hits.order_by("index").first()


def shape(hit) -> dict:
    """What a HIT is made of, as the worker pages, scoring and review read it."""
    items = list(hit.items.select_related("pair__caption").order_by("position"))
    return {
        "positions": [item.position for item in items],
        "roles": Counter(item.role for item in items),
        # is_original as the build sets it, and as the pair really is: the caption describes this image.
        "gold": sorted(
            (item.role, item.pair.is_original, item.pair.caption.image_id == item.pair.image_id)
            for item in items
            if item.role in GOLD
        ),
        "has_room": hit.has_room,
        "assignments_required": hit.assignments_required,
    }


@pytest.mark.parametrize(("positives", "negatives"), [(1, 1), (1, 2)])
def test_a_factory_hit_has_the_shape_of_a_built_hit(positives, negatives):
    gold = {"gold_positives_per_hit": positives, "gold_negatives_per_hit": negatives}
    production = built_hit(candidates_per_hit=4, **gold)
    made = live_campaign_with_hits(hits=1, candidates=4, qualification_items=0, **gold).hits.get()
    assert shape(made) == shape(production)
    assert shape(made)["positions"] == list(range(1, 4 + positives + negatives + 1))


def test_a_factory_lease_leaves_has_room_as_a_claim_does():
    production = built_hit(candidates_per_hit=4, qualification_items=0)
    made = live_campaign_with_hits(hits=1, candidates=4, qualification_items=0).hits.get()
    assignment_claim_external(hit=production, worker=WorkerFactory(), external_assignment_id="3LEASE")
    AssignmentFactory(hit=made)
    production.refresh_from_db()
    made.refresh_from_db()
    assert (made.has_room, production.has_room) == (False, False)


def test_follow_up_hits_number_their_items_from_1_as_the_build_does():
    """Adaptive redundancy packs unsettled pairs into new HITs; their positions count from 1 too."""
    from annotator.models import AssignmentStatus
    from annotator.quality.services.followups import followups_plan
    from annotator.quality.services.scoring import assignment_score
    from tests.annotator.quality_support import submit

    campaign = live_campaign_with_hits(hits=1, candidates=4, qualification_items=0, adaptive_redundancy=True)
    hit = campaign.hits.get()
    assignment = assignment_score(assignment_id=submit(hit, candidate="partially_yes").pk)
    assignment.status = AssignmentStatus.APPROVED
    assignment.save(update_fields=["status"])
    hit.status = "complete"
    hit.save(update_fields=["status"])
    assert followups_plan(campaign=campaign)["hits"] >= 1
    for followup in campaign.hits.filter(followup_round__gt=0):
        positions = list(followup.items.order_by("position").values_list("position", flat=True))
        assert positions == list(range(1, len(positions) + 1))
