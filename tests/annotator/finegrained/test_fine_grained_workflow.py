"""The whole fine-grained workflow on synthetic scenes: pool, enlargement, verification, coarse captions,
refinement of the coarse ones by a simulated crowd, export of the renovated benchmark, old versus new."""

import json
from datetime import timedelta

import pytest

from annotator.analysis.metrics import evaluate_direction
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_launch
from annotator.finegrained.selectors.coarse import coarse_captions
from annotator.finegrained.services.pools.enlargement import enlargement_add, enlargement_request
from annotator.finegrained.services.pools.imports import pool_import
from annotator.finegrained.services.pools.verification import enlargement_verification_create
from annotator.finegrained.services.refinement.benchmark import (
    benchmark_export,
    benchmark_json_chunks,
)
from annotator.finegrained.services.refinement.compare import _old_labels, benchmark_compare, coverage_problem
from annotator.finegrained.services.refinement.proposals import (
    proposals_generate,
    refinement_create,
    refinement_filter,
    refinement_launch,
)
from annotator.labels.selectors.labelsets import ranking_run_rankings
from annotator.models import CaptionVersion, GalleryAddition, RankingRun, RunStatus, VersionSource
from annotator.ranking.services.annotators import annotator_register
from annotator.research.services.uploaded_rankings import ranking_run_upload
from annotator.scenarios.verification_crowd import four_choice_crowd_work
from tests import factories
from tests.annotator.finegrained.pool_support import PoolWorld
from tests.annotator.finegrained.refinement_support import crowd_work, new_worker
from workers.ranking.pipeline import ranking_run_execute

pytestmark = pytest.mark.django_db


class _Scenes:
    """What the simulated correction crowd sees: the scene of a proposal's image."""

    def __init__(self, world: PoolWorld):
        self.by_source = {str(scene.image_id): scene for scene in world.scenes}
        self.image_source = world.image_source

    def scene_of(self, proposal):
        return self.by_source[self.image_source[proposal.caption.image_id]]


def test_pool_to_renovated_benchmark(tmp_path, django_capture_on_commit_callbacks):
    world = PoolWorld(tmp_path, owner=factories.user_with_role("requester"))
    owner = world.dataset.owner
    pool = pool_import(dataset=world.dataset, name="aux", images_path=world.pool_dir)
    with django_capture_on_commit_callbacks(execute=True):
        enlargement = enlargement_request(pool=pool, image_annotator="visual", keep=3)
    enlargement.refresh_from_db()
    enlargement = enlargement_add(enlargement=enlargement)
    added = GalleryAddition.objects.filter(enlargement=enlargement).count()
    assert added > 0
    campaign = enlargement_verification_create(
        enlargement=enlargement,
        owner=owner,
        candidates_per_hit=8,
        redundancy=3,
        qualification_items=0,
        qualification_pool_size=0,
        adaptive_redundancy=False,
        label_model="majority",
        machine_prior=False,
    )
    campaign = campaign_launch(campaign=campaign_build(campaign=campaign))
    four_choice_crowd_work(
        campaign=campaign, truth_of=lambda pair: world.describes(pair.caption_id, pair.image), workers=10, seed=1
    )
    run = RankingRun.objects.create(
        dataset=world.dataset, annotator=annotator_register(name="tfidf_pivot", kind="tfidf_pivot"), top_k=25
    )
    assert ranking_run_execute(run.pk) == RunStatus.SUCCEEDED

    coarse = coarse_captions(world.dataset, run_ids=[run.pk], rule="all")
    assert coarse
    refinement = refinement_create(dataset=world.dataset, owner=owner, name="coarse", scorer="")
    scenes = {str(scene.image_id): scene for scene in world.scenes}
    report = proposals_generate(
        refinement=refinement,
        generator="scene_facts",
        context={"scenes": scenes, "gold_every": 5},
        caption_ids=[c.caption_id for c in coarse],
    )
    assert 0 < report["proposals"] <= len(coarse)
    refinement_filter(refinement=refinement)
    refinement.refresh_from_db()
    refinement_launch(refinement=refinement)
    done = crowd_work(_Scenes(world), refinement, new_worker())
    coarse_ids = {c.caption_id for c in coarse}
    refined = CaptionVersion.objects.filter(caption__dataset=world.dataset, version=2)
    assert refined.count() == report["proposals"] and {v.caption_id for v in refined} <= coarse_ids
    assert all(v.source in (VersionSource.PROPOSAL, VersionSource.CORRECTION) for v in refined)
    assert any(a.is_gold for a in done)

    label_set = benchmark_export(dataset=world.dataset, user=owner, name="fg")
    assert label_set.report["gallery"]["added"] == added
    assert label_set.report["verified_positive_pairs"] > 0 and label_set.report["verified_sets"]
    document = json.loads("".join(benchmark_json_chunks(label_set=label_set)))
    assert sum(1 for image in document["images"] if image["added_for"]) == added
    assert {p["source"] for p in document["pairs"]} == {"original", "verified"}

    # A model over the new gallery: the tfidf run's rankings with each image's added look-alikes ranked right
    # after it (brought as rankings). The tfidf run itself sees an image only through its captions, so it can
    # never rank an added image (no caption): refused. A run made before the enlargement: refused.
    _, gallery, added_ids = _old_labels(world.dataset.pk)
    assert len(added_ids) == added
    tfidf_rankings = ranking_run_rankings(run=run)
    assert not rankings_hold_added(tfidf_rankings, added_ids)
    look_alikes: dict[str, list[str]] = {}
    for target, image in (
        GalleryAddition.objects.filter(enlargement=enlargement)
        .order_by("rank")
        .values_list("target__source_id", "image__source_id")
    ):
        look_alikes.setdefault(target, []).append(image)
    enlarged = {
        "i2t": tfidf_rankings["i2t"],
        "t2i": {
            caption: [item for image in ranked for item in (image, *look_alikes.get(image, []))]
            for caption, ranked in tfidf_rankings["t2i"].items()
        },
    }
    model = ranking_run_upload(dataset=world.dataset, name="fg-model", rankings=enlarged, user=owner, top_k=100)
    stale = RankingRun.objects.create(
        dataset=world.dataset, annotator=run.annotator, top_k=25, status=RunStatus.SUCCEEDED
    )
    RankingRun.objects.filter(pk=stale.pk).update(created_at=enlargement.created_at - timedelta(days=1))
    stale.refresh_from_db()
    compared = benchmark_compare(new=label_set, runs=[run, stale, model])
    assert compared["gallery"]["new"] == compared["gallery"]["old"] + added
    assert [row["run"] for row in compared["rows"]] == [model.pk], compared["refused"]
    reasons = {refused["run"]: refused["reason"] for refused in compared["refused"]}
    assert "did not rank the new gallery" in reasons[run.pk]
    assert "before the gallery was enlarged" in reasons[stale.pk]
    row = compared["rows"][0]
    # The same queries on both sides (the original images, every caption): no added image is a query, so
    # i2t moves only by what the verified positives add, and t2i by the look-alikes ranked among the images.
    assert compared["queries"]["i2t"] == len(gallery) == compared["gallery"]["old"]
    assert row["old"]["t2i"]["r1"] is not None and row["new"]["t2i"]["r1"] is not None
    assert row["old"]["i2t"]["r1"] == pytest.approx(
        evaluate_direction(tfidf_rankings["i2t"], _old_labels(world.dataset.pk)[0]["i2t"])[0]["r1"]
    )
    assert coverage_problem(run=model, rankings=enlarged, added=added_ids, enlarged_at=None) is None


def rankings_hold_added(rankings: dict, added: set) -> bool:
    return any(target in added for targets in rankings["t2i"].values() for target in targets)
