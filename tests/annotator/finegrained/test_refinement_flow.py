"""Refinement on synthetic scenes: proposals from the scene_facts generator and an uploaded file, filtered
by tfidf_pivot, corrected by a simulated crowd, stored as caption versions and exported."""

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.core.errors import ApplicationError
from annotator.finegrained.services.refinement.benchmark import (
    benchmark_csv_chunks,
    benchmark_export,
    benchmark_json_chunks,
)
from annotator.finegrained.services.refinement.corrections import (
    correction_claim,
    correction_decide,
    correction_submit,
)
from annotator.finegrained.services.refinement.proposals import (
    proposals_generate,
    proposals_import,
    refinement_create,
    refinement_filter,
    refinement_launch,
)
from annotator.models import (
    CaptionVersion,
    CorrectionStatus,
    LabelSetPair,
    ProposalStatus,
    RefinementProposal,
    RefinementStatus,
    VersionSource,
)
from annotator.scenarios import synthetic
from tests.annotator.finegrained.refinement_support import RefinementWorld, crowd_work, new_worker

pytestmark = pytest.mark.django_db(transaction=True)


def _wrong_colour(world, caption):
    """A proposal that gives the caption's first named object a colour it does not have."""
    scene = world.scenes[world.image_source[caption.image_id]]
    words = caption.text.rstrip(".").split()
    for group in scene["groups"]:
        for noun in (group["kind"], synthetic.PLURALS[group["kind"]]):
            if noun in words:
                wrong = next(c for c in sorted(synthetic.COLORS) if c != group["color"])
                at = words.index(noun)
                if words[at - 1] in synthetic.COLORS:
                    words[at - 1] = wrong
                else:
                    words.insert(at, wrong)
                return " ".join(words) + ".", wrong, group["color"]
    return None


def _wrong_rows(world, captions):
    rows, truth = [], {}
    for caption in captions:
        text, wrong, right = _wrong_colour(world, caption)
        rows.append({"caption_id": caption.source_id, "proposal": text})
        truth[caption.pk] = (wrong, right)
    return SimpleUploadedFile("p.jsonl", "\n".join(json.dumps(r) for r in rows).encode()), truth


def test_filter_keeps_proposals_that_beat_the_original_and_prefers_true_facts(tmp_path):
    """tfidf_pivot scores (proposal, own image) against (original, own image); a true added fact survives
    more often than a wrong colour, which the image's other captions never mention."""
    world = RefinementWorld(tmp_path)
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="fg", scorer="tfidf_pivot")
    proposals_generate(refinement=refinement, generator="scene_facts", context={"scenes": world.scenes})
    upload, _truth = _wrong_rows(world, list(world.dataset.captions.order_by("pk")[:120:4]))
    proposals_import(refinement=refinement, upload=upload)
    refinement = refinement_filter(refinement=refinement)  # eager Celery: scored at once
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.READY, refinement.error
    kept = RefinementProposal.objects.filter(refinement=refinement, status=ProposalStatus.KEPT)
    dropped = RefinementProposal.objects.filter(refinement=refinement, status=ProposalStatus.DROPPED)
    assert kept.exists() and dropped.exists()
    assert all(p.proposal_score > p.original_score for p in kept)
    assert all(p.proposal_score <= p.original_score for p in dropped)
    generated = RefinementProposal.objects.filter(refinement=refinement, generator="scene_facts")
    uploaded = RefinementProposal.objects.filter(refinement=refinement, generator="upload")
    true_share = generated.filter(status=ProposalStatus.KEPT).count() / generated.count()
    wrong_share = uploaded.filter(status=ProposalStatus.KEPT).count() / uploaded.count()
    assert true_share > wrong_share
    assert refinement.report["filter"]["kept"] == kept.count()


def test_corrected_refinement_is_a_new_version_and_is_exported(tmp_path):
    world = RefinementWorld(tmp_path)
    # No filter here (the requester may skip it), so the known-wrong proposals reach the crowd.
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="fg", scorer="")
    report = proposals_generate(
        refinement=refinement, generator="scene_facts", context={"scenes": world.scenes, "gold_every": 6}
    )
    assert report["proposals"] > 50 and report["gold"] > 0
    # Some captions get a known-wrong proposal from a file instead: the crowd must correct those.
    upload, truth = _wrong_rows(world, list(world.dataset.captions.order_by("pk")[:40:13]))
    assert proposals_import(refinement=refinement, upload=upload)["proposals"] == len(truth)
    refinement = refinement_filter(refinement=refinement)
    assert refinement.status == RefinementStatus.READY

    refinement_launch(refinement=refinement)
    careful = new_worker()
    done = crowd_work(world, refinement, careful)
    assert done and all(a.status == CorrectionStatus.APPROVED for a in done)
    assert any(a.is_gold and a.gold_passed for a in done)

    for caption_pk, (wrong, right) in truth.items():
        proposal = RefinementProposal.objects.get(refinement=refinement, caption_id=caption_pk, gold="")
        versions = list(CaptionVersion.objects.filter(caption_id=caption_pk).order_by("version"))
        assert [v.version for v in versions] == [1, 2]
        assert versions[0].source == VersionSource.ORIGINAL and versions[0].text == proposal.original_text
        latest = versions[-1]
        assert latest.source == VersionSource.CORRECTION and latest.worker == careful
        assert wrong not in latest.text.split() and right in latest.text.split()
        assert latest.edit_distance and latest.edit_distance <= len(wrong) + len(right)
    accepted = CaptionVersion.objects.filter(caption__dataset=world.dataset, source=VersionSource.PROPOSAL)
    assert accepted.exists() and all(v.edit_distance == 0 for v in accepted)

    label_set = benchmark_export(dataset=world.dataset, user=world.requester, name="fg-renovated")
    refined = CaptionVersion.objects.filter(caption__dataset=world.dataset, version__gt=1)
    assert label_set.report["captions"]["refined"] == refined.count()
    assert LabelSetPair.objects.filter(label_set=label_set, is_positive=True).count() >= world.dataset.captions.count()
    document = json.loads("".join(benchmark_json_chunks(label_set=label_set)))
    by_id = {c["id"]: c for c in document["captions"]}
    corrected = refined.filter(source=VersionSource.CORRECTION).select_related("caption").first()
    assert corrected is not None
    row = by_id[corrected.caption.source_id]
    assert row["text"] == corrected.text and row["version"] == 2 and row["source"] == "correction"
    assert row["original_text"] == corrected.caption.text
    table = list(csv.DictReader(io.StringIO("".join(benchmark_csv_chunks(label_set=label_set)))))
    own = [r for r in table if r["caption_id"] == corrected.caption.source_id and r["source"] == "original"]
    assert own and own[0]["caption_text"] == corrected.text and own[0]["caption_version"] == "2"


def test_failed_gold_goes_to_review_and_a_rejection_frees_nothing_into_versions(tmp_path):
    world = RefinementWorld(tmp_path, images=12, seed=8)
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="fg", scorer="")
    proposals_generate(
        refinement=refinement, generator="scene_facts", context={"scenes": world.scenes, "gold_every": 3}
    )
    refinement_filter(refinement=refinement)
    refinement.refresh_from_db()
    refinement_launch(refinement=refinement)
    careless = new_worker()
    done = crowd_work(world, refinement, careless, careful=False, limit=12)
    failed = [a for a in done if a.is_gold and a.gold_passed is False]
    assert failed and all(a.status == CorrectionStatus.REVIEW for a in failed)
    # After failing gold, the careless worker's real work waits for review too, and is no version yet.
    later = [a for a in done if not a.is_gold and a.submitted_at > failed[0].submitted_at]
    assert later and all(a.status == CorrectionStatus.REVIEW for a in later)
    assert not CaptionVersion.objects.filter(worker=careless).exists()
    approved = correction_decide(assignment=later[0], user=world.requester, approve=True)
    assert approved.status == CorrectionStatus.APPROVED
    version = CaptionVersion.objects.get(worker=careless)
    assert version.approved_by == world.requester and version.version == 2
    correction_decide(assignment=later[1], user=world.requester, approve=False, reason="careless")
    with pytest.raises(ApplicationError):
        correction_decide(assignment=later[1], user=world.requester, approve=True)
    # The rejected proposal is free again for another worker.
    assert crowd_work(world, refinement, new_worker(), limit=50)


def test_bad_proposal_files_are_refused_with_the_rows(tmp_path):
    world = RefinementWorld(tmp_path, images=6, seed=2)
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="fg")
    source = world.dataset.captions.first().source_id
    body = f"caption_id,proposal,gold\n{source},A finer one.,\nnope,Text,\n{source},,\n{source},x,maybe\n"
    with pytest.raises(ApplicationError) as error:
        proposals_import(refinement=refinement, upload=SimpleUploadedFile("p.csv", body.encode()))
    lines = {e["line"] for e in error.value.extra["errors"]}
    assert lines == {2, 3, 4}
    assert not RefinementProposal.objects.filter(refinement=refinement).exists()
    with pytest.raises(ApplicationError, match="header"):
        proposals_import(refinement=refinement, upload=SimpleUploadedFile("p.csv", b"id,text\n1,a\n"))
    with pytest.raises(ApplicationError, match="not JSON"):
        proposals_import(refinement=refinement, upload=SimpleUploadedFile("p.jsonl", b"{nope\n"))


def test_putting_the_original_back_is_an_approved_answer_that_adds_no_version(tmp_path):
    """A worker who finds the proposal wrong and restores the original text: approved, the caption stays."""
    world = RefinementWorld(tmp_path, images=6, seed=9)
    caption = world.dataset.captions.order_by("pk").first()
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="fg", scorer="")
    upload = SimpleUploadedFile(
        "p.jsonl", json.dumps({"caption_id": caption.source_id, "proposal": "Nonsense."}).encode()
    )
    proposals_import(refinement=refinement, upload=upload)
    refinement_filter(refinement=refinement)
    refinement_launch(refinement=refinement)
    worker = new_worker()
    assignment = correction_claim(refinement=refinement, worker=worker)
    done = correction_submit(assignment=assignment, worker=worker, text=f"  {caption.text} ")
    assert done.status == CorrectionStatus.APPROVED and done.action == "correct" and done.edit_distance > 0
    assert not CaptionVersion.objects.filter(caption=caption).exists()
    assert RefinementProposal.objects.get(pk=assignment.proposal_id).status == ProposalStatus.DONE
    assert correction_claim(refinement=refinement, worker=new_worker()) is None
