"""Candidate rows written in bulk: COPY on PostgreSQL, bulk_create elsewhere (the embedded SQLite)."""

from __future__ import annotations

import io

import numpy as np
from django.db import connection

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
    """Tab-separated COPY text. repr() of a float round-trips exactly, so a rerun writes identical scores."""
    prefix = f"{run_id}\t{direction}\t"
    text = "".join(
        f"{prefix}{q}\t{t}\t{r}\t{s!r}\n"
        for q, t, r, s in zip(queries.tolist(), targets.tolist(), ranks.tolist(), scores.tolist(), strict=False)
    )
    return io.StringIO(text)


def copy_rows(buffer: io.StringIO) -> None:
    """COPY a prepared buffer into the candidate table through the Django connection's psycopg2 cursor."""
    table = connection.ops.quote_name(Candidate._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in COLUMNS)
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(f"COPY {table} ({columns}) FROM STDIN", buffer)


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
        Candidate.objects.bulk_create(
            [
                Candidate(run_id=run_id, direction=direction, query_id=q, target_id=t, rank=r, score=s)
                for q, t, r, s in zip(queries.tolist(), targets.tolist(), ranks.tolist(), values.tolist(), strict=False)
            ],
            batch_size=2000,
        )
    return len(queries)
