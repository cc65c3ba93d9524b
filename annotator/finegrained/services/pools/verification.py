"""Verifying the added images: an added image that its target's captions also describe is a new positive,
not an assumed negative (MSCOCO-FG Sec. 3.1 leaves this to chance; Vericap asks the crowd).

The enlargement's similarities become a ranking run of the annotator `enlargement-<id>` (kind
`enlargement`): for every caption of a target, the images added for that target, best first. A
caption-to-image campaign over that run is the ordinary machinery: pooling to `pool_depth` (all of them by
default), gold positives and negatives, packing, the four-choice answers, review and aggregation. Its
positive labels are the verified positives (selectors.pools.enlargement_verified_positives).
"""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Caption
from annotator.finegrained.models.pools import EnlargementStatus, GalleryAddition, GalleryEnlargement
from annotator.ranking.models.ranking import AnnotatorKind, Candidate, MachineAnnotator, RankingRun, RunStatus


def enlargement_ranking_run(*, enlargement: GalleryEnlargement) -> RankingRun:
    """The enlargement's caption-to-image candidates as a succeeded ranking run (one per enlargement:
    called again it returns the same run). Each caption of a target gets the images added for it, ranked
    by the enlargement's fused score."""
    annotator, _ = MachineAnnotator.objects.get_or_create(
        name=f"enlargement-{enlargement.pk}", defaults={"kind": AnnotatorKind.ENLARGEMENT}
    )
    existing = RankingRun.objects.filter(annotator=annotator, dataset_id=enlargement.dataset_id).first()
    if existing is not None:
        return existing
    added: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for target_id, image_id, score in GalleryAddition.objects.filter(enlargement=enlargement).values_list(
        "target_id", "image_id", "score"
    ):
        added[target_id].append((image_id, score))
    rows = []
    for caption_id, image_id in Caption.objects.filter(image_id__in=list(added)).values_list("pk", "image_id"):
        ordered = sorted(added[image_id], key=lambda item: (-item[1], item[0]))
        rows.extend((caption_id, target, rank, score) for rank, (target, score) in enumerate(ordered, start=1))
    if not rows:
        raise ApplicationError("The enlargement added no image that a caption could be checked against.", status=409)
    now = timezone.now()
    run = RankingRun.objects.create(
        annotator=annotator,
        dataset_id=enlargement.dataset_id,
        created_by=enlargement.created_by,
        status=RunStatus.SUCCEEDED,
        top_k=max(rank for _c, _t, rank, _s in rows),
        stage="enlargement",
        progress={"enlargement": enlargement.pk, "pairs": len(rows)},
        started_at=now,
        finished_at=now,
    )
    Candidate.objects.bulk_create(
        (Candidate(run=run, direction="t2i", query_id=q, target_id=t, rank=r, score=s) for q, t, r, s in rows),
        batch_size=5000,
    )
    return run


def enlargement_verification_create(*, enlargement: GalleryEnlargement, owner, name: str = "", **options) -> Campaign:
    """A draft caption-to-image campaign that checks every (caption, added image) pair of the enlargement's
    run up to `pool_depth` (default: every added image of the caption's target). `options` are Campaign
    fields (reward, redundancy, gold, ...). Takes the enlargement's row lock; one verification campaign per
    enlargement (409 for a second; build and launch it as any other campaign)."""
    with transaction.atomic():
        enlargement = GalleryEnlargement.objects.select_for_update().get(pk=enlargement.pk)
        if enlargement.status != EnlargementStatus.ADDED:
            raise ApplicationError("Add the enlargement to the gallery before verifying it.", status=409)
        if enlargement.verification_id is not None:
            raise ApplicationError(
                f"This enlargement is verified by campaign {enlargement.verification_id} already.", status=409
            )
        run = enlargement_ranking_run(enlargement=enlargement)
        options.setdefault("pool_depth", run.top_k)
        options.setdefault("gold_exclusion_depth", run.top_k)
        options.setdefault("rationale_followups", False)
        campaign = campaign_create(
            owner=owner,
            dataset=enlargement.dataset,
            runs=[run],
            name=name or f"Verify the images added by enlargement {enlargement.pk}",
            direction="t2i",
            **options,
        )
        enlargement.verification = campaign
        enlargement.save(update_fields=["verification"])
    return campaign
