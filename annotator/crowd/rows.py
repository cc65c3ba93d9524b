"""Hand-written SQL for the crowd's hottest requests, read back into ordinary model instances.

A claim, a HIT page, an autosave and a submit each read the same few rows (the user with role and worker,
the assignment with its HIT and campaign). Building those queries with the ORM costs more CPU than running
them: compiling a three-table `select_related` and populating its instances takes about 1.4 ms, the query
itself 0.15 ms (`bench/request_profile.py`). So those few reads are written once as SQL text here, with
every column of each model listed from its `_meta`, and turned into instances with `Model.from_db`, exactly
what the ORM would have built: fields, `_state` and the related-object caches.

    sql = f"SELECT {select_list(Assignment, 'a')}, {select_list(Hit, 'h')} FROM ... WHERE a.id = %s"
    assignment, hit = instances(row, Assignment, Hit)
    attach(assignment, "hit", hit)

Only reads that run on every worker request belong here; everything else stays in the ORM. The same goes
for the few writes of a claim and a submit (a new lease and its event, a status change and its event):
`insert_values` gives the columns and values the ORM's INSERT would send, and the caller writes both rows
in one statement (`annotator.crowd.services.assignments`).

On PostgreSQL, `fetch_one` / `fetch_all` run each statement as a prepared statement of the connection
(PREPARE once per connection, then EXECUTE): planning the claim's HIT query took 0.7 ms, running it 0.12 ms.
Statements are named after their text, so the same text is prepared once per connection. A pooler in
transaction mode (PgBouncer) hands the next transaction to another server connection, where the statement
was never prepared: with settings.DATABASE_TRANSACTION_POOLING on, the SQL text is sent each time instead.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache

from django.conf import settings
from django.db import connection
from django.db.models import Model
from django.db.models.fields.related_descriptors import ReverseOneToOneDescriptor


@cache
def _columns(model: type[Model]) -> tuple[str, ...]:
    return tuple(field.column for field in model._meta.concrete_fields)


def select_list(model: type[Model], alias: str) -> str:
    """Every concrete column of `model`, qualified by `alias`, in `_meta` order (what `from_db` expects)."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(column)}" for column in _columns(model))


BIGINT_RANGE = range(-(2**63), 2**63)


def ids_fit(*values: int) -> bool:
    """Whether every id fits a 64-bit key column. An id from a URL may not, and PostgreSQL answers an
    out-of-range parameter with an error; the ORM returns no rows for it, and so do callers of this module."""
    return all(value in BIGINT_RANGE for value in values)


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@cache
def _converters(model: type[Model], vendor: str) -> tuple[tuple[int, tuple], ...]:
    """Per column that needs one, the functions the ORM applies to its raw value: the backend's (SQLite's
    timestamps made aware, its booleans) and the field's own (JSON text parsed)."""
    converters = []
    for index, field in enumerate(model._meta.concrete_fields):
        column = field.cached_col
        functions = tuple(connection.ops.get_db_converters(column) + column.get_db_converters(connection))
        if functions:
            converters.append((index, functions))
    return tuple(converters)


def instances(row, *models: type[Model]) -> list[Model | None]:
    """Cut one row of `select_list(models[0]), select_list(models[1]), ...` into one instance per model,
    each value converted as the ORM converts it.

    An instance whose primary key is NULL (the empty side of a LEFT JOIN) comes back as None.
    """
    built, start = [], 0
    for model in models:
        width = len(_columns(model))
        values = list(row[start : start + width])
        start += width
        if values[0] is None:
            built.append(None)
            continue
        for index, functions in _converters(model, connection.vendor):
            for function in functions:
                values[index] = function(values[index], model._meta.concrete_fields[index].cached_col, connection)
        built.append(model.from_db(connection.alias, None, values))
    return built


def attach(instance: Model, name: str, related: Model | None) -> None:
    """Cache `related` as `instance.<name>` (a forward or reverse one-to-one or foreign key), as
    `select_related` does: reading it costs no query; None makes a reverse one-to-one raise DoesNotExist."""
    descriptor = getattr(type(instance), name)
    holder = descriptor.related if isinstance(descriptor, ReverseOneToOneDescriptor) else descriptor.field
    holder.set_cached_value(instance, related)


_PLACEHOLDER = re.compile(r"%s")


@cache
def _prepared(sql: str) -> tuple[str, str, str]:
    """(name, PREPARE statement, EXECUTE statement with %s for the driver) of one SQL text."""
    name = "vc_" + hashlib.sha1(sql.encode()).hexdigest()[:20]
    count = 0

    def numbered(_match):
        nonlocal count
        count += 1
        return f"${count}"

    prepare = f"PREPARE {name} AS {_PLACEHOLDER.sub(numbered, sql)}"
    execute = f"EXECUTE {name}({', '.join(['%s'] * count)})" if count else f"EXECUTE {name}"
    return name, prepare, execute


def _execute(cursor, sql: str, params) -> None:
    if connection.vendor != "postgresql" or settings.DATABASE_TRANSACTION_POOLING:
        cursor.execute(sql, params)
        return
    name, prepare, execute = _prepared(sql)
    raw = connection.connection
    known = getattr(connection, "_vericap_prepared", None)
    if known is None or known[0] is not raw:  # a new connection (or a replaced one) has none of them
        known = (raw, set())
        connection._vericap_prepared = known
    if name not in known[1]:
        cursor.execute(prepare)
        known[1].add(name)
    cursor.execute(execute, params)


def fetch_one(sql: str, params):
    """The first row of `sql` (%s placeholders), prepared once per connection on PostgreSQL."""
    with connection.cursor() as cursor:
        _execute(cursor, sql, params)
        return cursor.fetchone()


def execute(sql: str, params) -> int:
    """Run `sql` (%s placeholders), prepared once per connection on PostgreSQL; the rows it touched."""
    with connection.cursor() as cursor:
        _execute(cursor, sql, params)
        return cursor.rowcount


def insert_values(instance: Model) -> tuple[tuple[str, ...], list]:
    """(columns, values) of the INSERT the ORM would send for `instance`: every concrete field but an
    automatic primary key, each after its `pre_save` (auto_now_add stamps the instance as the ORM does)
    and prepared for this connection."""
    fields = [field for field in instance._meta.concrete_fields if not field.primary_key]
    values = [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields]
    return tuple(field.column for field in fields), values


def fetch_all(sql: str, params) -> list:
    """Every row of `sql` (%s placeholders), prepared once per connection on PostgreSQL."""
    with connection.cursor() as cursor:
        _execute(cursor, sql, params)
        return cursor.fetchall()
