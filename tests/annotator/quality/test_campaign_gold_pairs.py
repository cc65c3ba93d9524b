"""Campaign statistics count as gold pairs exactly the pairs HITs ask as gold items."""

import pytest

from annotator.campaigns.selectors.campaigns import campaign_statistics
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.models import HitItem, ItemRole, Pair
from tests import factories
from tests.annotator.campaign_support import add_run, make_dataset

pytestmark = pytest.mark.django_db


def test_gold_pairs_are_the_gold_items_pairs_and_nothing_else():
    owner = factories.user_with_role("requester", username="gold-owner")
    dataset = make_dataset(images=10, captions_per_image=5)
    run = add_run(dataset=dataset, name="gold-tfidf", seed=1, top_k=25)
    campaign = campaign_build(
        campaign=campaign_create(owner=owner, dataset=dataset, runs=[run], name="gold", candidates_per_hit=4)
    )
    gold = set(
        HitItem.objects.filter(hit__campaign=campaign, role__in=[ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE])
        .exclude(pair__sources__isnull=False)
        .values_list("pair_id", flat=True)
    )
    assert gold
    assert campaign_statistics(campaign=campaign, include_progress=False)["gold_pairs"] == len(gold)
    # A pair in no HIT and proposed by nobody (what importing labels into a campaign used to add) is no gold.
    image = dataset.images.first()
    taken = set(Pair.objects.filter(campaign=campaign, image=image).values_list("caption_id", flat=True))
    caption = dataset.captions.exclude(pk__in=taken).first()
    Pair.objects.create(campaign=campaign, image=image, caption=caption)
    assert campaign_statistics(campaign=campaign, include_progress=False)["gold_pairs"] == len(gold)
