"""Candidate rows written in bulk through annotator.core.bulk: COPY on PostgreSQL, bulk_create elsewhere (the embedded
SQLite)."""

from __future__ import annotations

import io

import numpy as np
from django.db import connection

from annotator.core.bulk import copy_in, copy_text_columns, objects_create
from annotator.models import Candidate

COLUMNS = ("run_id", "direction", "query_id", "target_id", "rank", "score")


def candidate_arrays(
    *, query_ids: np.ndarray, target_ids: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flatten [n, K] top-K results into (query, target, rank, score) rows; -inf scores (no pivot) are dropped.

    Rows are sorted by score, so dropping the trailing -inf keeps ranks 1..m contiguous.
    """
    n, k = target_ids.shape
    ranks = np.broadcast_to(np.arange(1, k + 1, dtype=np.int64), (n, k))
    queries = np.broadcast_to(query_ids.reshape(n, 1), (n, k))
    keep = np.isfinite(scores)
    return queries[keep], target_ids[keep], ranks[keep], scores[keep].astype(np.float64)


def copy_buffer(*, run_id: int, direction: str, queries, targets, ranks, scores) -> io.StringIO:
    """The rows as COPY text (annotator.core.bulk), in the column order of COLUMNS."""
    return io.StringIO(copy_text_columns(leading=(run_id, direction), columns=(queries, targets, ranks, scores)))


def copy_rows(buffer: io.StringIO) -> None:
    """COPY a prepared buffer into the candidate table (PostgreSQL), on the caller's transaction."""
    copy_in(table=Candidate._meta.db_table, columns=COLUMNS, source=buffer)


def candidates_write(
    *, run_id: int, direction: str, query_ids: np.ndarray, target_ids: np.ndarray, scores: np.ndarray
) -> int:
    """Insert the candidates of one chunk; the caller holds the transaction. Returns the row count."""
    queries, targets, ranks, values = candidate_arrays(query_ids=query_ids, target_ids=target_ids, scores=scores)
    if connection.vendor == "postgresql":
        copy_rows(
            copy_buffer(
                run_id=run_id, direction=direction, queries=queries, targets=targets, ranks=ranks, scores=values
            )
        )
    else:
        objects_create(
            Candidate,
            [
                Candidate(run_id=run_id, direction=direction, query_id=q, target_id=t, rank=r, score=s)
                for q, t, r, s in zip(queries.tolist(), targets.tolist(), ranks.tolist(), values.tolist(), strict=False)
            ],
        )
    return len(queries)
