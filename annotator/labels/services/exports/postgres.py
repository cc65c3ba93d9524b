"""The Postgres export: a campaign's labels COPied into a table of a researcher's own database.

The table's columns are the declared ones (`annotator.labels.export_columns`); the COPY work, both
sides and the thread between them, is `annotator.core.bulk`'s (`copy_across`, `copy_out`, `copy_from_pipe`).
"""

from __future__ import annotations

import re
from functools import partial

import psycopg2
from django.db import transaction
from psycopg2 import sql as pgsql

from annotator.campaigns.models.campaign import Campaign
from annotator.core.bulk import CopyPipe, copy_across, copy_from_pipe, copy_out
from annotator.core.errors import ApplicationError
from annotator.labels.export_columns import (
    pg_added_columns,
    pg_columns,
    pg_key,
    table_columns,
)
from annotator.labels.selectors.labels import label_method_resolve
from annotator.labels.services.exports.rows import label_rows_sql, tune_reads

# The table's columns, key and later columns, as the declaration says at import (the code calls the functions).
PG_COLUMNS = pg_columns()
PG_KEY = pg_key()
PG_ADDED_COLUMNS = pg_added_columns()
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?")
_INCOMING = ("vericap_labels_in",)  # the temporary table a later export COPies into before it merges


def labels_export_postgres(*, campaign: Campaign, method: str | None, dsn: str, table: str) -> dict:
    """Write the campaign's labels into `table` of the database at `dsn`, creating it if needed.

    The first export of a campaign's labels is a plain COPY into the table. Later ones COPY into a temporary
    table and upsert from it: an UPDATE of the rows whose values changed (unchanged rows are not rewritten),
    an INSERT of the new keys (campaign_id, pair_id, method) and a DELETE of this campaign's rows whose labels
    are gone or whose caption was removed since (a confirmed CleanupProposal), all in one transaction of the
    target: re-running updates rather than duplicates, and a failed
    run leaves the table as it was. Takes LOCK TABLE ... IN SHARE ROW EXCLUSIVE MODE on the target table
    (concurrent exports into one table run one after the other, and UPDATE-then-INSERT cannot race). Rows
    stream through a bounded queue between the two connections, so memory does not grow with the labels.
    """
    name = _table_name(table)
    method = label_method_resolve(campaign=campaign, method=method)
    target = _connect(dsn)
    try:
        rows, changes = copy_across(
            produce=partial(_produce, campaign_id=campaign.pk, method=method),
            consume=partial(_load, target=target, table=name, campaign_id=campaign.pk, method=method),
        )
    finally:
        target.close()
    return {"table": table, "method": method, "rows": rows, **changes}


def _table_name(table: str) -> tuple[str, ...]:
    """The parts of a table's name, ("schema", "name") or ("name",); anything else is refused."""
    if not _TABLE_NAME.fullmatch(table):
        raise ApplicationError("A table name is letters, digits and underscores, optionally schema.table.")
    return tuple(table.split("."))


def _connect(dsn: str):
    try:
        return psycopg2.connect(dsn)
    except psycopg2.Error as error:
        raise ApplicationError(f"Cannot connect to the target database: {str(error).strip()}") from None


def _produce(pipe: CopyPipe, *, campaign_id: int, method: str) -> int:
    """The label rows, in the table's columns, as COPY text into `pipe`; on PostgreSQL straight from COPY TO."""
    with transaction.atomic():
        tune_reads()
        sql = label_rows_sql(table_columns(), ordered=False)
        return copy_out(sql=sql, params=[campaign_id, method], sink=pipe)


def _load(pipe: CopyPipe, *, target, table: tuple[str, ...], campaign_id: int, method: str) -> dict:
    """On its own thread: the rows in `pipe` into `table` of `target`, in one transaction of the target (a
    failure rolls it back). Returns the rows inserted, updated and deleted."""
    columns = [name for name, _ in pg_columns()]
    try:
        with target, target.cursor() as cursor:
            _table_prepare(cursor, table)
            if not _table_holds(cursor, table, campaign_id=campaign_id, method=method):
                # First export of these labels: a plain COPY straight into the table.
                inserted = copy_from_pipe(cursor=cursor, table=table, columns=columns, pipe=pipe)
                return {"inserted": inserted, "updated": 0, "deleted": 0}
            cursor.execute(
                pgsql.SQL("CREATE TEMP TABLE {} ({}) ON COMMIT DROP").format(
                    pgsql.Identifier(*_INCOMING), _definitions()
                )
            )
            copy_from_pipe(cursor=cursor, table=_INCOMING, columns=columns, pipe=pipe)
            return _merge(cursor, table, campaign_id=campaign_id, method=method)
    except psycopg2.Error as error:
        raise ApplicationError(f"The target database refused the labels: {str(error).strip()}") from None


def _definitions() -> pgsql.Composable:
    """The table's columns with their types, for CREATE TABLE."""
    return pgsql.SQL(", ").join(
        pgsql.SQL("{} {}").format(pgsql.Identifier(name), pgsql.SQL(kind)) for name, kind in pg_columns()
    )


def _names(names, prefix: str = "") -> pgsql.Composable:
    """Column names, each quoted and led by `prefix` (an alias and a dot, or nothing), comma-separated."""
    return pgsql.SQL(", ").join(pgsql.SQL(prefix) + pgsql.Identifier(name) for name in names)


def _table_prepare(cursor, table: tuple[str, ...]) -> None:
    """Create the table if it is not there, lock it, and add the columns that a table an older export made
    lacks (nullable), under the lock, so the COPY's column list fits."""
    identifier = pgsql.Identifier(*table)
    cursor.execute(
        pgsql.SQL("CREATE TABLE IF NOT EXISTS {} ({}, PRIMARY KEY ({}))").format(
            identifier, _definitions(), _names(pg_key())
        )
    )
    # One export into a table at a time (a second waits), so what _table_holds answers stays true.
    cursor.execute(pgsql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(identifier))
    cursor.execute(pgsql.SQL("SELECT * FROM {} LIMIT 0").format(identifier))
    present = {column[0] for column in cursor.description}
    added = pg_added_columns()
    for name, kind in pg_columns():
        if name in added and name not in present:
            cursor.execute(
                pgsql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(identifier, pgsql.Identifier(name), pgsql.SQL(kind))
            )


def _table_holds(cursor, table: tuple[str, ...], *, campaign_id: int, method: str) -> bool:
    """Whether an earlier export put these labels (this campaign, this method) into the table."""
    cursor.execute(
        pgsql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE campaign_id = %s AND method = %s)").format(
            pgsql.Identifier(*table)
        ),
        [campaign_id, method],
    )
    return cursor.fetchone()[0]


def _merge(cursor, table: tuple[str, ...], *, campaign_id: int, method: str) -> dict:
    """Upsert the incoming rows into the table: UPDATE the changed ones, INSERT the new keys, DELETE this
    campaign's rows that did not come. Set-at-a-time joins of the whole campaign: hash joins in memory, never a
    nested loop (the target's statistics may be stale, having just been filled, and a nested loop would go
    quadratic). The table lock makes UPDATE-then-INSERT an upsert without races."""
    cursor.execute("SET LOCAL work_mem = '256MB'")
    cursor.execute("SET LOCAL enable_nestloop = off")
    cursor.execute(pgsql.SQL("ANALYZE {}").format(pgsql.Identifier(*_INCOMING)))
    names, key = [name for name, _ in pg_columns()], pg_key()
    parts = {
        "t": pgsql.Identifier(*table),
        "n": pgsql.Identifier(*_INCOMING),
        "same_key": pgsql.SQL(" AND ").join(pgsql.SQL("t.{0} = n.{0}").format(pgsql.Identifier(k)) for k in key),
        "columns": _names(names),
        "incoming": _names(names, "n."),
    }
    cursor.execute(_update_sql(parts, names, key))
    updated = cursor.rowcount
    cursor.execute(
        pgsql.SQL(
            "INSERT INTO {t} ({columns}) SELECT {incoming} FROM {n} n "
            "WHERE NOT EXISTS (SELECT 1 FROM {t} t WHERE {same_key})"
        ).format(**parts)
    )
    inserted = cursor.rowcount
    cursor.execute(
        pgsql.SQL(
            "DELETE FROM {t} t WHERE t.campaign_id = %s AND t.method = %s AND NOT EXISTS "
            "(SELECT 1 FROM {n} n WHERE n.pair_id = t.pair_id)"
        ).format(**parts),
        [campaign_id, method],
    )
    return {"inserted": inserted, "updated": updated, "deleted": cursor.rowcount}


def _update_sql(parts: dict, names: list[str], key: tuple[str, ...]) -> pgsql.Composable:
    """The UPDATE of the rows whose values changed: unchanged rows are not rewritten."""
    sets = pgsql.SQL(", ").join(pgsql.SQL("{0} = n.{0}").format(pgsql.Identifier(n)) for n in names if n not in key)
    return pgsql.SQL(
        "UPDATE {t} t SET {sets} FROM {n} n WHERE {same_key} AND ({current}) IS DISTINCT FROM ({incoming})"
    ).format(sets=sets, current=_names(names, "t."), **parts)
