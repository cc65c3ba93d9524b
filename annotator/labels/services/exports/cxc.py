"""Crisscrossed Captions CSV for similarity (0-5) campaigns: a campaign's mean ratings in CxC's own file.

The columns are those of CxC's file for the campaign's pairs (annotator.labels.cxc_files), the ids
are CxC's spellings when the dataset carries COCO ids, and `sampling_method` holds only the names CxC's
released files have: `c2i_original` and `c2c_cocaption` for a dataset pair (a caption with its image, two
captions of one image), and for a model-proposed pair CxC's name of its task: `c2i_intrasim`, `c2c_isim`,
`i2i_csim`. CxC samples its model pairs across the whole similarity range, so Vericap's random pairs
(`c2c_random`, `i2i_random`) and ECCV-style pooled pairs take that name too; the CSV and JSONL exports keep
Vericap's own provenance in their `sampling_method`.
"""

from __future__ import annotations

from typing import IO

from annotator.campaigns.models.campaign import Campaign, CampaignDirection, Pair
from annotator.core.bulk import rows_stream
from annotator.labels.cxc_files import (
    ORIGINAL_METHOD,
    cxc_members,
    cxc_rows_write,
    cxc_score,
)
from annotator.labels.models.labels import Label
from annotator.labels.selectors.cxc_ids import cxc_ids
from annotator.labels.services.exports.rows import db_table, pair_kept

KIND_OF_DIRECTION = {CampaignDirection.T2T: "caption_caption", CampaignDirection.I2I: "image_image"}


def _sql() -> str:
    return (
        "SELECT p.kind, p.image_id, p.caption_id, p.other_image_id, p.other_caption_id, p.is_original, "
        "p.sampling_method, l.score "
        f"FROM {db_table(Label)} l JOIN {db_table(Pair)} p ON p.id = l.pair_id "
        f"WHERE p.campaign_id = %s AND l.method = %s AND {pair_kept('p')} ORDER BY p.id"
    )


# CxC's name of a model-proposed pair of each kind (its released files have no other).
MODEL_METHOD = {"image_caption": "c2i_intrasim", "caption_caption": "c2c_isim", "image_image": "i2i_csim"}
CXC_METHODS = frozenset(MODEL_METHOD.values()) | frozenset(ORIGINAL_METHOD.values())


def pair_method(*, kind: str, is_original: bool, sampling_method: str) -> str:
    """The pair's `sampling_method` in CxC's names only (see the module docstring)."""
    if sampling_method in CXC_METHODS:
        return sampling_method
    if is_original and kind in ORIGINAL_METHOD:
        return ORIGINAL_METHOD[kind]
    return MODEL_METHOD[kind]


def write_cxc_csv(
    *, out: IO[str], campaign_id: int, method: str, variant: str = "", merge_original: bool = False
) -> int:
    """The campaign's `method` labels as a CxC file: two ids, the mean 0-5 rating, how the pair was chosen."""
    campaign = Campaign.objects.only("direction", "dataset_id").get(pk=campaign_id)
    kind = KIND_OF_DIRECTION.get(campaign.direction, "image_caption")
    ids = cxc_ids(dataset_id=campaign.dataset_id)

    def rows():
        for pair_kind, image, caption, other_image, other_caption, is_original, sampling, score in rows_stream(
            _sql(), [campaign_id, method]
        ):
            first, second = cxc_members(
                kind=pair_kind,
                image=image,
                caption=caption,
                other_image=other_image,
                other_caption=other_caption,
                ids=ids,
            )
            yield (
                first,
                second,
                cxc_score(score),
                pair_method(kind=pair_kind, is_original=is_original, sampling_method=sampling),
            )

    return cxc_rows_write(out=out, kind=kind, rows=rows())
