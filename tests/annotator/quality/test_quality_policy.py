"""The one policy service (the Quality page and PATCH /api/v1/campaigns/{id}/policy/ both call it) and the
machine evidence the posterior's prior reads."""

import pytest

from annotator.campaigns.services.policy import campaign_policy_update
from annotator.core.errors import ApplicationError
from annotator.models import Candidate, PairSource
from annotator.quality.selectors.posterior import machine_features
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


def test_the_products_defaults_are_the_ones_issue_22_settled_on():
    """A campaign made without options: the posterior label model (not plain Dawid-Skene), the machine prior,
    adaptive redundancy (extra answers for uncertain pairs) and one gold miss forgiven."""
    from annotator.models import Campaign

    campaign = Campaign()
    assert campaign.label_model == "posterior"
    assert campaign.machine_prior and campaign.adaptive_redundancy
    assert (campaign.settle_probability, campaign.settle_min_answers, campaign.max_answers_per_pair) == (0.95, 2, 7)
    assert campaign.tolerated_gold_misses == 1 and campaign.redundancy == 1


def test_every_policy_setting_is_in_the_campaign_api():
    """Each setting the policy service takes can be read on a campaign, given at creation and PATCHed."""
    from annotator.campaigns.services.policy import POLICY_FIELDS
    from api.serializers import CampaignCreateSerializer, CampaignPolicySerializer, CampaignSerializer

    assert "tolerated_gold_misses" in POLICY_FIELDS  # once only on a page
    assert set(CampaignPolicySerializer().fields) == set(POLICY_FIELDS)
    assert set(POLICY_FIELDS) <= set(CampaignCreateSerializer().fields)
    assert set(POLICY_FIELDS) <= set(CampaignSerializer().fields)


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
    assert machine_features(campaign=campaign, pair_ids=[bare.pk])[bare.pk].tolist() == [0.0] * 9 + [0.0, 1.0]


def test_machine_features_read_every_runs_whole_top_k_in_both_directions():
    """A run that did not pool a pair still says where it ranked it: deeper in its top-k, or from the caption's
    side; another run's pair it never ranked stays at zero."""
    campaign = CampaignFactory()
    first, second = RankingRunFactory(dataset=campaign.dataset), RankingRunFactory(dataset=campaign.dataset)
    campaign.runs.add(first, second)
    pair = PairFactory(campaign=campaign, mismatched=True)
    other = PairFactory(campaign=campaign, mismatched=True)
    PairSource.objects.create(pair=pair, run=first, direction="i2t", rank=1, score=0.9)
    for run, direction, query, target, rank, score in (
        (first, "i2t", pair.image_id, pair.caption_id, 1, 0.9),
        (first, "i2t", other.image_id, other.caption_id, 3, 0.5),
        (second, "i2t", pair.image_id, pair.caption_id, 12, 0.4),  # below the pool depth
        (second, "t2i", pair.caption_id, pair.image_id, 2, 0.7),  # the caption's own ranking
        (second, "t2i", other.caption_id, other.image_id, 4, 0.3),
        (second, "t2i", pair.caption_id, other.image_id, 5, 0.2),  # a pair that is not the campaign's
    ):
        Candidate.objects.create(run=run, direction=direction, query_id=query, target_id=target, rank=rank, score=score)
    features = machine_features(campaign=campaign)
    row, bare = features[pair.pk], features[other.pk]
    assert row[:6].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]  # pooled by the first run only
    first_i2t, second_i2t, second_t2i = row[6:9], row[12:15], row[15:18]
    assert first_i2t[:2].tolist() == [1.0, 1.0] and first_i2t[2] > 0  # above the run's mean score
    assert second_i2t.tolist() == [1.0, 1.0 / 12, 0.0]  # the second run's only i2t row: its own mean
    assert second_t2i[:2].tolist() == [1.0, 0.5] and second_t2i[2] > 0
    assert row[9:12].tolist() == [0.0, 0.0, 0.0]  # the first run ranked no caption-to-image rows
    assert bare[12:15].tolist() == [0.0, 0.0, 0.0] and bare[15:17].tolist() == [1.0, 0.25] and bare[17] < 0
    assert row[-2] == 1.0 and bare[-2] == 0.0  # proposed (pooled) by one run, by none
