"""Post-processing as in ECCV Caption App. C: captions that are not descriptions ("I am unable to see an
image above") are found by heuristics on the text and by the crowd rejecting the caption's own (original)
pair; original pairs the crowd rejects are listed too. Both become CleanupProposals that the requester
confirms or dismisses.
"""

from __future__ import annotations

import re

from django.db import transaction
from django.utils import timezone

from annotator.models import Campaign, Caption, CleanupKind, CleanupProposal, CleanupStatus, Label

# Phrases of captions written by people who saw no picture or did not describe it (ECCV App. C.1 list).
NOT_DESCRIPTION_PATTERNS = [
    (re.compile(r"\b(no|not an?|any)\s+(image|picture|photo)s?\b", re.I), "says there is no image"),
    (
        re.compile(r"\b(unable|can ?not|can'?t|cant|could ?n[o']?t)\s+(to\s+)?(see|view|load|tell)\b", re.I),
        "says it cannot see",
    ),
    (
        re.compile(
            r"\b(blank|empty)\s+(image|picture|page|screen)|\bis\s+(a\s+)?blank\b|\ba blank(\s+every|\s*[.!?]|\s*$)",
            re.I,
        ),
        "mentions a blank image",
    ),
    (re.compile(r"^\s*(why|what|how|where|who)\b.*\b(i|my|me|you)\b", re.I), "a question to someone"),
    (re.compile(r"\b(this|the)\s+(hit|task|page)\b", re.I), "talks about the task"),
    (re.compile(r"\b(i|my|me)\b\s", re.I), "first person"),
    (re.compile(r"\?\s*$"), "a question"),
    (re.compile(r"\b(i\s+don'?t\s+know|no\s+idea)\b", re.I), "does not know"),
]
MIN_WORDS = 3


def caption_not_description_reasons(text: str) -> list[str]:
    """Why a caption looks like it is not a description of an image ([] when it looks fine)."""
    reasons = [reason for pattern, reason in NOT_DESCRIPTION_PATTERNS if pattern.search(text or "")]
    if len((text or "").split()) < MIN_WORDS:
        reasons.append(f"fewer than {MIN_WORDS} words")
    # First person alone is weak evidence ("I see two dogs" is still a description): needs company.
    if reasons == ["first person"]:
        return []
    return reasons


def _crowd_negative_originals(campaign: Campaign) -> dict[int, dict]:
    """Original pairs whose labels say negative, keyed by caption id, with the votes as evidence."""
    result = {}
    labels = Label.objects.filter(pair__campaign=campaign, pair__is_original=True, is_positive=False).select_related(
        "pair"
    )
    for label in labels:
        entry = result.setdefault(
            label.pair.caption_id, {"pair_id": label.pair_id, "methods": {}, "votes": label.answer_count}
        )
        entry["methods"][label.method] = {"choice": label.choice, "confidence": round(label.confidence, 3)}
    return result


def cleanup_detect(*, campaign: Campaign) -> dict:
    """List captions that are not descriptions and original pairs the crowd rejects as CleanupProposals.

    Idempotent: proposals are upserted on (campaign, kind, caption); a proposal the requester already
    decided keeps its decision (its evidence is refreshed). No row locks beyond the unique constraint.
    Returns how many of each kind are proposed.
    """
    rejected = _crowd_negative_originals(campaign)
    created = {CleanupKind.NOT_A_DESCRIPTION: 0, CleanupKind.ORIGINAL_REJECTED: 0}
    with transaction.atomic():
        for caption in Caption.objects.filter(dataset_id=campaign.dataset_id).only("pk", "text", "image_id"):
            reasons = caption_not_description_reasons(caption.text)
            crowd = rejected.get(caption.pk)
            if reasons:
                evidence = {"heuristics": reasons, "text": caption.text[:300]}
                if crowd:
                    evidence["crowd"] = crowd
                _upsert(campaign, CleanupKind.NOT_A_DESCRIPTION, caption, crowd and crowd["pair_id"], evidence)
                created[CleanupKind.NOT_A_DESCRIPTION] += 1
            if crowd:
                evidence = {"crowd": crowd, "text": caption.text[:300]}
                _upsert(campaign, CleanupKind.ORIGINAL_REJECTED, caption, crowd["pair_id"], evidence)
                created[CleanupKind.ORIGINAL_REJECTED] += 1
    return {str(kind): n for kind, n in created.items()}


def _upsert(campaign, kind, caption, pair_id, evidence) -> None:
    proposal, made = CleanupProposal.objects.get_or_create(
        campaign=campaign, kind=kind, caption=caption, defaults={"pair_id": pair_id, "evidence": evidence}
    )
    if not made and (proposal.evidence != evidence or proposal.pair_id != pair_id):
        proposal.evidence, proposal.pair_id = evidence, pair_id
        proposal.save(update_fields=["evidence", "pair_id"])


def cleanup_decide(*, proposal: CleanupProposal, actor, confirm: bool) -> CleanupProposal:
    """The requester confirms the removal or keeps the caption/pair; who and when are kept.

    Locks the proposal row; deciding again overwrites the earlier decision (the new actor and time).
    """
    with transaction.atomic():
        locked = CleanupProposal.objects.select_for_update().get(pk=proposal.pk)
        locked.status = CleanupStatus.CONFIRMED if confirm else CleanupStatus.DISMISSED
        locked.decided_by = actor
        locked.decided_at = timezone.now()
        locked.save(update_fields=["status", "decided_by", "decided_at"])
        return locked


def cleanup_removed_caption_ids(*, campaign: Campaign) -> set[int]:
    """Captions whose removal the requester confirmed (exports leave them and their pairs out)."""
    return set(
        CleanupProposal.objects.filter(campaign=campaign, status=CleanupStatus.CONFIRMED).values_list(
            "caption_id", flat=True
        )
    )
