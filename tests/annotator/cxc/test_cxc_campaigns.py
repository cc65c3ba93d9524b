"""Crisscrossed Captions end to end: caption-caption (STS) and image-image (SIS) campaigns sampled through the
other modality from real ranking runs, rated by the simulated crowd, aggregated and exported."""

import csv
import io

import pytest
from django.core.management import call_command

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.core.errors import ApplicationError
from annotator.crowd.scales import campaign_scale
from annotator.labels.services.aggregation import labels_aggregate
from annotator.labels.services.exports.write import labels_write
from annotator.models import HitItem, ItemRole, Label, Pair, PairSource
from annotator.research.selectors.cxc_analysis import campaign_cxc_analysis
from annotator.scenarios.similarity import similarity_crowd_work
from tests import factories
from tests.annotator.cxc.support import SyntheticWorld

pytestmark = pytest.mark.django_db

COMMON = {
    "scale": "similarity",
    "sampling": "cxc",
    "pool_depth": 3,
    "gold_exclusion_depth": 25,
    "candidates_per_hit": 8,
    "redundancy": 5,
    "qualification_items": 0,
    "qualification_pool_size": 0,
    "adaptive_redundancy": False,
    "label_model": "mean",
    "machine_prior": False,
    "sample_count": 12,
    "seed": 7,
}


@pytest.fixture
def world(tmp_path):
    return SyntheticWorld(tmp_path, owner=factories.UserFactory())


def _campaign(world, direction, **options):
    owner = world.dataset.owner
    runs = list(world.runs.values())
    options = {"name": f"cxc {direction}", **COMMON, **options}
    campaign = campaign_create(owner=owner, dataset=world.dataset, runs=runs, direction=direction, **options)
    return campaign_build(campaign=campaign)


def _export(campaign) -> list[dict]:
    out = io.BytesIO()
    labels_write(out=out, campaign_id=campaign.pk, format="cxc_csv", method="mean", variant="", merge_original=False)
    return list(csv.DictReader(io.StringIO(out.getvalue().decode())))


def test_caption_pairs_come_from_image_similarity_and_co_captions_and_are_rated_end_to_end(world):
    campaign = _campaign(world, "t2t")
    pairs = Pair.objects.filter(campaign=campaign, hit_items__role=ItemRole.CANDIDATE).distinct()
    methods = {p.sampling_method for p in pairs}
    assert {"c2c_isim", "c2c_cocaption", "c2c_random"} <= methods
    own = {c: i for i, cs in world.captions_of.items() for c in cs}
    from annotator.models import Caption

    owner_image = dict(Caption.objects.filter(dataset=world.dataset).values_list("pk", "image_id"))
    for pair in pairs:
        assert pair.caption_id != pair.other_caption_id  # the diagonal is zero
        same_image = owner_image[pair.caption_id] == owner_image[pair.other_caption_id]
        assert same_image == (pair.sampling_method == "c2c_cocaption")
    # Model-proposed pairs keep the visual run's provenance; co-captions and random pairs have none.
    visual = world.runs["visual"]
    isim = pairs.filter(sampling_method="c2c_isim")
    assert isim.exists() and not isim.exclude(sources__run=visual).exists()
    assert not PairSource.objects.filter(pair__in=pairs.exclude(sampling_method="c2c_isim")).exists()
    stage = campaign.build_report["stages"][0]
    assert stage["sampling"]["c2c_isim"] and stage["sampling"]["c2c_cocaption"]
    assert own  # the truth is there

    # The same seed samples the same pairs.
    again = _campaign(world, "t2t", name="cxc t2t again")

    def sampled(c):
        return sorted(Pair.objects.filter(campaign=c).values_list("caption_id", "other_caption_id", "sampling_method"))

    assert sampled(again) == sampled(campaign)

    campaign_launch(campaign=campaign)
    assert campaign_scale(campaign=campaign)["task"].startswith("Semantic Textual Similarity")
    done = similarity_crowd_work(campaign=campaign, true_score=world.pair_similarity, workers=30, seed=1)
    assert done["submitted"] == 5 * campaign.hits.count() == done["approved"] + done["flagged"]
    labels_aggregate(campaign=campaign, method="mean")
    labels = Label.objects.filter(pair__campaign=campaign, method="mean").select_related("pair")
    assert labels.exists()
    candidates = set(pairs.values_list("pk", flat=True))
    for label in labels:
        if label.pair_id in candidates:  # five ratings per HIT it sits in (the last HIT is topped up)
            assert label.answer_count % 5 == 0 or done["flagged"]
        assert label.is_positive == (label.score >= 3.0)
    # Five noisy ratings averaged land near the truth, and co-captions rate higher than random pairs.
    averaged = [label for label in labels if label.answer_count >= 5]
    assert len(averaged) > len(labels) / 2
    for label in averaged:  # flagged work waits for the requester; five approved ratings are near the truth
        assert abs(label.score - world.pair_similarity(label.pair)) < 0.9
    mean = lambda method: [l.score for l in labels if l.pair.sampling_method == method]  # noqa: E731,E741
    average = lambda values: sum(values) / len(values)  # noqa: E731
    assert average(mean("c2c_cocaption")) > 3 > average(mean("c2c_random"))

    # CxC's analyses: the spread of each pair's ratings, and the visual run's agreement with the raters.
    analysis = campaign_cxc_analysis(campaign=campaign, samples=100)
    assert analysis["task"] == "STS" and analysis["spread"]["pairs"] > 0
    assert 0.2 < analysis["spread"]["mean_sd"] < 0.8  # the raters' noise is 0.5
    assert [run["annotator"] for run in analysis["runs"]] == ["visual"]
    assert analysis["runs"][0]["queries"] > 0

    rows = _export(campaign)
    assert list(rows[0]) == ["caption1", "caption2", "agg_score", "sampling_method"]
    assert {r["sampling_method"] for r in rows} == {"c2c_isim", "c2c_cocaption"}  # CxC's names only


def test_image_pairs_come_from_caption_similarity_and_positives_start_at_two_and_a_half(world):
    campaign = _campaign(world, "i2i", gold_positives_per_hit=0, random_pair_share=0.2)
    pairs = Pair.objects.filter(campaign=campaign, hit_items__role=ItemRole.CANDIDATE).distinct()
    assert {p.sampling_method for p in pairs} == {"i2i_csim", "i2i_random"}
    tfidf = world.runs["tfidf_pivot"]
    assert not pairs.filter(sampling_method="i2i_csim").exclude(sources__run=tfidf).exists()
    assert all(p.image_id != p.other_image_id for p in pairs)
    assert campaign.positive_at == 2.5
    campaign_launch(campaign=campaign)
    assert campaign_scale(campaign=campaign)["task"].startswith("Semantic Image Similarity")
    done = similarity_crowd_work(campaign=campaign, true_score=world.pair_similarity, workers=30, seed=2)
    assert done["submitted"] == 5 * campaign.hits.count() == done["approved"] + done["flagged"]
    labels_aggregate(campaign=campaign, method="mean")
    labels = list(Label.objects.filter(pair__campaign=campaign, method="mean"))
    assert labels and all(label.is_positive == (label.score >= 2.5) for label in labels)
    assert any(2.5 <= label.score < 3.0 for label in labels) or all(
        label.score < 2.5 or label.score >= 3 for label in labels
    )
    rows = _export(campaign)
    assert list(rows[0]) == ["image1", "image2", "agg_score", "sampling_method"]


def test_a_campaign_threshold_overrides_cxcs(world):
    campaign = _campaign(world, "i2i", gold_positives_per_hit=0, similarity_positive_at=4.0)
    assert campaign.positive_at == 4.0


def test_cxc_sampling_needs_the_other_modality(world):
    owner = world.dataset.owner
    with pytest.raises(ApplicationError, match="visual or clip"):
        campaign = campaign_create(
            owner=owner,
            dataset=world.dataset,
            runs=[world.runs["tfidf_pivot"]],
            name="no images",
            direction="t2t",
            **COMMON,
        )
        campaign_build(campaign=campaign)
    # Image-caption campaigns sample CxC's SITS way (c2i_intrasim, tests/annotator/cxc/test_c2i_intrasim.py).


def test_build_campaign_command_builds_t2t_and_i2i(world):
    out = io.StringIO()
    runs = ",".join(str(r.pk) for r in world.runs.values())
    call_command(
        "build_campaign",
        "--dataset",
        world.dataset.name,
        "--runs",
        runs,
        "--name",
        "sts cli",
        "--direction",
        "t2t",
        "--sampling",
        "cxc",
        "--pool-depth",
        "3",
        "--sample-count",
        "10",
        "--gold-exclusion-depth",
        "25",
        stdout=out,
    )
    assert "sampled: c2c_cocaption" in out.getvalue()
    out = io.StringIO()
    call_command(
        "build_campaign",
        "--dataset",
        world.dataset.name,
        "--runs",
        runs,
        "--name",
        "sis cli",
        "--direction",
        "i2i",
        "--pool-depth",
        "3",
        "--gold-exclusion-depth",
        "25",
        stdout=out,
    )
    assert "stage i2i" in out.getvalue() and "built" in out.getvalue()
    assert HitItem.objects.filter(hit__campaign__name="sis cli").exists()
