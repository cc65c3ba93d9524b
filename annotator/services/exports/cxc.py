"""Crisscrossed Captions CSV for similarity (0-5) campaigns: a campaign's mean ratings in CxC's own file.

The columns are those of CxC's file for the campaign's pairs (annotator.services.exports.cxc_files), the ids
are CxC's spellings when the dataset carries COCO ids, and `sampling_method` uses CxC's names: the name the
campaign's sampling gave the pair (`c2c_isim`, `c2c_cocaption`, `i2i_csim`, ...), `c2i_original` or
`c2c_cocaption` for a dataset pair, else `<c2i|c2c|i2i>_pool` for a pair pooled from rankings the ECCV way.
"""

from __future__ import annotations

from typing import IO

from annotator.bulk import rows_stream
from annotator.models import Campaign, CampaignDirection, Label, Pair
from annotator.selectors.cxc_ids import cxc_ids
from annotator.services.exports.cxc_files import ORIGINAL_METHOD, PREFIX, cxc_members, cxc_rows_write, cxc_score
from annotator.services.exports.rows import db_table, pair_kept

KIND_OF_DIRECTION = {CampaignDirection.T2T: "caption_caption", CampaignDirection.I2I: "image_image"}


def _sql() -> str:
    return (
        "SELECT p.kind, p.image_id, p.caption_id, p.other_image_id, p.other_caption_id, p.is_original, "
        "p.sampling_method, l.score "
        f"FROM {db_table(Label)} l JOIN {db_table(Pair)} p ON p.id = l.pair_id "
        f"WHERE p.campaign_id = %s AND l.method = %s AND {pair_kept('p')} ORDER BY p.id"
    )


def pair_method(*, kind: str, is_original: bool, sampling_method: str) -> str:
    if sampling_method:
        return sampling_method
    if is_original and kind in ORIGINAL_METHOD:
        return ORIGINAL_METHOD[kind]
    return f"{PREFIX[kind]}_pool"


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
