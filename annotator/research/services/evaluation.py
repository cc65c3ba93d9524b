"""Score a retrieval model's rankings against a campaign's verified labels (ECCV Caption's metrics).

The label map of a campaign is its ECCV JSON export (see annotator.labels.services.exports.eccv); the queries are its
keys. Side by side, R@k against the dataset's original pairs for the same queries: the number a paper would
have reported on the original benchmark. Captions whose removal the requester confirmed (post-processing,
ECCV Caption App. C) are positives of neither: not in the label map (the export leaves them out), and not
among the original pairs.
"""

from __future__ import annotations

from annotator.analysis.metrics import RECALL_KS, evaluate
from annotator.campaigns.models.campaign import Campaign
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Caption
from annotator.labels.models.cleanup import CleanupProposal, CleanupStatus
from annotator.labels.models.exports import ExportVariant
from annotator.labels.selectors.labels import label_method_resolve
from annotator.labels.services.exports.eccv import eccv_label_map
from annotator.research.coverage import low_coverage_warnings


def original_label_map(*, campaign: Campaign, queries: dict[str, dict[str, list[str]]]) -> dict:
    """The dataset's original positives for the given queries: an image's captions, a caption's image.

    Captions the requester removed from the campaign are left out, as the verified label map leaves them out.
    """
    i2t_keys, t2i_keys = set(queries.get("i2t", {})), set(queries.get("t2i", {}))
    i2t: dict[str, list[str]] = {}
    t2i: dict[str, list[str]] = {}
    removed = CleanupProposal.objects.filter(campaign=campaign, status=CleanupStatus.CONFIRMED).values("caption_id")
    rows = (
        Caption.objects.filter(dataset_id=campaign.dataset_id)
        .exclude(pk__in=removed)
        .values_list("source_id", "image__source_id")
    )
    for caption_source, image_source in rows.iterator(chunk_size=5000):
        if image_source in i2t_keys:
            i2t.setdefault(image_source, []).append(caption_source)
        if caption_source in t2i_keys:
            t2i[caption_source] = [image_source]
    return {"i2t": i2t, "t2i": t2i}


def campaign_evaluate(
    *, campaign: Campaign, rankings: dict, method: str | None = None, variant: str = ExportVariant.LENIENT
) -> dict:
    """Scores of `rankings` against the campaign's verified labels and against the original pairs. Read-only."""
    if variant not in ExportVariant.values:
        raise ApplicationError(f"Unknown variant {variant!r}.", extra={"allowed": list(ExportVariant.values)})
    method = label_method_resolve(campaign=campaign, method=method)
    labels = eccv_label_map(campaign_id=campaign.pk, method=method, variant=variant)
    if not labels["i2t"] and not labels["t2i"]:
        raise ApplicationError(
            f"Campaign {campaign.pk} has no positive {variant} labels to evaluate against.", status=409
        )
    verified, counts = evaluate(rankings, labels)
    original, _ = evaluate(
        rankings, original_label_map(campaign=campaign, queries=labels), metrics=[f"r{k}" for k in RECALL_KS]
    )
    return {
        "method": method,
        "variant": variant,
        "verified": verified,
        "original": original,
        "counts": counts,
        "labels": labels,  # the label map scored against (not stored: the evaluation's key covers it)
    }


def quick_coverage_warnings(*, counts: dict) -> list[str]:
    """What a person is told about the quick scores' counts (campaign_evaluate's): no query of the labels
    among the rankings' ids (wrong ids?), or few of them ranked. The label-set path says the same."""
    warnings = []
    for direction, count in counts.items():
        queries, missing = count.get("queries", 0), count.get("missing_rankings", 0)
        if queries and missing == queries:
            warnings.append(
                f"{direction}: none of the rankings' query ids is one of the {queries} labelled queries (are they "
                "the dataset's source ids?); every query scored as a miss."
            )
        else:
            warnings += low_coverage_warnings(
                direction=direction, covered=queries - missing, queries=queries, of="labelled queries"
            )
    return warnings
