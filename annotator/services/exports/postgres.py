"""The Postgres export: a campaign's labels COPied into a table of a researcher's own database."""

from __future__ import annotations

import re
import threading

from django.db import transaction

from annotator.bulk import COPY_BUFFER, CopyPipe, copy_out
from annotator.errors import ApplicationError
from annotator.models import Campaign, Caption, Image, Label, Pair
from annotator.selectors.research import label_method_resolve
from annotator.services.exports.rows import db_table, pair_kept, tune_reads

PG_COLUMNS = [
    ("campaign_id", "bigint NOT NULL"),
    ("pair_id", "bigint NOT NULL"),
    ("method", "text NOT NULL"),
    ("kind", "text NOT NULL"),
    ("image_source_id", "text"),
    ("caption_source_id", "text"),
    ("other_image_source_id", "text"),
    ("other_caption_source_id", "text"),
    ("is_original", "boolean NOT NULL"),
    ("stage", "text NOT NULL"),
    ("choice", "text"),
    ("score", "double precision"),
    ("is_positive", "boolean NOT NULL"),
    ("is_positive_strict", "boolean NOT NULL"),
    ("confidence", "double precision NOT NULL"),
    ("answer_count", "integer NOT NULL"),
    ("label_updated_at", "timestamptz"),
    # P(positive) and its 90% interval; a 0-5 mean's 90% interval (NULL where the method gives none).
    ("probability", "double precision"),
    ("probability_low", "double precision"),
    ("probability_high", "double precision"),
    ("score_low", "double precision"),
    ("score_high", "double precision"),
]
PG_KEY = ("campaign_id", "pair_id", "method")
# Columns added after the first release: a table an older export made gets them (nullable) on the next export.
PG_ADDED_COLUMNS = ("probability", "probability_low", "probability_high", "score_low", "score_high")
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?")


def pg_select_sql() -> str:
    return (
        "SELECT p.campaign_id, p.id, l.method, p.kind, i.source_id, c.source_id, oi.source_id, oc.source_id, "
        "p.is_original, p.direction, NULLIF(l.choice, ''), l.score, l.is_positive, l.is_positive_strict, "
        "l.confidence, l.answer_count, l.updated_at, "
        "l.probability, l.probability_low, l.probability_high, l.score_low, l.score_high "
        f"FROM {db_table(Label)} l JOIN {db_table(Pair)} p ON p.id = l.pair_id "
        f"LEFT JOIN {db_table(Image)} i ON i.id = p.image_id LEFT JOIN {db_table(Caption)} c ON c.id = p.caption_id "
        f"LEFT JOIN {db_table(Image)} oi ON oi.id = p.other_image_id "
        f"LEFT JOIN {db_table(Caption)} oc ON oc.id = p.other_caption_id "
        f"WHERE p.campaign_id = %s AND l.method = %s AND {pair_kept('p')}"
    )


def _produce_copy_rows(pipe: CopyPipe, *, campaign_id: int, method: str) -> int:
    """Feed the label rows as COPY text into `pipe`; on PostgreSQL straight from COPY TO STDOUT."""
    tune_reads()
    count = copy_out(sql=pg_select_sql(), params=[campaign_id, method], sink=pipe)
    pipe.flush()
    return count


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
    import psycopg2
    from psycopg2 import sql as pgsql

    if not _TABLE_NAME.fullmatch(table):
        raise ApplicationError("A table name is letters, digits and underscores, optionally schema.table.")
    method = label_method_resolve(campaign=campaign, method=method)
    try:
        target = psycopg2.connect(dsn)
    except psycopg2.Error as error:
        raise ApplicationError(f"Cannot connect to the target database: {str(error).strip()}") from None
    identifier = pgsql.Identifier(*table.split("."))
    columns = pgsql.SQL(", ").join(pgsql.Identifier(name) for name, _ in PG_COLUMNS)
    key = pgsql.SQL(", ").join(pgsql.Identifier(name) for name in PG_KEY)
    pipe = CopyPipe()
    outcome: dict = {}

    def consume():
        try:
            with target.cursor() as cursor:
                cursor.execute(
                    pgsql.SQL("CREATE TABLE IF NOT EXISTS {} ({}, PRIMARY KEY ({}))").format(
                        identifier,
                        pgsql.SQL(", ").join(
                            pgsql.SQL("{} {}").format(pgsql.Identifier(name), pgsql.SQL(kind))
                            for name, kind in PG_COLUMNS
                        ),
                        key,
                    )
                )
                # One export into a table at a time (a second waits), so the empty check below stays true.
                cursor.execute(pgsql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(identifier))
                # A table made by an older export lacks the columns added since (the probability and its
                # interval): add them, under the lock above, so the COPY's column list fits.
                cursor.execute(pgsql.SQL("SELECT * FROM {} LIMIT 0").format(identifier))
                present = {column[0] for column in cursor.description}
                for name, kind in PG_COLUMNS:
                    if name in PG_ADDED_COLUMNS and name not in present:
                        cursor.execute(
                            pgsql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
                                identifier, pgsql.Identifier(name), pgsql.SQL(kind)
                            )
                        )
                cursor.execute(
                    pgsql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE campaign_id = %s AND method = %s)").format(
                        identifier
                    ),
                    [campaign.pk, method],
                )
                if not cursor.fetchone()[0]:
                    # First export of these labels: a plain COPY straight into the table.
                    cursor.copy_expert(
                        pgsql.SQL("COPY {} ({}) FROM STDIN").format(identifier, columns).as_string(target),
                        pipe.reader(),
                        size=COPY_BUFFER,
                    )
                    outcome["inserted"], outcome["updated"], outcome["deleted"] = cursor.rowcount, 0, 0
                    target.commit()
                    return
                cursor.execute(
                    pgsql.SQL("CREATE TEMP TABLE vericap_labels_in ({}) ON COMMIT DROP").format(
                        pgsql.SQL(", ").join(
                            pgsql.SQL("{} {}").format(pgsql.Identifier(name), pgsql.SQL(kind))
                            for name, kind in PG_COLUMNS
                        )
                    )
                )
                cursor.copy_expert("COPY vericap_labels_in FROM STDIN", pipe.reader(), size=COPY_BUFFER)
                # Set-at-a-time joins of the whole campaign: hash joins in memory, never a nested loop (the
                # target's statistics may be stale, having just been filled, and a nested loop would go
                # quadratic). The table lock makes UPDATE-then-INSERT an upsert without races.
                cursor.execute("SET LOCAL work_mem = '256MB'")
                cursor.execute("SET LOCAL enable_nestloop = off")
                cursor.execute("ANALYZE vericap_labels_in")
                same_key = pgsql.SQL(" AND ").join(
                    pgsql.SQL("t.{0} = n.{0}").format(pgsql.Identifier(name)) for name in PG_KEY
                )
                incoming = pgsql.SQL(", ").join(pgsql.SQL("n.{}").format(pgsql.Identifier(n)) for n, _ in PG_COLUMNS)
                cursor.execute(
                    pgsql.SQL(
                        "UPDATE {t} t SET {sets} FROM vericap_labels_in n WHERE {same_key} "
                        "AND ({tc}) IS DISTINCT FROM ({nc})"  # unchanged rows are not rewritten
                    ).format(
                        t=identifier,
                        same_key=same_key,
                        sets=pgsql.SQL(", ").join(
                            pgsql.SQL("{0} = n.{0}").format(pgsql.Identifier(n))
                            for n, _ in PG_COLUMNS
                            if n not in PG_KEY
                        ),
                        tc=pgsql.SQL(", ").join(pgsql.SQL("t.{}").format(pgsql.Identifier(n)) for n, _ in PG_COLUMNS),
                        nc=incoming,
                    )
                )
                outcome["updated"] = cursor.rowcount
                cursor.execute(
                    pgsql.SQL(
                        "INSERT INTO {t} ({c}) SELECT {nc} FROM vericap_labels_in n "
                        "WHERE NOT EXISTS (SELECT 1 FROM {t} t WHERE {same_key})"
                    ).format(
                        t=identifier,
                        c=columns,
                        same_key=same_key,
                        nc=incoming,
                    )
                )
                outcome["inserted"] = cursor.rowcount
                cursor.execute(
                    pgsql.SQL(
                        "DELETE FROM {t} t WHERE t.campaign_id = %s AND t.method = %s AND NOT EXISTS "
                        "(SELECT 1 FROM vericap_labels_in n WHERE n.pair_id = t.pair_id)"
                    ).format(t=identifier),
                    [campaign.pk, method],
                )
                outcome["deleted"] = cursor.rowcount
            target.commit()
        except BaseException as error:  # handed to the main thread, which raises it
            pipe.fail()
            outcome["error"] = error
            target.rollback()

    thread = threading.Thread(target=consume, name="vericap-pg-export", daemon=True)
    thread.start()
    produced, complete = 0, False
    try:
        with transaction.atomic():
            produced = _produce_copy_rows(pipe, campaign_id=campaign.pk, method=method)
        complete = True
    except Exception:
        if not pipe.failed:
            raise  # reading our own labels failed: the consumer is told to roll back below
    finally:
        pipe.close(complete=complete)
        thread.join()
        target.close()
    error = outcome.get("error")
    if error is not None:
        if isinstance(error, psycopg2.Error):
            raise ApplicationError(f"The target database refused the labels: {str(error).strip()}") from None
        raise error
    return {
        "table": table,
        "method": method,
        "rows": produced,
        **{change: outcome.get(change, 0) for change in ("inserted", "updated", "deleted")},
    }
