"""Label-set services on a small dataset: every import format, versions, crowd sets, exports that import
back, evaluation warnings, and bring-your-own-ranking to a new version of a set."""

import gzip
import json

import pytest
from django.db import IntegrityError, transaction

from annotator.campaigns.services.build import campaign_build
from annotator.core.errors import ApplicationError
from annotator.labels.selectors.labelsets import labelset_label_maps, labelset_view
from annotator.labels.services.labelsets.builds import (
    labelset_derive,
    labelset_from_campaign,
    labelset_from_original,
)
from annotator.labels.services.labelsets.exports import labelset_export_chunks
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.labels.services.labelsets.readers import rankings_read
from annotator.models import (
    AggregationMethod,
    Candidate,
    Choice,
    Label,
    LabelSet,
    LabelSetKind,
    Pair,
    RankingRun,
)
from annotator.research.services.labelset_evaluation import evaluate
from annotator.research.services.uploaded_rankings import (
    labelset_merge_campaign,
    labelset_unjudged_campaign,
    ranking_run_upload,
)
from tests import factories
from tests.annotator.campaign_support import make_dataset
from tests.research_helpers import research_campaign

pytestmark = pytest.mark.django_db

# make_dataset: images "100000".."100005", captions "500000".. (five per image: image i has 500000 + 5i + j).
ECCV_MERGED = {"i2t": {"100000": [500000, 500001, 500007]}, "t2i": {"500007": [100001, 100000], "500010": [100002]}}


@pytest.fixture
def dataset():
    return make_dataset(images=6, captions_per_image=5)


def _import(dataset, name, fmt, files, **kwargs):
    return labelset_import(dataset=dataset, name=name, fmt=fmt, files=files, **kwargs)


def _split_files(merged):
    return [
        ("eccv_image_to_caption.json", json.dumps(merged["i2t"]).encode()),
        ("eccv_caption_to_image.json", json.dumps(merged["t2i"]).encode()),
    ]


def test_merged_and_split_eccv_files_give_the_same_set(dataset):
    merged = _import(dataset, "merged", "eccv_json", [("eccv.json", json.dumps(ECCV_MERGED).encode())])
    split = _import(dataset, "split", None, _split_files(ECCV_MERGED))  # the format is read from the names
    assert split.source_format == "eccv_split"
    expected = {
        "i2t": {"100000": ["500000", "500001", "500007"]},
        "t2i": {"500007": ["100000", "100001"], "500010": ["100002"]},
    }
    assert labelset_label_maps(label_set=merged) == labelset_label_maps(label_set=split) == expected
    assert split.stats["i2t"] == {"queries": 1, "queries_with_positives": 1, "positives": 3, "judged": 3}


def test_a_file_listed_by_one_direction_only_is_reported_as_a_conflict(dataset):
    # (100000, 500007) is in the t2i list of caption 500007 and image 100000 is an i2t query without it.
    data = {"i2t": {"100000": [500000]}, "t2i": {"500007": [100000]}}
    label_set = _import(dataset, "odd", "eccv_json", [("x.json", json.dumps(data).encode())])
    assert label_set.report["direction_conflicts"] == 1


def test_unknown_ids_are_reported_with_the_coverage_and_a_file_matching_nothing_is_refused(dataset):
    data = {"i2t": {"100000": [500000, 999999], "777": [500001]}, "t2i": {}}
    label_set = _import(dataset, "partial", "eccv_json", [("x.json", json.dumps(data).encode())])
    assert label_set.report["unknown_ids"] == {"image": 1, "caption": 1}
    assert set(label_set.report["unknown_examples"]) == {"image 777", "caption 999999"}
    assert label_set.report["queries"]["i2t"] == {
        "in_file": 2,
        "matched": 1,
        "coverage_of_file": 0.5,
        "coverage_of_dataset": round(1 / 6, 4),
    }
    with pytest.raises(ApplicationError) as error:
        _import(dataset, "none", "eccv_json", [("x.json", json.dumps({"i2t": {"1": [2]}}).encode())])
    assert "None of the file's ids" in error.value.message
    assert not LabelSet.objects.filter(name="none").exists()


@pytest.mark.parametrize(
    "fmt, files, message",
    [
        ("eccv_json", [("x.json", b"{not json")], "not valid JSON"),
        ("eccv_json", [("x.json", b'{"i2t": {"100000": 5}}')], "must be a list"),
        ("eccv_json", [("x.json", b'{"100000": [500000]}')], "split format"),
        ("eccv_split", [("eccv_image_to_caption.json", json.dumps(ECCV_MERGED).encode())], "merged ECCV file"),
        ("eccv_split", [("labels.json", b"{}")], "says its direction"),
        ("cxc_sits", [("x.csv", b"a,b\n1,2\n")], "needs the columns"),
        ("cxc_sits", [("x.csv", b"caption,image,agg_score\n500000,100000,seven\n")], "cannot be read"),
        ("jsonl", [("x.jsonl", b'{"image": "100000"}\n')], "cannot be read"),
        ("eccv_json", [("x.json", b"\xff\xfe")], "not UTF-8"),
    ],
)
def test_unreadable_files_are_refused_with_a_clear_message(dataset, fmt, files, message):
    with pytest.raises(ApplicationError) as error:
        _import(dataset, "bad", fmt, files)
    assert error.value.status == 400
    assert message in error.value.message + json.dumps(error.value.extra)


def test_cxc_files_use_their_own_thresholds_and_coco_style_ids(dataset):
    sits = (
        "caption,image,agg_score,sampling_method\n"
        "COCO_val2014:sentid:500000,COCO_val2014_000000100000.jpg,4.2,c2i_original\n"
        "COCO_val2014:sentid:500001,COCO_val2014_000000100001.jpg,2.9,c2i_intrasim\n"
    )
    label_set = _import(dataset, "cxc", "cxc_sits", [("sits_test.csv.gz", gzip.compress(sits.encode()))])
    assert label_set.threshold == 3.0
    assert labelset_label_maps(label_set=label_set) == {
        "i2t": {"100000": ["500000"], "100001": []},
        "t2i": {"500000": ["100000"], "500001": []},
    }
    lowered = _import(dataset, "cxc-lenient", "cxc_sits", [("sits.csv", sits.encode())], threshold=2.5)
    assert labelset_label_maps(label_set=lowered)["i2t"]["100001"] == ["500001"]
    sis = "image1,image2,agg_score,sampling_method\n100000,100001,2.6,i2i_csim\n100000,100002,2.4,i2i_csim\n"
    images = _import(dataset, "sis", "cxc_sis", [("sis_test.csv", sis.encode())])
    assert images.threshold == 2.5
    assert labelset_label_maps(label_set=images) == {"i2i": {"100000": ["100001"]}}
    sts = "caption1,caption2,agg_score,sampling_method\n500000,500005,3.5,c2c_isim\n"
    captions = _import(dataset, "sts", None, [("sts_test.csv", sts.encode())])
    assert captions.source_format == "cxc_sts"
    assert labelset_label_maps(label_set=captions) == {"t2t": {"500000": ["500005"]}}


def test_jsonl_import_reads_its_own_export_and_a_campaign_export(dataset):
    lines = [
        {"image": "100000", "caption": "500000", "positive": True, "score": 4.0},
        {"image": "100000", "caption": "500009", "positive": False, "direction": "i2t"},
        {"image": "100003", "caption": "500002", "label": {"is_positive": True, "choice": "yes"}, "stage": "t2i"},
    ]
    content = "\n".join(json.dumps(line) for line in lines).encode()
    first = _import(dataset, "mine", "jsonl", [("pairs.jsonl", content)])
    assert labelset_label_maps(label_set=first) == {
        "i2t": {"100000": ["500000"]},
        "t2i": {"500000": ["100000"], "500002": ["100003"]},
    }
    exported = "".join(labelset_export_chunks(label_set=first, fmt="jsonl")).encode()
    again = _import(dataset, "mine-again", None, [("mine.jsonl", exported)])
    assert labelset_view(label_set=again) == labelset_view(label_set=first)


def test_eccv_exports_import_back_as_the_same_set(dataset):
    original = labelset_from_original(dataset=dataset)
    merged = "".join(labelset_export_chunks(label_set=original, fmt="eccv_json"))
    assert json.loads(merged)["i2t"]["100000"] == [500000, 500001, 500002, 500003, 500004]  # integers, as released
    split = [
        (name, "".join(labelset_export_chunks(label_set=original, fmt="eccv_split", direction=d)).encode())
        for d, name in (("i2t", "eccv_image_to_caption.json"), ("t2i", "eccv_caption_to_image.json"))
    ]
    for label_set in (
        _import(dataset, "from-merged", "eccv_json", [("o.json", merged.encode())]),
        _import(dataset, "from-split", "eccv_split", split),
    ):
        assert labelset_label_maps(label_set=label_set) == labelset_label_maps(label_set=original)
    rows = "".join(labelset_export_chunks(label_set=original, fmt="csv")).splitlines()
    assert rows[0].startswith("kind,image,caption")
    assert len(rows) == 1 + 30


def test_a_campaigns_eccv_export_imports_as_its_crowd_set_with_the_verified_negatives():
    """The campaign export's `verified_negatives` field is read as judged pairs that are not positive, so the
    file imports as the same set as the campaign's own crowd set (positives, negatives and queries)."""
    import io

    from annotator.labels.services.exports.write import labels_write

    campaign = research_campaign()
    out = io.BytesIO()
    labels_write(
        out=out, campaign_id=campaign.pk, format="eccv_json", method="majority", variant="lenient", merge_original=False
    )
    assert json.loads(out.getvalue())["verified_negatives"]["i2t"] == {"1": [32], "2": [12]}
    imported = _import(campaign.dataset, "from-campaign", "eccv_json", [("eccv.json", out.getvalue())])
    view = labelset_view(label_set=imported)
    assert view == labelset_view(label_set=labelset_from_campaign(campaign=campaign))
    assert sorted(view.pairs.values()) == [False, False, True, True, True, True, True]
    # The crowd set's own ECCV export carries the same negatives and imports back as the same set.
    crowd = labelset_from_campaign(campaign=campaign)
    exported = json.loads("".join(labelset_export_chunks(label_set=crowd, fmt="eccv_json")))
    assert exported["verified_negatives"] == {"i2t": {"1": [32], "2": [12]}, "t2i": {}}
    again = _import(campaign.dataset, "again", "eccv_json", [("again.json", json.dumps(exported).encode())])
    assert labelset_view(label_set=again) == view
    with pytest.raises(ApplicationError, match="verified_negatives"):
        _import(campaign.dataset, "bad", "eccv_json", [("b.json", b'{"i2t": {}, "verified_negatives": {"x": {}}}')])


def test_a_second_import_of_a_name_is_a_new_version_and_the_first_is_untouched(dataset):
    first = _import(dataset, "eccv", "eccv_json", [("a.json", json.dumps(ECCV_MERGED).encode())])
    before = labelset_view(label_set=first)
    second = _import(dataset, "eccv", "eccv_json", [("b.json", json.dumps({"i2t": {"100001": [500005]}}).encode())])
    assert (second.version, second.parent_id) == (2, first.pk)
    assert labelset_view(label_set=LabelSet.objects.get(pk=first.pk)) == before


def test_crowd_set_judges_the_pooled_queries_not_the_gold_ones():
    campaign = research_campaign()
    image_3 = campaign.dataset.images.get(source_id="3")
    gold = factories.PairFactory(
        campaign=campaign,
        image=image_3,
        caption=image_3.captions.get(source_id="31"),
        direction="i2t",
        is_original=True,
    )
    factories.LabelFactory(pair=gold, method="majority", choice=Choice.YES)
    lenient = labelset_from_campaign(campaign=campaign)
    strict = labelset_from_campaign(campaign=campaign, variant="strict")
    assert lenient.kind == LabelSetKind.CROWD and lenient.method == "majority"
    assert lenient.annotators == ["tfidf"]
    maps = labelset_label_maps(label_set=lenient)
    # Image 3 was only ever a gold item: no query. (1, 22) came from the t2i stage and answers for image 1 too.
    assert maps["i2t"] == {"1": ["11", "21", "22", "31"], "2": []}
    assert maps["t2i"] == {"22": ["1", "3"]}
    assert lenient.report["pairs_outside_queries"] == 1
    assert labelset_label_maps(label_set=strict)["i2t"] == {"1": ["11", "21"], "2": []}


def test_a_derived_set_of_sets_on_different_datasets_is_refused(dataset):
    one = labelset_from_original(dataset=dataset)
    other = labelset_from_original(dataset=make_dataset(images=2, captions_per_image=1))
    with pytest.raises(ApplicationError, match="same dataset"):
        labelset_derive(operands=[one, other], operation="union", name="mixed")


def test_the_database_refuses_a_crowd_set_without_a_campaign(dataset):
    with pytest.raises(IntegrityError), transaction.atomic():
        LabelSet.objects.create(
            dataset=dataset, name="x", kind=LabelSetKind.CROWD, method="majority", variant="lenient"
        )


def test_names_must_be_tokens(dataset):
    with pytest.raises(ApplicationError, match="not a usable label set name"):
        labelset_from_original(dataset=dataset, name="two words")


def test_rankings_files_with_other_directions_and_bad_shapes():
    assert rankings_read(raw=b'{"t2t": {"1": [2, "3"]}}') == {"t2t": {"1": ["2", "3"]}}
    for raw, message in (
        (b"[]", "JSON object"),
        (b'{"x2y": {}}', "unknown keys"),
        (b'{"i2t": {"1": 2}}', "list of ids"),
    ):
        with pytest.raises(ApplicationError, match=message):
            rankings_read(raw=raw)


def test_a_label_file_may_carry_verified_negatives_and_a_rankings_file_may_not():
    """One reader for both: an exported ECCV JSON reads as a label map without its negatives."""
    exported = b'{"i2t": {"1": [11]}, "t2i": {}, "verified_negatives": {"i2t": {"1": [12]}, "t2i": {}}}'
    assert rankings_read(raw=exported, what="label file", negatives_allowed=True) == {"i2t": {"1": ["11"]}, "t2i": {}}
    with pytest.raises(ApplicationError, match="unknown keys"):
        rankings_read(raw=exported)


def test_bring_your_own_ranking_to_a_new_version_of_the_set(dataset):
    """Upload a model's rankings, send its unjudged top k to the crowd, merge the verdicts: version 2 has the
    new positives, version 1 is as it was."""
    owner = factories.user_with_role("requester", username="byor-owner")
    eccv = _import(dataset, "eccv", "eccv_json", [("a.json", json.dumps(ECCV_MERGED).encode())])
    rankings = {"i2t": {"100000": ["500000", "500012", "500001", "500020"]}, "t2i": {"500007": ["100000", "100004"]}}
    run = ranking_run_upload(dataset=dataset, name="my-model", rankings=rankings, user=owner, top_k=3)
    assert run.annotator.kind == "uploaded" and run.top_k == 3
    assert Candidate.objects.filter(run=run).count() == 5

    outcome = evaluate(label_set=eccv, rankings=rankings, model_name="my-model")
    assert outcome["scores"]["i2t"]["r1"] == 1.0
    assert any("cover 1 of the 2 queries" in warning for warning in outcome["warnings"])

    campaign = labelset_unjudged_campaign(label_set=eccv, run=run, k=3, owner=owner, candidates_per_hit=1)
    pending = RankingRun.objects.get(pk=campaign.runs.get().pk)
    assert sorted(pending.candidates.values_list("direction", "rank")) == [("i2t", 2), ("t2i", 2)]
    assert campaign.direction == "both" and campaign.status == "draft"
    campaign = campaign_build(campaign=campaign)
    caption_500012 = dataset.captions.get(source_id="500012")
    for pair in Pair.objects.filter(campaign=campaign):
        positive = pair.caption_id == caption_500012.pk or pair.caption.image_id == pair.image_id
        Label.objects.create(
            pair=pair,
            method=AggregationMethod.MAJORITY,
            choice=Choice.YES if positive else Choice.NO,
            is_positive=positive,
            is_positive_strict=positive,
            confidence=1.0,
            answer_count=1,
        )
    merged = labelset_merge_campaign(label_set=eccv, campaign=campaign, user=owner)
    assert (merged.name, merged.version, merged.parent_id) == ("eccv", 2, eccv.pk)
    # Gold positives of the campaign are original pairs, which the crowd confirms: they join too.
    gold = {
        p.caption.source_id
        for p in Pair.objects.filter(campaign=campaign, image__source_id="100000").select_related("caption")
        if p.caption.image_id == p.image_id
    }
    expected = sorted({"500000", "500001", "500007", "500012"} | gold)
    assert labelset_label_maps(label_set=merged)["i2t"]["100000"] == expected
    assert labelset_label_maps(label_set=eccv)["i2t"]["100000"] == ["500000", "500001", "500007"]
    assert labelset_view(label_set=merged).queries == labelset_view(label_set=eccv).queries
    with pytest.raises(ApplicationError) as error:
        labelset_unjudged_campaign(label_set=merged, run=run, k=3, owner=owner)
    assert error.value.status == 409


def test_an_operand_cannot_be_deleted_alone_but_its_dataset_can(dataset):
    from django.db.models import RestrictedError

    one = labelset_from_original(dataset=dataset, name="one")
    two = _import(dataset, "two", "eccv_json", [("a.json", json.dumps(ECCV_MERGED).encode())])
    labelset_derive(operands=[one, two], operation="union", name="both")
    with pytest.raises(RestrictedError), transaction.atomic():
        one.delete()
    dataset.delete()
    assert not LabelSet.objects.filter(name__in=["one", "two", "both"]).exists()
