"""The one policy service (the Quality page and PATCH /api/v1/campaigns/{id}/policy/ both call it) and the
machine evidence the posterior's prior reads."""

import pytest

from annotator.errors import ApplicationError
from annotator.models import PairSource
from annotator.selectors.posterior import machine_features
from annotator.services.quality.policy import campaign_policy_update
from tests.factories import CampaignFactory, PairFactory, RankingRunFactory

pytestmark = pytest.mark.django_db


def test_policy_update_sets_fields_and_refuses_a_tolerance_above_the_gold_per_hit():
    campaign = CampaignFactory(gold_positives_per_hit=1, gold_negatives_per_hit=1)
    campaign = campaign_policy_update(campaign=campaign, tolerated_gold_misses=2, settle_probability=0.9)
    assert (campaign.tolerated_gold_misses, campaign.settle_probability) == (2, 0.9)
    with pytest.raises(ApplicationError, match="as many gold misses as a HIT has gold items"):
        campaign_policy_update(campaign=campaign, tolerated_gold_misses=3)
    with pytest.raises(ApplicationError, match="Unknown policy settings: reward_cents"):
        campaign_policy_update(campaign=campaign, reward_cents=1)
    campaign.refresh_from_db()
    assert campaign.tolerated_gold_misses == 2


def test_machine_features_carry_rank_score_runs_and_the_original_pair():
    campaign = CampaignFactory()
    run = RankingRunFactory(dataset=campaign.dataset)
    campaign.runs.add(run)
    original = PairFactory(campaign=campaign, is_original=True)
    proposed = PairFactory(campaign=campaign, mismatched=True)
    PairSource.objects.create(pair=proposed, run=run, direction="i2t", rank=2, score=0.5)
    PairSource.objects.create(pair=original, run=run, direction="i2t", rank=1, score=0.9)
    features = machine_features(campaign=campaign)
    assert features[original.pk].tolist()[:2] == [1.0, 1.0] and features[original.pk][-1] == 1.0
    assert features[proposed.pk].tolist()[:2] == [1.0, 0.5] and features[proposed.pk][-1] == 0.0
    assert features[proposed.pk][-2] == 1.0  # proposed by one run
    bare = PairFactory(campaign=campaign, is_original=True)  # the dataset's own pair, proposed by no run
    assert machine_features(campaign=campaign, pair_ids=[bare.pk])[bare.pk].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
