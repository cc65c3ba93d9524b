"""The positive verdict of one answer has one home (annotator.crowd.scales.answer_verdict), read from the campaign."""

import pytest

from annotator.crowd.scales import answer_verdict
from annotator.labels.services.aggregation import labels_aggregate
from annotator.models import ItemRole, Label
from annotator.quality.selectors.posterior import campaign_posterior
from annotator.quality.services.decisions import assignment_approve
from annotator.quality.services.peers import assignment_peer_agreement
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def test_an_sis_campaigns_label_and_crowd_check_agree_on_a_rating_of_2_6():
    """SIS (image-image) is positive from 2.5: a 2.6 rating is positive for the label, the posterior that the
    crowd check and adaptive redundancy read, and the peer verdicts alike (the crowd check said 3.0)."""
    campaign = CampaignFactory(direction="i2i", scale="similarity", gold_positives_per_hit=0, redundancy=3)
    assert campaign.positive_at == 2.5
    hit = hit_with_gold(campaign=campaign, candidates=4)
    ratings = {ItemRole.CANDIDATE: 2.6, ItemRole.GOLD_POSITIVE: 4.5, ItemRole.GOLD_NEGATIVE: 0.5}
    assignments = [assignment_score(assignment_id=submit(hit, score=ratings).pk) for _ in range(3)]
    assert all(assignment.flags == [] for assignment in assignments)
    candidates = set(hit.items.filter(role=ItemRole.CANDIDATE).values_list("pair_id", flat=True))
    assert assignment_peer_agreement(assignment=assignments[0]) == (4, 4)
    for assignment in assignments:
        assignment_approve(assignment=assignment)

    labels_aggregate(campaign=campaign, method="mean")
    labels = Label.objects.filter(pair_id__in=candidates, method="mean")
    assert labels.count() == 4 and all(label.is_positive for label in labels)

    fit = campaign_posterior(campaign=campaign, approved_only=False)
    posterior = dict(zip(fit.pairs.tolist(), fit.probability.tolist(), strict=True))
    assert all(posterior[pair] > 0.5 for pair in candidates)

    assert answer_verdict(campaign=campaign, choice="", score=2.6) is True


def test_a_campaigns_own_threshold_is_the_verdict_everywhere():
    sts = CampaignFactory(direction="t2t", scale="similarity")
    custom = CampaignFactory(direction="i2i", scale="similarity", gold_positives_per_hit=0, similarity_positive_at=4)
    four = CampaignFactory()
    assert answer_verdict(campaign=sts, choice="", score=2.6) is False
    assert answer_verdict(campaign=custom, choice="", score=3.9) is False
    assert answer_verdict(campaign=custom, choice="", score=4.0) is True
    assert answer_verdict(campaign=sts, choice="", score=None) is None
    assert [
        answer_verdict(campaign=four, choice=c, score=None) for c in ("yes", "partially_yes", "mostly_no", "no", "")
    ] == [
        True,
        True,
        False,
        False,
        None,
    ]
