"""Caption-to-caption and image-to-image retrieval never counts an item as its own match.

A model that ranks a gallery holding the query (Crisscrossed Captions' STS and SIS: the query caption is
one of the 25,000 captions, the query image one of the 5,000 images) puts the query itself first. CxC's
protocol leaves it out; so do Vericap's own rankings (annotator.research.services.uploaded_rankings). An uploaded
ranking is cleaned here, once, before any metric reads it, and the caller says how many it cleaned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SAME_MODALITY = ("t2t", "i2i")


def self_matches_drop(rankings: Mapping[str, Mapping[str, Sequence]]) -> tuple[dict, dict[str, int]]:
    """`rankings` with each t2t / i2i query removed from its own ranked list, and per such direction the
    number of queries whose list held the query. Other directions are passed through unchanged; ids are
    compared as strings (the form rankings_read returns)."""
    cleaned: dict = {}
    dropped: dict[str, int] = {}
    for direction, section in rankings.items():
        if direction not in SAME_MODALITY:
            cleaned[direction] = section
            continue
        count = 0
        kept: dict = {}
        for query, ranked in section.items():
            own = str(query)
            items = [item for item in ranked if str(item) != own]
            if len(items) != len(ranked):
                count += 1
            kept[query] = items
        cleaned[direction] = kept
        dropped[direction] = count
    return cleaned, dropped


def self_matches_note(direction: str, dropped: int) -> str:
    """What a person reads when a ranking held its own query."""
    queries = "query's ranking" if dropped == 1 else "queries' rankings"
    return (
        f"{direction}: {dropped:,} {queries} held the query itself; it was dropped before scoring "
        "(an item is never its own match)."
    )
