"""How much of the scored queries a model's rankings cover, and the one warning when it is too little.

Every evaluation path says it the same way: the quick scores of a campaign's labels
(annotator.research.services.evaluation), a label set's evaluation
(annotator.research.services.labelset_evaluation) and the command's test-set check
(annotator.research.services.targets). Pure: no Django.
"""

from __future__ import annotations

COVERAGE_WARNING = 0.9  # warn when the rankings cover fewer than this share of the queries scored


def low_coverage_warnings(*, direction: str, covered: int, queries: int, of: str) -> list[str]:
    """The warning when `covered` of `queries` is below COVERAGE_WARNING; `of` names the queries
    ("labelled queries", "queries of <label set>"). Empty when the coverage is enough or there are no queries."""
    if queries and covered < COVERAGE_WARNING * queries:
        return [f"{direction}: the rankings cover {covered:,} of the {queries:,} {of}; the others count as misses."]
    return []
