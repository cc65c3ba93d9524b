"""Bulk reads and writes, the one place that speaks PostgreSQL's COPY.

- COPY FROM: `rows_insert` (rows as dicts, new primary keys drawn from the table's sequence), `copy_in` (text
  already encoded), with `copy_text` / `copy_line` / `copy_text_columns` encoding values in COPY's text format.
- COPY TO: `copy_out` streams `COPY (SELECT ...) TO STDOUT` into a file-like sink; `copy_unescape` decodes a
  field of that text back to its value.
- COPY to COPY: `CopyPipe` hands the text of one connection's COPY TO to another connection's COPY FROM
  through a bounded queue, so memory does not grow with the rows; `copy_across` runs the two sides (the
  consumer on a thread of its own), and `copy_from_pipe` is the COPY FROM of the other connection.
- Streamed reads: `rows_stream` fetches a query's rows in chunks from a server-side cursor.

Elsewhere (SQLite, the embedded default) there is no COPY: `rows_insert` and `objects_create` fall back to
`bulk_create` in batches, and `copy_out` encodes streamed rows itself, so callers write one code path.
"""

from __future__ import annotations

import io
import json
import queue
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, TypeVar

from django.db import connection
from django.utils import timezone

BATCH_SIZE = 2000  # rows per bulk_create where there is no COPY
CHUNK_ROWS = 5_000  # rows per fetch from a server-side cursor: bounds the memory of a stream
COPY_BUFFER = 1 << 18  # bytes per read or write between the driver and a COPY
T = TypeVar("T")

# ---------------------------------------------------------------------------------------------- encoding

_COPY_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_COPY_ESCAPE = re.compile(r"\\(.)")


def copy_text(value) -> str:
    """One value in COPY's text format: NULL as \\N, booleans as t/f, dates in ISO format, dicts and lists as
    JSON; backslashes, tabs and line breaks in text escaped."""
    if value is None:
        return "\\N"
    if value is True or value is False:
        return "t" if value else "f"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict | list):
        value = json.dumps(value)
    elif hasattr(value, "isoformat"):
        value = value.isoformat()
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def copy_line(values: Iterable) -> str:
    """One row in COPY's text format, without its line break."""
    return "\t".join(map(copy_text, values))


def copy_text_columns(*, columns: Sequence[Sequence[int | float]], leading: Sequence = ()) -> str:
    """COPY text for rows given as columns of numbers (ints and floats, not booleans), each row led by the
    same `leading` values.

    Numbers need no escaping, so each line is one %-format of its numbers instead of an encoding per value:
    the fast path for millions of rows. str() of a float round-trips exactly, so writing the same rows again
    writes identical values.
    """
    prefix = "".join(copy_text(value) + "\t" for value in leading).replace("%", "%%")
    line = prefix + "\t".join(["%s"] * len(columns)) + "\n"  # %s of an int or a float is its str()
    values = [column.tolist() if hasattr(column, "tolist") else column for column in columns]
    return "".join(map(line.__mod__, zip(*values, strict=True)))


def copy_unescape(field: str) -> str:
    """A field of COPY's text format back to its value (COPY TO only emits these backslash sequences)."""
    if "\\" not in field:
        return field
    return _COPY_ESCAPE.sub(lambda match: _COPY_ESCAPES.get(match.group(1), match.group(1)), field)


# ---------------------------------------------------------------------------------------------- reads


def rows_stream(sql: str, params: Sequence) -> Iterator[tuple]:
    """Rows of `sql` in chunks from a server-side cursor (PostgreSQL) or a plain cursor (SQLite)."""
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while True:
            rows = cursor.fetchmany(CHUNK_ROWS)
            if not rows:
                return
            yield from rows


def copy_out(*, sql: str, params: Sequence, sink) -> int:
    """Write the rows of `sql` as COPY text into `sink` (anything with write()); returns the row count.

    PostgreSQL: `COPY (sql) TO STDOUT`, which calls sink.write() once per row. Elsewhere the rows are streamed
    (rows_stream) and encoded here, CHUNK_ROWS lines per write(). Runs on the caller's transaction.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            select = cursor.cursor.mogrify(sql, list(params)).decode()
            cursor.cursor.copy_expert(f"COPY ({select}) TO STDOUT", sink, size=COPY_BUFFER)
            return cursor.cursor.rowcount
    count, lines = 0, []
    for row in rows_stream(sql, params):
        lines.append(copy_line(row))
        count += 1
        if len(lines) >= CHUNK_ROWS:
            sink.write("\n".join(lines) + "\n")
            lines = []
    if lines:
        sink.write("\n".join(lines) + "\n")
    return count


# ---------------------------------------------------------------------------------------------- writes


def copy_in(*, table: str, columns: Sequence[str], source: IO) -> None:
    """COPY the text in `source` (a file-like object) into `columns` of `table` on the Django connection
    (PostgreSQL only). Runs on the caller's transaction."""
    quoted = ", ".join(connection.ops.quote_name(column) for column in columns)
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(f"COPY {connection.ops.quote_name(table)} ({quoted}) FROM STDIN", source)


def objects_create(model, objects: list, *, batch_size: int = BATCH_SIZE, ignore_conflicts: bool = False) -> list:
    """bulk_create in batches of `batch_size` (on SQLite the primary keys come back set)."""
    for start in range(0, len(objects), batch_size):
        model.objects.bulk_create(objects[start : start + batch_size], ignore_conflicts=ignore_conflicts)
    return objects


def _column_defaults(model) -> dict:
    """Values for the model's columns a row does not give: each field's default, `now` for auto dates."""
    defaults = {}
    now = timezone.now()
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            defaults[field.attname] = now
        else:
            defaults[field.attname] = field.get_default()  # "" for a blank CharField, None for a nullable one
    return defaults


def rows_insert(model, rows: list[dict], *, ids: bool = True) -> list[int]:
    """Insert `rows` (attname -> value; every row gives the same names) and return their new primary keys in
    order when `ids`.

    On PostgreSQL the ids are drawn from the table's sequence and the rows go in with COPY, an order of
    magnitude faster than bulk_create at tens of thousands of rows; elsewhere (SQLite, the embedded default)
    this is bulk_create in batches. Columns a row does not give get the field's default. Runs on the caller's
    transaction.
    """
    if not rows:
        return []
    if connection.vendor != "postgresql":
        objects = objects_create(model, [model(**row) for row in rows])
        return [obj.pk for obj in objects] if ids else []
    table = model._meta.db_table
    pk_column = model._meta.pk.column
    defaults = _column_defaults(model)
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = [f.attname for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, pk_column, len(rows)],
        )
        new_ids = [row[0] for row in cursor.fetchall()]
    # Columns no row gives are the same text on every line; format them once.
    given = [name for name in columns if name in rows[0]]
    constant = {name: copy_text(defaults[name]) for name in columns if name not in rows[0]}
    lines = []
    for pk, row in zip(new_ids, rows, strict=True):
        text = {name: copy_text(row[name]) for name in given}
        lines.append("\t".join([str(pk), *(text[name] if name in text else constant[name] for name in columns)]))
    copy_in(
        table=table,
        columns=[pk_column, *(f.column for f in fields)],
        source=io.StringIO("\n".join(lines) + "\n"),
    )
    return new_ids if ids else []


# ---------------------------------------------------------------------------------------------- COPY to COPY

_ABORT = b"\x00abort"  # sentinel object (compared by identity): the producer failed, roll the COPY back


class _ChunkReader(io.RawIOBase):
    """A file-like reader over byte chunks from a queue (None ends it), for COPY FROM STDIN."""

    def __init__(self, chunks: queue.Queue):
        self._chunks = chunks
        self._buffer = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._done and (size < 0 or len(self._buffer) < size):
            chunk = self._chunks.get()
            if chunk is None:
                self._done = True
                break
            if chunk is _ABORT:
                raise OSError("Reading the rows failed; nothing was written.")
            self._buffer += chunk
        if size < 0:
            data, self._buffer = self._buffer, b""
        else:
            data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


class CopyPipe:
    """COPY text from a producer (this thread: the pipe is the sink of copy_out) to a consumer (another thread:
    `reader()` is the source of a COPY FROM on another connection), through a queue of at most `max_chunks`
    chunks of ~256 KiB: memory stays bounded, and the two threads hand over rarely.

    The producer writes, flushes, then ends with `close(complete=...)`: an incomplete close makes the
    consumer's read raise, so its COPY (and its transaction) rolls back. A consumer that fails calls `fail()`:
    the producer's next flush raises instead of blocking on a full queue.
    """

    def __init__(self, *, max_chunks: int = 32):
        self._chunks: queue.Queue = queue.Queue(maxsize=max_chunks)
        self._failed = threading.Event()
        self._pending = bytearray()

    @property
    def failed(self) -> bool:
        return self._failed.is_set()

    def write(self, data) -> int:
        self._pending += data.encode() if isinstance(data, str) else data
        if len(self._pending) >= COPY_BUFFER:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self._failed.is_set():
            raise OSError("The target database stopped reading.")
        if self._pending:
            self._chunks.put(bytes(self._pending))
            self._pending = bytearray()

    def reader(self) -> _ChunkReader:
        return _ChunkReader(self._chunks)

    def close(self, *, complete: bool) -> None:
        """The producer is done: the end of the text, or the abort when not `complete`."""
        if not self._failed.is_set():
            self._chunks.put(None if complete else _ABORT)

    def fail(self) -> None:
        """The consumer gave up: stop the producer and unblock it if it waits on a full queue."""
        self._failed.set()
        while True:
            try:
                self._chunks.get_nowait()
            except queue.Empty:
                break


def copy_from_pipe(*, cursor, table: Sequence[str], columns: Sequence[str], pipe: CopyPipe) -> int:
    """COPY the text of `pipe` into `columns` of `table` (its name's parts: ("schema", "name") or ("name",)) on
    `cursor`, a psycopg2 cursor of a connection other than Django's: the consumer's side of `copy_across`.
    Returns the rows copied. Runs on that connection's transaction."""
    from psycopg2 import sql as pgsql

    statement = pgsql.SQL("COPY {} ({}) FROM STDIN").format(
        pgsql.Identifier(*table), pgsql.SQL(", ").join(pgsql.Identifier(column) for column in columns)
    )
    cursor.copy_expert(statement.as_string(cursor), pipe.reader(), size=COPY_BUFFER)
    return cursor.rowcount


def copy_across(*, produce: Callable[[CopyPipe], int], consume: Callable[[CopyPipe], T]) -> tuple[int, T]:
    """COPY to COPY: `produce(pipe)` writes COPY text into the pipe on this thread (typically `copy_out` on the
    Django connection) and returns its row count, while `consume(pipe)` reads it on a thread of its own
    (typically `copy_from_pipe` on another connection, in that connection's transaction). Returns (rows
    produced, what `consume` returned).

    When the producer fails, the consumer's read raises (so its COPY and its transaction roll back) and the
    producer's exception is raised here. When the consumer fails, the producer is stopped at its next write
    and the consumer's exception is raised here, whatever the producer then raised.
    """
    pipe = CopyPipe()
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = consume(pipe)
        except BaseException as error:  # handed to the producer's thread, which raises it
            pipe.fail()
            outcome["error"] = error

    thread = threading.Thread(target=run, name="vericap-copy-across", daemon=True)
    thread.start()
    produced, complete = 0, False
    try:
        produced = produce(pipe)
        pipe.flush()
        complete = True
    except Exception:
        if not pipe.failed:
            raise  # the producer failed: the consumer is told to roll back below
    finally:
        pipe.close(complete=complete)
        thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return produced, outcome["result"]
