"""Exports and evaluation leave out captions whose removal the requester confirmed (post-processing, ECCV App. C).

In research_campaign: caption "22" (kind original_rejected) and "12" (kind not_description) are removed;
"21" is only proposed and "31" was kept (dismissed), so both stay.
"""

import csv
import io
import json
import zipfile

import pytest

from annotator import models
from annotator.labels.services.exports.eccv import eccv_label_map
from annotator.labels.services.exports.write import labels_write
from annotator.research.services.evaluation import campaign_evaluate, original_label_map
from tests import factories
from tests.research_helpers import EXPECTED, LABELLED_PAIRS, eccv_positives, research_campaign

pytestmark = pytest.mark.django_db

REMOVED = {"22", "12"}
# EXPECTED without captions 22 and 12: "22" was the only t2i query, "12" only an added original of image 1.
EXPECTED_AFTER_REMOVAL = {
    ("lenient", False): {"i2t": {"1": [11, 21, 31]}, "t2i": {}},
    ("strict", False): {"i2t": {"1": [11, 21]}, "t2i": {}},
    ("lenient", True): {"i2t": {"1": [11, 21, 31], "2": [21]}, "t2i": {}},
}
KEPT_PAIRS = [(image, caption) for image, caption, _, _ in LABELLED_PAIRS if caption not in REMOVED]


def propose(campaign, caption_source, *, kind=models.CleanupKind.NOT_A_DESCRIPTION, status):
    caption = models.Caption.objects.get(dataset=campaign.dataset, source_id=caption_source)
    pair = campaign.pairs.filter(caption=caption, is_original=True).first()
    return models.CleanupProposal.objects.create(
        campaign=campaign,
        kind=kind,
        caption=caption,
        status=status,
        pair=pair if kind == models.CleanupKind.ORIGINAL_REJECTED else None,
    )


def with_cleanup(campaign):
    """Confirm the removal of 22 and 12, leave 21 proposed, dismiss 31 (and a removal of 11 in another campaign)."""
    propose(campaign, "22", kind=models.CleanupKind.ORIGINAL_REJECTED, status=models.CleanupStatus.CONFIRMED)
    propose(campaign, "12", status=models.CleanupStatus.CONFIRMED)
    propose(campaign, "21", status=models.CleanupStatus.PROPOSED)
    propose(campaign, "31", kind=models.CleanupKind.ORIGINAL_REJECTED, status=models.CleanupStatus.DISMISSED)
    other = factories.CampaignFactory(dataset=campaign.dataset)  # same captions: its decisions are its own
    propose(other, "11", status=models.CleanupStatus.CONFIRMED)
    return campaign


def export_bytes(campaign, fmt, variant="lenient", merge_original=False) -> bytes:
    out = io.BytesIO()
    labels_write(
        out=out, campaign_id=campaign.pk, format=fmt, method="majority", variant=variant, merge_original=merge_original
    )
    return out.getvalue()


@pytest.mark.parametrize(("variant", "merge"), list(EXPECTED_AFTER_REMOVAL))
def test_eccv_json_leaves_out_removed_captions_as_queries_positives_and_originals(variant, merge):
    campaign = with_cleanup(research_campaign())
    expected = EXPECTED_AFTER_REMOVAL[(variant, merge)]
    exported = json.loads(export_bytes(campaign, "eccv_json", variant, merge))
    assert eccv_positives(exported) == expected
    negatives = exported["verified_negatives"]
    assert "12" not in negatives["t2i"] and all(12 not in ids for ids in negatives["i2t"].values())


def test_eccv_split_leaves_out_removed_captions():
    campaign = with_cleanup(research_campaign())
    with zipfile.ZipFile(io.BytesIO(export_bytes(campaign, "eccv_split", merge_original=True))) as archive:
        expected = EXPECTED_AFTER_REMOVAL[("lenient", True)]["i2t"]
        assert json.loads(archive.read("eccv_image_to_caption.json")) == expected
        assert json.loads(archive.read("eccv_caption_to_image.json")) == {}


def test_proposed_and_dismissed_removals_change_no_export():
    campaign = research_campaign()
    propose(campaign, "22", kind=models.CleanupKind.ORIGINAL_REJECTED, status=models.CleanupStatus.PROPOSED)
    propose(campaign, "12", status=models.CleanupStatus.DISMISSED)
    for variant, merge in EXPECTED:
        assert (
            eccv_positives(json.loads(export_bytes(campaign, "eccv_json", variant, merge)))
            == EXPECTED[(variant, merge)]
        )
    assert len(export_bytes(campaign, "jsonl").decode().splitlines()) == len(LABELLED_PAIRS)


def test_jsonl_leaves_out_the_pairs_of_removed_captions():
    campaign = with_cleanup(research_campaign())
    lines = [json.loads(line) for line in export_bytes(campaign, "jsonl").decode().splitlines()]
    assert [(line["image"], line["caption"]) for line in lines] == KEPT_PAIRS
    assert [answer["comment"] for line in lines for answer in line["answers"]] == [
        f"<b>{caption}</b>" for _, caption in KEPT_PAIRS
    ]  # the answers still follow their own pairs


def test_cxc_csv_leaves_out_the_pairs_of_removed_captions():
    campaign = with_cleanup(research_campaign(scale=models.Scale.SIMILARITY))
    rows = list(csv.reader(io.StringIO(export_bytes(campaign, "cxc_csv").decode())))
    assert [(image, caption) for caption, image, _, _ in rows[1:]] == KEPT_PAIRS


@pytest.mark.parametrize("removed_side", ["caption", "other_caption"])
def test_caption_caption_pairs_go_when_either_caption_is_removed(removed_side):
    campaign = factories.CampaignFactory(direction=models.CampaignDirection.T2T, scale=models.Scale.SIMILARITY)
    first, second, third = (
        factories.CaptionFactory(image__dataset=campaign.dataset, source_id=source) for source in ("a", "b", "c")
    )
    for caption, other_caption in [(first, second), (first, third)]:
        pair = models.Pair.objects.create(
            campaign=campaign, kind=models.PairKind.CAPTION_CAPTION, caption=caption, other_caption=other_caption
        )
        factories.LabelFactory(pair=pair, method="majority", score=4.0)
    removed = first if removed_side == "caption" else second
    models.CleanupProposal.objects.create(
        campaign=campaign,
        kind=models.CleanupKind.NOT_A_DESCRIPTION,
        caption=removed,
        status=models.CleanupStatus.CONFIRMED,
    )
    lines = [json.loads(line) for line in export_bytes(campaign, "jsonl").decode().splitlines()]
    rows = list(csv.reader(io.StringIO(export_bytes(campaign, "cxc_csv").decode())))
    if removed_side == "caption":
        assert lines == [] and rows == [["caption1", "caption2", "agg_score", "sampling_method"]]
    else:
        assert [(line["caption"], line["other_caption"]) for line in lines] == [("a", "c")]
        assert [row[:2] for row in rows[1:]] == [["a", "c"]]


def test_evaluation_counts_a_removed_caption_as_no_positive():
    """The verified label map is the export's; the original pairs leave out removed captions too."""
    campaign = with_cleanup(research_campaign())
    labels = eccv_label_map(campaign_id=campaign.pk, method="majority", variant="lenient", merge_original=True)
    assert labels == {
        direction: {key: [str(target) for target in targets] for key, targets in expected.items()}
        for direction, expected in EXPECTED_AFTER_REMOVAL[("lenient", True)].items()
    }
    assert original_label_map(campaign=campaign, queries={"i2t": {"1": [], "2": []}, "t2i": {"22": []}}) == {
        "i2t": {"1": ["11"], "2": ["21"]},
        "t2i": {},
    }
    # A model that ranks the removed caption first misses at R@1, against the verified and the original labels.
    outcome = campaign_evaluate(campaign=campaign, rankings={"i2t": {"1": ["22", "12", "11"]}, "t2i": {}})
    assert outcome["verified"]["i2t"]["r1"] == 0.0 and outcome["verified"]["t2i"]["r1"] is None
    assert outcome["original"]["i2t"]["r1"] == 0.0 and outcome["original"]["i2t"]["r5"] == 1.0
