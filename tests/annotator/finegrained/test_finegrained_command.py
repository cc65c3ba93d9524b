"""`manage.py finegrained`: every fine-grained step after the enlargement from the command line, on the
synthetic scenes: the verification campaign, the coarse captions, a refinement from a proposals file, the
renovated benchmark, and the old-versus-new comparison that refuses a run which never saw the new gallery."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.finegrained.services.pools.enlargement import enlargement_add, enlargement_request
from annotator.finegrained.services.pools.imports import pool_import
from annotator.models import Campaign, CampaignStatus, GalleryAddition, LabelSet, RankingRun, Refinement, RunStatus
from annotator.ranking.services.annotators import annotator_register
from annotator.scenarios.verification_crowd import four_choice_crowd_work
from tests import factories
from tests.annotator.finegrained.pool_support import PoolWorld
from workers.ranking.pipeline import ranking_run_execute

pytestmark = pytest.mark.django_db


def _run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("finegrained", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_every_fine_grained_step_runs_from_the_command_line(tmp_path, django_capture_on_commit_callbacks):
    world = PoolWorld(tmp_path, images=24, pool_size=30, owner=factories.user_with_role("requester"))
    run = RankingRun.objects.create(
        dataset=world.dataset, annotator=annotator_register(name="tfidf_pivot", kind="tfidf_pivot"), top_k=25
    )
    assert ranking_run_execute(run.pk) == RunStatus.SUCCEEDED
    pool = pool_import(dataset=world.dataset, name="aux", images_path=world.pool_dir)
    with django_capture_on_commit_callbacks(execute=True):
        enlargement = enlargement_request(pool=pool, image_annotator="visual", keep=2)
    enlargement.refresh_from_db()
    enlargement = enlargement_add(enlargement=enlargement)
    assert GalleryAddition.objects.filter(enlargement=enlargement).exists()

    out, _ = _run(
        "verify",
        "--enlargement",
        str(enlargement.pk),
        "--redundancy",
        "1",
        "--candidates-per-hit",
        "8",
        "--qualification-items",
        "0",
        "--launch",
    )
    campaign = Campaign.objects.get(name=f"Verify the images added by enlargement {enlargement.pk}")
    assert campaign.status == CampaignStatus.LIVE and f"Campaign {campaign.pk}" in out and campaign.hits.exists()
    four_choice_crowd_work(campaign=campaign, truth_of=lambda pair: world.describes(pair.caption_id, pair.image))
    with pytest.raises(CommandError, match="verified by campaign"):
        _run("verify", "--enlargement", str(enlargement.pk))

    out, err = _run("coarse", "--dataset", world.dataset.name, "--runs", str(run.pk), "--rule", "any")
    coarse = json.loads(out)["coarse"]
    assert coarse and "coarse caption" in err and {"caption_id", "source_id"} <= set(coarse[0])

    proposals = tmp_path / "proposals.csv"
    proposals.write_text(
        "caption_id,proposal\n" + "".join(f"{c['source_id']},{c['text']} in the picture\n" for c in coarse[:3])
    )
    out, _ = _run(
        "refine",
        "--dataset",
        world.dataset.name,
        "--name",
        "cli",
        "--proposals",
        str(proposals),
        "--scorer",
        "",
        "--launch",
    )
    refinement = Refinement.objects.get(name="cli")
    assert refinement.status == "live" and f"Refinement {refinement.pk}" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("caption_id,proposal\nnope,a caption\n")
    with pytest.raises(CommandError, match="bad row"):
        _run("refine", "--dataset", world.dataset.name, "--name", "bad", "--proposals", str(bad), "--scorer", "")

    out, _ = _run("benchmark", "--dataset", world.dataset.name, "--name", "fg-cli")
    label_set = LabelSet.objects.get(name="fg-cli")
    assert f"Label set {label_set.pk}" in out

    out, err = _run("compare", "--benchmark", str(label_set.pk))
    result = json.loads(out)
    reasons = {refused["run"]: refused["reason"] for refused in result["refused"]}
    assert result["rows"] == [] and run.pk in reasons and len(reasons) == 2
    assert "before the gallery was enlarged" in reasons[run.pk] and "refused: tfidf_pivot" in err
    # The enlargement's own run lists only added images: no whole gallery, refused as well.
    assert any("none of the original images" in reason for reason in reasons.values())
    with pytest.raises(CommandError, match="not a renovated benchmark"):
        _run("compare", "--benchmark", str(LabelSet.objects.exclude(pk=label_set.pk).first().pk))
