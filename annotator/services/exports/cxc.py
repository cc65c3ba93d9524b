"""Crisscrossed Captions CSV for similarity (0-5) campaigns."""

from __future__ import annotations

import csv
from typing import IO

from annotator.bulk import rows_stream
from annotator.models import Campaign, CampaignDirection
from annotator.services.exports.rows import Follower, pair_sql, sources_stream


def _cxc_header(campaign_direction: str) -> list[str]:
    if campaign_direction == CampaignDirection.T2T:
        return ["caption1", "caption2", "agg_score", "sampling_method", "verified"]
    if campaign_direction == CampaignDirection.I2I:
        return ["image1", "image2", "agg_score", "sampling_method", "verified"]
    return ["caption", "image", "agg_score", "sampling_method", "verified"]


def write_cxc_csv(
    *, out: IO[str], campaign_id: int, method: str, variant: str = "", merge_original: bool = False
) -> int:
    """Crisscrossed Captions CSV: the pair's two ids, the aggregated 0-5 score, how the pair was sampled.

    sampling_method is `original` for a dataset pair, else `<stage>:<annotator>+<annotator>` (the models
    that proposed it).
    """
    campaign_direction = Campaign.objects.values_list("direction", flat=True).get(pk=campaign_id)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_cxc_header(campaign_direction))
    sources = Follower(sources_stream(campaign_id))
    count = 0
    for row in rows_stream(pair_sql(), [campaign_id, method]):
        pair_id, kind, image, caption, other_image, other_caption, is_original, direction = row[:8]
        score, is_positive = row[9], row[10]
        annotators = sorted({source[1] for source in sources.take(pair_id)})
        if is_original:
            sampling = "original"
        else:
            sampling = f"{direction or 'pool'}:{'+'.join(annotators) or 'none'}"
        if kind == "caption_caption":
            first, second = caption, other_caption
        elif kind == "image_image":
            first, second = image, other_image
        else:
            first, second = caption, image
        verified = "positive" if is_positive else "negative"
        writer.writerow([first, second, "" if score is None else f"{score:.4g}", sampling, verified])
        count += 1
    return count
