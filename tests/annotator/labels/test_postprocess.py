"""Post-processing (ECCV App. C): annotator/labels/services/cleanup.py."""

import pytest

from annotator.labels.services.cleanup import (
    cleanup_decide,
    cleanup_detect,
    cleanup_removed_caption_ids,
)
from annotator.models import CleanupKind, CleanupStatus, Label, Role
from tests.factories import CampaignFactory, CaptionFactory, ImageFactory, PairFactory, user_with_role

pytestmark = pytest.mark.django_db


def test_detect_lists_bad_captions_and_rejected_originals_then_requester_decides():
    campaign = CampaignFactory()
    image = ImageFactory(dataset=campaign.dataset)
    bad = CaptionFactory(dataset=campaign.dataset, image=image, text="There is no image to be reviewed on this hit.")
    fine = CaptionFactory(dataset=campaign.dataset, image=image, text="Two red kites over a sandy beach.")
    original = PairFactory(campaign=campaign, image=image, caption=fine, is_original=True)
    Label.objects.create(
        pair=original,
        method="majority",
        choice="no",
        is_positive=False,
        is_positive_strict=False,
        confidence=1.0,
        answer_count=3,
    )
    found = cleanup_detect(campaign=campaign)
    assert found == {"not_description": 1, "original_rejected": 1}
    assert cleanup_detect(campaign=campaign) == found  # idempotent: no duplicates
    not_description = campaign.cleanup_proposals.get(kind=CleanupKind.NOT_A_DESCRIPTION)
    assert not_description.caption == bad and "says there is no image" in not_description.evidence["heuristics"]
    rejected = campaign.cleanup_proposals.get(kind=CleanupKind.ORIGINAL_REJECTED)
    assert rejected.pair == original and rejected.evidence["crowd"]["methods"]["majority"]["choice"] == "no"
    requester = user_with_role(Role.REQUESTER)
    cleanup_decide(proposal=not_description, actor=requester, confirm=True)
    cleanup_decide(proposal=rejected, actor=requester, confirm=False)
    assert cleanup_removed_caption_ids(campaign=campaign) == {bad.pk}
    cleanup_detect(campaign=campaign)
    rejected.refresh_from_db()
    assert rejected.status == CleanupStatus.DISMISSED and rejected.decided_by == requester  # decisions survive
