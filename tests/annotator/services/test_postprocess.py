"""Post-processing (ECCV App. C) and external label imports (annotator/services/postprocess.py)."""

import json

import pytest

from annotator.errors import ApplicationError
from annotator.models import AggregationMethod, CleanupKind, CleanupStatus, Label, Role
from annotator.services.postprocess import (
    caption_not_description_reasons,
    cleanup_decide,
    cleanup_detect,
    cleanup_removed_caption_ids,
    labels_import_external,
)
from tests.factories import CampaignFactory, CaptionFactory, ImageFactory, PairFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "text",
    [
        "I am unable to see an image above.",
        "There is no image here to provide a caption for.",
        "The first picture is blank all the time on purpose.",
        "Why is my first one a blank every time.",
        "ok",
    ],
)
def test_eccv_invalid_captions_are_caught(text):
    assert caption_not_description_reasons(text)


@pytest.mark.parametrize("text", ["A man riding a wave on top of a surfboard.", "I see two dogs on the grass."])
def test_descriptions_pass(text):
    assert caption_not_description_reasons(text) == []


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


def _dataset_pair(campaign):
    image = ImageFactory(dataset=campaign.dataset, source_id="391895")
    caption = CaptionFactory(dataset=campaign.dataset, image=image, source_id="770337")
    other = CaptionFactory(
        dataset=campaign.dataset, image=ImageFactory(dataset=campaign.dataset, source_id="9"), source_id="12"
    )
    return image, caption, other


def test_import_cxc_csv_as_external_labels():
    campaign = CampaignFactory()
    image, caption, other = _dataset_pair(campaign)
    csv_text = (
        "caption,image,agg_score,sampling_method\n"
        "770337,COCO_val2014_000000391895.jpg,4.2,c2i_intramodal\n"
        "12,391895,1.0,random\n"
        "99999,391895,3.0,random\n"
    )
    report = labels_import_external(campaign=campaign, content=csv_text.encode(), fmt="cxc_csv", source="CxC")
    assert (report["labels"], report["positives"], report["new_pairs"], report["unknown"]) == (2, 1, 2, 1)
    strong = Label.objects.get(pair__caption=caption, method=AggregationMethod.EXTERNAL)
    assert strong.is_positive and strong.is_positive_strict and strong.source == "CxC" and strong.pair.is_original
    weak = Label.objects.get(pair__caption=other, method=AggregationMethod.EXTERNAL)
    assert not weak.is_positive and weak.score == 1.0
    again = labels_import_external(campaign=campaign, content=csv_text, fmt="cxc_csv", source="CxC")
    assert again["new_pairs"] == 0 and Label.objects.filter(method="external").count() == 2


def test_import_eccv_json_positives():
    campaign = CampaignFactory()
    image, caption, other = _dataset_pair(campaign)
    data = {"i2t": {"391895": [770337, 12]}, "t2i": {"770337": [391895]}}
    report = labels_import_external(campaign=campaign, content=json.dumps(data), fmt="eccv_json", source="ECCV")
    assert (report["labels"], report["positives"]) == (2, 2)
    assert set(Label.objects.filter(method="external").values_list("pair__caption__source_id", flat=True)) == {
        "770337",
        "12",
    }


@pytest.mark.parametrize(
    ("content", "fmt", "message"),
    [
        ("a,b\n1,2\n", "cxc_csv", "columns"),
        ("caption,image,agg_score\n770337,391895,seven\n", "cxc_csv", "cannot be read"),
        ("{not json", "eccv_json", "not valid JSON"),
        ('{"i2t": {"1": 2}}', "eccv_json", "list"),
        ('{"i2t": {"5": [6]}}', "eccv_json", "None of the file"),
        ("x", "xml", "format"),
    ],
)
def test_bad_imports_get_clear_messages(content, fmt, message):
    campaign = CampaignFactory()
    _dataset_pair(campaign)
    with pytest.raises(ApplicationError) as error:
        labels_import_external(campaign=campaign, content=content, fmt=fmt, source="x")
    assert message in error.value.message
