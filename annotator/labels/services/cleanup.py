"""Post-processing as in ECCV Caption App. C: captions that are not descriptions ("I am unable to see an
image above") are found by heuristics on the text (`annotator.analysis.caption_cleanup`) and by the crowd
rejecting the caption's own (original) pair; original pairs the crowd rejects are listed too. Both become
CleanupProposals that the requester confirms or dismisses.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotator.analysis.caption_cleanup import caption_not_description_reasons
from annotator.campaigns.models.campaign import Campaign
from annotator.datasets.models.dataset import Caption
from annotator.labels.models.cleanup import CleanupKind, CleanupProposal, CleanupStatus
from annotator.labels.models.labels import Label


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
