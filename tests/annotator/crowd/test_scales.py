"""The answer scales as the worker pages show them."""

import pytest

from annotator.crowd.scales import SIMILARITY_WORDING, campaign_scale, scale_for
from annotator.models import Choice, Shortcoming
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def test_similarity_wording_has_every_point_from_five_to_zero_for_each_pair_kind():
    for kind in SIMILARITY_WORDING:
        data = scale_for(scale="similarity", kind=kind)
        assert [a["score"] for a in data["anchors"]] == [5, 4, 3, 2, 1, 0]
        assert data["min"] == 0 and data["max"] == 5
        assert "positive_at" not in data  # the threshold is the campaign's own (Campaign.positive_at), not the scale's
    sts = scale_for(scale="similarity", kind="caption_caption")
    assert sts["anchors"][0]["text"] == "The texts are completely equivalent as they mean the same thing."
    sis = scale_for(scale="similarity", kind="image_image")
    assert sis["anchors"][-1]["text"] == "The two scenes are completely dissimilar."


def test_four_choice_follow_ups_follow_the_campaign_switch():
    with_followups = campaign_scale(campaign=CampaignFactory(rationale_followups=True))
    assert [c["label"] for c in with_followups["choices"]] == [c.label for c in Choice]
    assert set(with_followups["needs_shortcomings"]) == {Choice.PARTIALLY_YES, Choice.MOSTLY_NO}
    assert with_followups["wrong_way"] == Shortcoming.WRONG_WAY
    without = campaign_scale(campaign=CampaignFactory(rationale_followups=False))
    assert without["needs_shortcomings"] == [] and without["rationale_followups"] is False
    sts = campaign_scale(campaign=CampaignFactory(direction="t2t", scale="similarity"))
    assert sts["task"].startswith("Semantic Textual Similarity")
