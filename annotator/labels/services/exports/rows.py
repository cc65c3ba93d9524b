"""The rows every export reads: table names, the removed-caption filter, the labelled pairs, their sources.

Removed captions (post-processing, ECCV Caption App. C): a caption whose CleanupProposal (of either kind) the
requester confirmed is left out of every export, with every pair it is in (as `caption` or as
`other_caption`): it is neither a query, nor a positive, nor an added original, nor a row. Proposed and
dismissed proposals change nothing. The filter is an anti-join in each export's SQL (`caption_kept`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from django.db import connection

from annotator.campaigns.models.campaign import Pair, PairSource
from annotator.core.bulk import rows_stream
from annotator.datasets.models.dataset import Caption, Image
from annotator.labels.export_columns import LabelColumn, row_columns, row_type
from annotator.labels.models.cleanup import CleanupProposal, CleanupStatus
from annotator.labels.models.labels import Label
from annotator.ranking.models.ranking import MachineAnnotator, RankingRun


def db_table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def caption_kept(*, caption: str, campaign: str) -> str:
    """SQL condition: the caption in column `caption` (NULL passes) was not removed from campaign `campaign`
    (a column, or %s), i.e. no confirmed CleanupProposal of that campaign names it. The proposals are few, so
    this is a small hashed anti-join and the export stays one streamed query."""
    return (
        f"NOT EXISTS (SELECT 1 FROM {db_table(CleanupProposal)} r WHERE r.campaign_id = {campaign} "
        f"AND r.caption_id = {caption} AND r.status = '{CleanupStatus.CONFIRMED}')"
    )


def pair_kept(alias: str) -> str:
    """SQL condition: pair `alias` holds no removed caption, on either side (caption-caption pairs have two)."""
    return (
        f"{caption_kept(caption=f'{alias}.caption_id', campaign=f'{alias}.campaign_id')} "
        f"AND {caption_kept(caption=f'{alias}.other_caption_id', campaign=f'{alias}.campaign_id')}"
    )


def label_rows_sql(columns: Sequence[LabelColumn], *, ordered: bool) -> str:
    """The select of `columns` (their `sql`, from `annotator.labels.export_columns`) for the labels of
    one campaign (%s) and method (%s) with their pairs, removed captions left out; in pair order if `ordered`."""
    return (
        f"SELECT {', '.join(column.sql or '' for column in columns)} "
        f"FROM {db_table(Label)} l JOIN {db_table(Pair)} p ON p.id = l.pair_id "
        f"LEFT JOIN {db_table(Image)} i ON i.id = p.image_id LEFT JOIN {db_table(Caption)} c ON c.id = p.caption_id "
        f"LEFT JOIN {db_table(Image)} oi ON oi.id = p.other_image_id "
        f"LEFT JOIN {db_table(Caption)} oc ON oc.id = p.other_caption_id "
        f"WHERE p.campaign_id = %s AND l.method = %s AND {pair_kept('p')}" + (" ORDER BY p.id" if ordered else "")
    )


def labelled_pairs(campaign_id: int, method: str) -> Iterator:
    """The campaign's `method` labels with their pairs, in pair order, streamed: one `row_type()` (the
    declared columns, named) per label."""
    row = row_type()
    sql = label_rows_sql(row_columns(), ordered=True)
    return (row(*values) for values in rows_stream(sql, [campaign_id, method]))


def sources_stream(campaign_id: int) -> Iterator[tuple]:
    sql = (
        "SELECT s.pair_id, a.name, a.kind, s.run_id, s.direction, s.rank, s.score "
        f"FROM {db_table(PairSource)} s JOIN {db_table(Pair)} p ON p.id = s.pair_id "
        f"JOIN {db_table(RankingRun)} r ON r.id = s.run_id "
        f"JOIN {db_table(MachineAnnotator)} a ON a.id = r.annotator_id "
        "WHERE p.campaign_id = %s ORDER BY s.pair_id, s.rank, s.id"
    )
    return rows_stream(sql, [campaign_id])


class Follower:
    """Merge-join helper: the rows of a pair-ordered stream that belong to the pair being written."""

    def __init__(self, rows: Iterator[tuple]):
        self._rows = rows
        self._head = next(rows, None)

    def take(self, pair_id: int) -> list[tuple]:
        taken = []
        while self._head is not None and self._head[0] <= pair_id:
            if self._head[0] == pair_id:
                taken.append(self._head)
            self._head = next(self._rows, None)
        return taken


def tune_reads() -> None:
    """PostgreSQL, this transaction only: no JIT. An export's queries are planned as expensive, so JIT
    would compile them (seconds of fixed cost) for plans that are a few hash joins and a sort."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = off")
