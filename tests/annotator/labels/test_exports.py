"""Label exports: ECCV JSON (one file and the released split), JSONL, CSV, Crisscrossed CSV, jobs."""

import csv
import io
import json
import zipfile

import pytest

from annotator import models
from annotator.core.errors import ApplicationError
from annotator.labels.services.exports.jobs import export_create
from annotator.labels.services.exports.write import labels_write
from tests import factories
from tests.research_helpers import EXPECTED, LABELLED_PAIRS, eccv_positives, research_campaign

pytestmark = pytest.mark.django_db


def export_bytes(campaign, fmt, variant="lenient", merge_original=False, method="majority") -> bytes:
    out = io.BytesIO()
    labels_write(
        out=out, campaign_id=campaign.pk, format=fmt, method=method, variant=variant, merge_original=merge_original
    )
    return out.getvalue()


@pytest.mark.parametrize(("variant", "merge"), list(EXPECTED))
def test_eccv_json_holds_the_positives_of_each_query(variant, merge):
    """i2t keys are the image queries, t2i keys the caption queries; lenient/strict/merged as specified."""
    campaign = research_campaign()
    data = json.loads(export_bytes(campaign, "eccv_json", variant, merge))
    assert {k: data[k] for k in ("i2t", "t2i")} == EXPECTED[(variant, merge)]


def test_eccv_split_is_the_two_released_files():
    campaign = research_campaign()
    with zipfile.ZipFile(io.BytesIO(export_bytes(campaign, "eccv_split"))) as archive:
        assert sorted(archive.namelist()) == [
            "eccv_caption_to_image.json",
            "eccv_caption_to_image_negatives.json",
            "eccv_image_to_caption.json",
            "eccv_image_to_caption_negatives.json",
        ]
        assert json.loads(archive.read("eccv_image_to_caption.json")) == EXPECTED[("lenient", False)]["i2t"]
        assert json.loads(archive.read("eccv_caption_to_image.json")) == EXPECTED[("lenient", False)]["t2i"]


def test_other_methods_and_campaigns_are_not_exported():
    campaign = research_campaign()
    other = research_campaign()
    factories.LabelFactory(pair=campaign.pairs.get(caption__source_id="32"), method="dawid_skene")
    exported = json.loads(export_bytes(campaign, "eccv_json", method="dawid_skene"))
    assert {k: exported[k] for k in ("i2t", "t2i")} == {"i2t": {"1": [32]}, "t2i": {}}
    exported = json.loads(export_bytes(other, "eccv_json"))
    assert {k: exported[k] for k in ("i2t", "t2i")} == EXPECTED[("lenient", False)]


@pytest.mark.parametrize(
    ("image", "caption"),
    [("img-a", "cap 7"), ("a\tb\\c", 'say "hi"\nthere'), ("émoji 🙂", "007"), ("-12", "0")],
)
def test_non_numeric_source_ids_are_json_strings(image, caption):
    """Ids that are not plain integers (leading zeros, tabs, quotes, backslashes, non-ASCII) stay exact strings."""
    campaign = factories.CampaignFactory()
    pair = factories.PairFactory(campaign=campaign, image__source_id=image, caption__source_id=caption)
    factories.LabelFactory(pair=pair)
    text = export_bytes(campaign, "eccv_json").decode()
    as_value = (lambda v: int(v)) if caption in ("0",) else str
    assert json.loads(text) == {
        "i2t": {image: [as_value(caption)]},
        "t2i": {caption: [int(image) if image == "-12" else image]},
        "verified_negatives": {"i2t": {}, "t2i": {}},
    }


def test_jsonl_has_every_approved_answer_provenance_label_and_pseudonym():
    campaign = research_campaign()
    lines = [json.loads(line) for line in export_bytes(campaign, "jsonl").decode().splitlines()]
    assert len(lines) == len(LABELLED_PAIRS)
    first = lines[0]
    assert (first["image"], first["caption"], first["stage"], first["is_original"]) == ("1", "11", "i2t", True)
    assert first["provenance"] == [
        {
            "annotator": "tfidf",
            "annotator_kind": "tfidf_pivot",
            "run": first["provenance"][0]["run"],
            "direction": "i2t",
            "rank": 1,
            "score": pytest.approx(0.9),
        }
    ]
    assert first["label"]["choice"] == "yes" and first["label"]["confidence"] == 0.75
    assert first["answers"] == [
        {
            "worker": "w-alpha",
            "choice": "yes",
            "score": None,
            "shortcomings": [],
            "wrong_aspects": [],
            "comment": "<b>11</b>",
            "seconds_spent": 3.0,
        }
    ]
    partial = next(line for line in lines if line["caption"] == "31")
    assert partial["answers"][0]["shortcomings"] == ["extra_concepts"]


def test_jsonl_leaves_out_answers_of_assignments_not_approved():
    campaign = research_campaign()
    models.Assignment.objects.filter(hit__campaign=campaign).update(status=models.AssignmentStatus.REJECTED)
    lines = [json.loads(line) for line in export_bytes(campaign, "jsonl").decode().splitlines()]
    assert len(lines) == len(LABELLED_PAIRS)
    assert all(line["answers"] == [] for line in lines)


def test_cxc_csv_for_similarity_campaigns():
    campaign = research_campaign(scale=models.Scale.SIMILARITY)
    models.Label.objects.filter(pair__campaign=campaign).update(score=3.5)
    rows = list(csv.reader(io.StringIO(export_bytes(campaign, "cxc_csv").decode())))
    # Crisscrossed Captions' own columns; positives are read off agg_score (>= 3 here) as in CxC's files.
    assert rows[0] == ["caption", "image", "agg_score", "sampling_method"]
    assert rows[1] == ["11", "1", "3.5", "c2i_original"]
    assert rows[2] == ["21", "1", "3.5", "c2i_intrasim"]  # a pooled pair: CxC's name, not c2i_pool
    assert len(rows) == 1 + len(LABELLED_PAIRS)


def test_cxc_csv_is_refused_for_four_choice_campaigns():
    campaign = research_campaign()
    with pytest.raises(ApplicationError, match="similarity"):
        export_create(campaign=campaign, user=campaign.owner, format="cxc_csv")


def test_export_job_runs_and_stores_a_file(django_capture_on_commit_callbacks):
    """With eager Celery the job runs on commit and ends succeeded with a stored file."""
    campaign = research_campaign()
    with django_capture_on_commit_callbacks(execute=True):
        job = export_create(campaign=campaign, user=campaign.owner, format="eccv_json", variant="strict")
    job.refresh_from_db()
    assert job.status == models.ExportStatus.SUCCEEDED
    assert job.method == "majority" and job.rows == 2
    with job.file.open("rb") as stored:
        assert eccv_positives(json.loads(stored.read())) == EXPECTED[("strict", False)]
    assert job.size_bytes == job.file.size


def test_the_default_method_is_the_campaigns_label_model_not_plain_dawid_skene():
    """Aggregation writes labels of several methods; an export that names none gets the campaign's label model
    (the posterior by default), as the research page promises, not Dawid-Skene, which overturns majorities
    on sparse workers."""
    from annotator.labels.selectors.labels import label_method_resolve

    campaign = research_campaign()
    assert campaign.label_model == "posterior"
    for method in ("dawid_skene", "posterior", "gold_weighted"):
        for label in models.Label.objects.filter(pair__campaign=campaign, method="majority"):
            factories.LabelFactory(pair=label.pair, method=method, choice=label.choice)
    assert label_method_resolve(campaign=campaign, method=None) == "posterior"
    job = export_create(campaign=campaign, user=campaign.owner, format="jsonl")
    assert job.method == "posterior"
    campaign.label_model = "gold_weighted"
    campaign.save()
    assert label_method_resolve(campaign=campaign, method=None) == "gold_weighted"
    campaign.label_model = "mace"  # chosen, but no labels of it yet: the posterior
    campaign.save()
    assert label_method_resolve(campaign=campaign, method=None) == "posterior"
    assert label_method_resolve(campaign=campaign, method="dawid_skene") == "dawid_skene"


def test_export_of_a_campaign_without_labels_is_refused():
    campaign = factories.CampaignFactory()
    with pytest.raises(ApplicationError, match="no labels"):
        export_create(campaign=campaign, user=campaign.owner, format="eccv_json")


def _with_probabilities(campaign):
    """Give each label of `campaign` a P(positive) and a 90% interval that say which pair it is."""
    for label in models.Label.objects.filter(pair__campaign=campaign):
        p = 0.9 if label.is_positive else 0.1
        label.probability, label.probability_low, label.probability_high = p, p - 0.05, p + 0.05 + label.pair_id / 1e6
        label.save()


def test_csv_has_a_row_per_labelled_pair_with_the_probability_and_its_interval():
    campaign = research_campaign(method="posterior")
    _with_probabilities(campaign)
    rows = list(csv.DictReader(io.StringIO(export_bytes(campaign, "csv", method="posterior").decode())))
    assert len(rows) == len(LABELLED_PAIRS)
    for row in rows:
        label = models.Label.objects.get(pair_id=int(row["pair_id"]), method="posterior")
        assert (float(row["probability"]), float(row["probability_low"]), float(row["probability_high"])) == (
            label.probability,
            label.probability_low,
            label.probability_high,
        )
        assert row["verified"] == ("positive" if label.is_positive else "negative")
        assert row["is_positive"] == str(int(label.is_positive)) and row["method"] == "posterior"
        assert row["score_low"] == row["score_high"] == ""  # four choices: no score interval
    first = rows[0]
    assert (first["image"], first["caption"], first["stage"], first["is_original"]) == ("1", "11", "i2t", "1")


def test_jsonl_carries_the_probability_and_its_interval():
    campaign = research_campaign(method="posterior")
    _with_probabilities(campaign)
    lines = [json.loads(line) for line in export_bytes(campaign, "jsonl", method="posterior").decode().splitlines()]
    for line in lines:
        label = models.Label.objects.get(pair_id=line["pair_id"], method="posterior")
        assert line["label"]["probability"] == label.probability
        assert line["label"]["interval_90"] == [label.probability_low, label.probability_high]


def test_the_csv_of_a_similarity_campaign_carries_the_means_interval():
    campaign = research_campaign(scale=models.Scale.SIMILARITY, method="mean")
    models.Label.objects.filter(pair__campaign=campaign).update(
        score=3.5, score_low=2.9, score_high=4.1, probability=0.8
    )
    rows = list(csv.DictReader(io.StringIO(export_bytes(campaign, "csv", method="mean").decode())))
    assert {(r["score"], r["score_low"], r["score_high"], r["probability"]) for r in rows} == {
        ("3.5", "2.9", "4.1", "0.8")
    }


def test_verified_negatives_appear_in_every_format():
    """Negatives are explicit: a field of the ECCV JSON, companion files of the split, a verdict per JSONL
    line and per CSV row; the ECCV positives keep their form."""
    campaign = research_campaign()
    negatives = models.Label.objects.filter(pair__campaign=campaign, method="majority", is_positive=False)
    negative = negatives.select_related("pair__image", "pair__caption").first()
    assert negative is not None
    image, caption = negative.pair.image.source_id, negative.pair.caption.source_id
    data = json.loads(export_bytes(campaign, "eccv_json"))
    listed = data["verified_negatives"]["i2t"].get(image, []) + data["verified_negatives"]["t2i"].get(caption, [])
    assert int(caption) in listed or int(image) in listed
    assert int(caption) not in data["i2t"].get(image, [])
    with zipfile.ZipFile(io.BytesIO(export_bytes(campaign, "eccv_split"))) as archive:
        split = {
            **json.loads(archive.read("eccv_image_to_caption_negatives.json")),
            **json.loads(archive.read("eccv_caption_to_image_negatives.json")),
        }
    assert int(caption) in split.get(image, []) or int(image) in split.get(caption, [])
    lines = [json.loads(line) for line in export_bytes(campaign, "jsonl").decode().splitlines()]
    verdicts = {line["pair_id"]: line["verified"] for line in lines}
    assert verdicts[negative.pair_id] == "negative"
    assert set(verdicts.values()) == {"positive", "negative"}
    similarity = research_campaign(scale=models.Scale.SIMILARITY)
    models.Label.objects.filter(pair__campaign=similarity, is_positive=False).update(score=1.0)
    models.Label.objects.filter(pair__campaign=similarity, is_positive=True).update(score=4.0)
    rows = list(csv.reader(io.StringIO(export_bytes(similarity, "cxc_csv").decode())))
    assert {float(row[2]) >= 3.0 for row in rows[1:]} == {True, False}  # CxC's positives: agg_score >= 3
    rows = list(csv.DictReader(io.StringIO(export_bytes(campaign, "csv").decode())))
    assert {row["pair_id"]: row["verified"] for row in rows}[str(negative.pair_id)] == "negative"
    assert {row["verified"] for row in rows} == {"positive", "negative"}
