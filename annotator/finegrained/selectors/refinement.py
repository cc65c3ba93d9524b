"""Reads for caption refinement: current caption texts, a caption's history, a refinement's counts."""

from __future__ import annotations

from django.db.models import Count, OuterRef, Subquery

from annotator.datasets.models.dataset import Caption, Dataset
from annotator.finegrained.models.refinement import (
    CaptionVersion,
    CorrectionAssignment,
    CorrectionStatus,
    Refinement,
    RefinementProposal,
)


def caption_texts_current(*, dataset: Dataset) -> dict[int, str]:
    """caption pk -> its current text: the highest version where it has versions, else the original."""
    latest = CaptionVersion.objects.filter(caption=OuterRef("pk")).order_by("-version").values("text")[:1]
    rows = (
        Caption.objects.filter(dataset=dataset).annotate(current=Subquery(latest)).values_list("pk", "text", "current")
    )
    return {pk: current if current is not None else text for pk, text, current in rows}


def refined_caption_texts(*, dataset: Dataset) -> tuple[list[str], list[str]]:
    """MSCOCO-FG Table 3's two text types: (the coarse texts, the refined texts) of every caption of `dataset`
    that has a text after its original, in caption order: its original (version 1) and its latest version."""
    coarse, refined = [], []
    current: dict[int, list] = {}
    for caption_id, version, text in (
        CaptionVersion.objects.filter(caption__dataset=dataset)
        .order_by("caption_id", "version")
        .values_list("caption_id", "version", "text")
    ):
        current.setdefault(caption_id, []).append((version, text))
    for versions in current.values():
        if len(versions) > 1:
            coarse.append(versions[0][1])
            refined.append(versions[-1][1])
    return coarse, refined


def caption_text_current(*, caption: Caption) -> str:
    latest = CaptionVersion.objects.filter(caption=caption).order_by("-version").values_list("text", flat=True).first()
    return latest if latest is not None else " ".join(caption.text.split())


def caption_versions(*, caption: Caption) -> list[CaptionVersion]:
    """Every version of a caption, oldest first; a caption never refined has its original as version 1."""
    versions = list(
        CaptionVersion.objects.filter(caption=caption)
        .select_related("worker", "approved_by", "proposal")
        .order_by("version")
    )
    if not versions:
        versions = [CaptionVersion(caption=caption, version=1, text=caption.text, source="original")]
    return versions


def refinement_counts(*, refinement: Refinement) -> dict:
    proposals = RefinementProposal.objects.filter(refinement=refinement)
    by_status = dict(proposals.filter(gold="").values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    by_gold = dict(proposals.exclude(gold="").values_list("gold").annotate(n=Count("pk")).values_list("gold", "n"))
    corrections = CorrectionAssignment.objects.filter(proposal__refinement=refinement)
    by_correction = dict(corrections.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    return {
        "proposals": by_status,
        "gold": by_gold,
        "corrections": by_correction,
        "to_review": by_correction.get(CorrectionStatus.REVIEW, 0),
    }


def refinement_review_queue(*, refinement: Refinement) -> list[CorrectionAssignment]:
    return list(
        CorrectionAssignment.objects.filter(proposal__refinement=refinement, status=CorrectionStatus.REVIEW)
        .select_related("proposal", "proposal__caption", "worker")
        .order_by("submitted_at")
    )


def refinements_live_for_workers() -> list[Refinement]:
    return list(Refinement.objects.filter(status="live").select_related("dataset").order_by("created_at"))
