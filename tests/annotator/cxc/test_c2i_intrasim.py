"""Crisscrossed Captions' SITS sampling (c2i_intrasim): image-caption pairs through intramodal similarity, half
from caption-similarity ranks and half from image-similarity ranks, built, rated, aggregated and exported
with CxC's name; on the form's option, the API and build_campaign."""

import csv
import io

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.analysis.cxc_c2i_sampling import c2i_intrasim_sample, intrasim_neighbours
from annotator.analysis.pooling import CandidateRows
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.campaigns.services.options import OPTION_HELP
from annotator.core.errors import ApplicationError
from annotator.labels.services.aggregation import labels_aggregate
from annotator.labels.services.exports.write import labels_write
from annotator.models import (
    Campaign,
    Candidate,
    Caption,
    HitItem,
    ItemRole,
    Label,
    MachineAnnotator,
    Pair,
    PairSource,
    Role,
)
from annotator.scenarios.similarity import similarity_crowd_work
from tests import factories
from tests.annotator.cxc.support import SyntheticWorld


def _rows(run: int, query: int, targets: list[int]) -> CandidateRows:
    n = len(targets)
    return CandidateRows(
        np.full(n, run, dtype=np.int64),
        np.full(n, query, dtype=np.int64),
        np.asarray(targets, dtype=np.int64),
        np.arange(1, n + 1, dtype=np.int64),
        np.linspace(0.9, 0.5, n),
    )


# Known structure: image 1's neighbours by its captions are 2, 3, 4 (and itself, never chosen); by its pixels
# 2, 5, 6. Image k has captions 10k+1 and 10k+2.
BY_CAPTION = _rows(run=7, query=1, targets=[1, 2, 3, 4])
BY_IMAGE = _rows(run=8, query=1, targets=[2, 5, 6])
CAPTIONS = {k: [10 * k + 1, 10 * k + 2] for k in range(1, 7)}


def test_half_from_caption_similarity_half_from_image_similarity_skipping_the_chosen_and_itself():
    chosen = intrasim_neighbours(caption_rows=BY_CAPTION, image_rows=BY_IMAGE, image=1, depth=4)
    assert [(run, image) for run, image, _score in chosen] == [(7, 2), (7, 3), (8, 5), (8, 6)]
    # One side short: the other fills in, still never the image itself.
    only_captions = intrasim_neighbours(caption_rows=BY_CAPTION, image_rows=_rows(8, 9, [1]), image=1, depth=4)
    assert [image for _run, image, _score in only_captions] == [2, 3, 4]


def test_an_image_query_gets_a_caption_of_each_neighbour_and_a_caption_query_the_neighbour_images():
    rows = c2i_intrasim_sample(
        direction="i2t",
        caption_rows=BY_CAPTION,
        image_rows=BY_IMAGE,
        queries=np.array([1]),
        depth=4,
        rng=np.random.default_rng(5),
        captions_of=CAPTIONS,
    )
    assert rows.query.tolist() == [1, 1, 1, 1] and rows.rank.tolist() == [1, 2, 3, 4]
    assert [target // 10 for target in rows.target.tolist()] == [2, 3, 5, 6]  # a caption of each neighbour
    assert rows.run.tolist() == [7, 7, 8, 8]  # the run that proposed the neighbour
    again = c2i_intrasim_sample(
        direction="i2t",
        caption_rows=BY_CAPTION,
        image_rows=BY_IMAGE,
        queries=np.array([1]),
        depth=4,
        rng=np.random.default_rng(5),
        captions_of=CAPTIONS,
    )
    assert again.target.tolist() == rows.target.tolist()  # seeded

    t2i = c2i_intrasim_sample(
        direction="t2i",
        caption_rows=BY_CAPTION,
        image_rows=BY_IMAGE,
        queries=np.array([11, 12]),
        depth=3,
        rng=np.random.default_rng(5),
        captions_of=CAPTIONS,
        image_of_caption={11: 1, 12: 1},
    )
    assert t2i.query.tolist() == [11, 11, 11, 12, 12, 12]
    assert t2i.target.tolist() == [2, 3, 5, 2, 3, 5]  # depth 3: two by captions, one by pixels
    with pytest.raises(ValueError, match="i2t and t2i"):
        c2i_intrasim_sample(
            direction="t2t",
            caption_rows=BY_CAPTION,
            image_rows=BY_IMAGE,
            queries=np.array([1]),
            depth=3,
            rng=np.random.default_rng(0),
            captions_of=CAPTIONS,
        )


@pytest.fixture
def world(tmp_path):
    return SyntheticWorld(tmp_path, images=30, owner=factories.UserFactory())


def _neighbours(world, image: int, depth: int) -> set[int]:
    """The images either run ranks in its top depth + 1 for `image` (its own image may take one rank)."""
    return set(
        Candidate.objects.filter(
            run__in=world.runs.values(), direction="i2i", query_id=image, rank__lte=depth + 1
        ).values_list("target_id", flat=True)
    ) - {image}


@pytest.mark.django_db
def test_a_sits_campaign_samples_c2i_intrasim_pairs_end_to_end(world, client):
    owner = world.dataset.owner
    campaign = campaign_create(
        owner=owner,
        dataset=world.dataset,
        runs=list(world.runs.values()),
        name="sits",
        direction="i2t",
        scale="similarity",
        sampling="cxc",
        pool_depth=4,
        candidates_per_hit=8,
        redundancy=5,
        label_model="mean",
        qualification_items=0,
        qualification_pool_size=0,
        adaptive_redundancy=False,
        machine_prior=False,
        sample_count=10,
        seed=11,
    )
    campaign = campaign_build(campaign=campaign)
    candidates = Pair.objects.filter(campaign=campaign, hit_items__role=ItemRole.CANDIDATE).distinct()
    assert candidates.count() >= 20
    assert {p.sampling_method for p in candidates} == {"c2i_intrasim"}
    image_of = dict(Caption.objects.filter(dataset=world.dataset).values_list("pk", "image_id"))
    tfidf, visual = world.runs["tfidf_pivot"], world.runs["visual"]
    proposers = set()
    for pair in candidates:
        caption_image = image_of[pair.caption_id]
        assert caption_image != pair.image_id  # never the query's own caption: not an original pair
        assert caption_image in _neighbours(world, pair.image_id, campaign.pool_depth)
        proposers |= set(PairSource.objects.filter(pair=pair).values_list("run_id", flat=True))
    assert proposers == {tfidf.pk, visual.pk}  # half by caption similarity, half by image similarity
    queries = set(HitItem.objects.filter(hit__campaign=campaign).values_list("pair__image_id", flat=True))
    for image in queries:  # each query: pool_depth pairs (unless its neighbours run short)
        assert candidates.filter(image_id=image).count() <= campaign.pool_depth
    assert campaign.build_report["stages"][0]["sampling"]["c2i_intrasim"] == candidates.count()
    if not hasattr(owner, "profile"):
        factories.ProfileFactory(user=owner, role=Role.REQUESTER)
    client.force_login(owner)
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert f"c2i_intrasim {candidates.count()}" in page and "half by caption similarity" in page
    assert "co-captions" not in page  # the caption-caption wording is not this campaign's

    # The same seed samples the same pairs.
    again = campaign_create(
        owner=owner,
        dataset=world.dataset,
        runs=list(world.runs.values()),
        name="sits again",
        **{
            name: getattr(campaign, name)
            for name in (
                "direction",
                "scale",
                "sampling",
                "pool_depth",
                "candidates_per_hit",
                "redundancy",
                "label_model",
                "qualification_items",
                "qualification_pool_size",
                "adaptive_redundancy",
                "machine_prior",
                "sample_count",
                "seed",
            )
        },
    )
    again = campaign_build(campaign=again)

    def sampled(c):
        return sorted(Pair.objects.filter(campaign=c).values_list("image_id", "caption_id", "sampling_method"))

    assert sampled(again) == sampled(campaign)

    # Rated (true SITS: 4.5 for a caption that describes the image, 1 otherwise), averaged, exported.
    campaign_launch(campaign=campaign)

    def truth(pair):
        return 4.5 if pair.caption_id in world.captions_of.get(pair.image_id, set()) else 1.0

    similarity_crowd_work(campaign=campaign, true_score=truth, workers=30, seed=3)
    labels_aggregate(campaign=campaign, method="mean")
    assert Label.objects.filter(pair__in=candidates, method="mean").exists()
    out = io.BytesIO()
    labels_write(out=out, campaign_id=campaign.pk, format="cxc_csv", method="mean", variant="", merge_original=False)
    rows = list(csv.DictReader(io.StringIO(out.getvalue().decode())))
    assert rows and {row["sampling_method"] for row in rows} <= {"c2i_intrasim", "c2i_original"}
    assert "c2i_intrasim" in {row["sampling_method"] for row in rows}


@pytest.mark.django_db
def test_caption_queries_build_from_the_command_and_the_api_takes_the_sampling(world):
    runs = ",".join(str(run.pk) for run in world.runs.values())
    out = io.StringIO()
    call_command(
        "build_campaign",
        *("--dataset", world.dataset.name, "--runs", runs, "--name", "sits t2i", "--direction", "t2i"),
        *("--scale", "similarity", "--sampling", "cxc", "--pool-depth", "3", "--sample-count", "8"),
        *("--gold-exclusion-depth", "25", "--qualification-items", "0"),
        stdout=out,
    )
    assert "c2i_intrasim" in out.getvalue()
    campaign = Campaign.objects.get(name="sits t2i")
    candidates = Pair.objects.filter(campaign=campaign, hit_items__role=ItemRole.CANDIDATE).distinct()
    image_of = dict(Caption.objects.filter(dataset=world.dataset).values_list("pk", "image_id"))
    assert candidates.exists() and {p.sampling_method for p in candidates} == {"c2i_intrasim"}
    for pair in candidates:
        assert pair.image_id in _neighbours(world, image_of[pair.caption_id], campaign.pool_depth)

    requester = world.dataset.owner
    if not hasattr(requester, "profile"):
        factories.ProfileFactory(user=requester, role=Role.REQUESTER)
    requester.profile.role = Role.REQUESTER
    requester.profile.save()
    api = APIClient()
    api.force_authenticate(requester)
    answer = api.post(
        "/api/v1/campaigns/",
        {
            "dataset": world.dataset.pk,
            "runs": [run.pk for run in world.runs.values()],
            "name": "api sits",
            "direction": "both",
            "preset": "cxc",
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    both = Campaign.objects.get(pk=answer.json()["id"])
    assert both.sampling == "cxc"  # the preset samples SITS CxC's way
    both.sample_count = 5
    both.save(update_fields=["sample_count"])
    both = campaign_build(campaign=both)
    stages = both.build_report["stages"]
    assert [stage["direction"] for stage in stages] == ["i2t", "t2i"]
    assert all(set(stage["sampling"]) == {"c2i_intrasim"} for stage in stages)
    asked = Pair.objects.filter(campaign=both, hit_items__role=ItemRole.CANDIDATE).distinct()
    assert asked.exists() and set(asked.values_list("sampling_method", flat=True)) == {"c2i_intrasim"}
    assert "c2i_intrasim" in OPTION_HELP["sampling"]


@pytest.mark.django_db
def test_sits_sampling_needs_an_intramodal_run(world):
    campaign = campaign_create(
        owner=world.dataset.owner,
        dataset=world.dataset,
        runs=list(world.runs.values()),
        name="refused",
        direction="i2t",
        scale="similarity",
        sampling="cxc",
        pool_depth=3,
        qualification_items=0,
        qualification_pool_size=0,
        sample_count=4,
    )
    # Neither run ranks images by captions or pixels any more (as if both were uploaded rankings).
    MachineAnnotator.objects.filter(pk__in=[run.annotator_id for run in world.runs.values()]).update(kind="uploaded")
    with pytest.raises(ApplicationError, match="intramodal similarity"):
        campaign_build(campaign=campaign)
