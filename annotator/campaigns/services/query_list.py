"""A campaign stage's explicit queries (Campaign.query_list): the listed source ids instead of a sample, so a
paper's exact queries can be run again (ECCV Caption's 1,333 image and 1,261 caption queries, say)."""

from __future__ import annotations

import numpy as np

from annotator.campaigns.models.campaign import Campaign
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Caption, Image

MAX_EXAMPLES = 5


def listed_queries(*, campaign: Campaign, direction: str, universe: np.ndarray) -> tuple[np.ndarray | None, dict]:
    """(the listed queries of `direction` that the runs rank, as primary keys ascending; a report) or (None, {})
    when the stage has no list. Listed ids the dataset lacks and listed queries no run ranks are counted and
    left out; a 400 when none is left."""
    ids = [str(value) for value in (campaign.query_list or {}).get(direction) or []]
    if not ids:
        return None, {}
    model = Image if direction in ("i2t", "i2i") else Caption
    pks = dict(
        model.objects.filter(dataset_id=campaign.dataset_id, source_id__in=set(ids)).values_list("source_id", "pk")
    )
    unknown = [value for value in dict.fromkeys(ids) if value not in pks]
    listed = np.unique(np.asarray([pks[value] for value in ids if value in pks], dtype=np.int64))
    ranked = np.intersect1d(listed, np.asarray(universe, dtype=np.int64))
    report = {
        "listed": len(set(ids)),
        "matched": int(len(ranked)),
        "unknown": len(unknown),
        "unknown_examples": unknown[:MAX_EXAMPLES],
        "not_ranked": int(len(listed) - len(ranked)),
    }
    if not len(ranked):
        raise ApplicationError(
            f"None of the {report['listed']} listed {direction} queries is ranked by the chosen runs"
            + (f" ({len(unknown)} are not in the dataset, e.g. {', '.join(unknown[:3])})" if unknown else "")
            + ".",
            extra={"query_list": report},
        )
    return ranked, report
