"""A label's exported columns, declared once in `LABEL_COLUMNS`.

Everything else is derived from it: the select list of the label exports (`annotator.labels.services.exports.rows`),
the row their writers read (`row_type`, `row_values`), the CSV header and cells (`csv_columns`, `csv_cells`),
the JSONL record's pair and label fields (`jsonl_fields`), and the Postgres table: its columns and types
(`pg_columns`), its key (`pg_key`) and the columns a table made by an older export gets on the next one
(`pg_added_columns`).

The order of `LABEL_COLUMNS` is the CSV's and the JSONL's; the Postgres table has its key first, then the other
columns in this order. To add a column, add one `LabelColumn`: with `added=True` if it has a Postgres type, so
that tables made before it get it (nullable) by ALTER TABLE.

Pure: no Django, so the declaration and what is derived from it are tested without a database.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

# Where a column goes in a JSONL record, whose keys are, in order: the PAIR fields, "provenance", the VERDICT
# fields, "label" (an object of the LABEL fields), "answers", then the IF_SET fields where they are not null.
PAIR, VERDICT, LABEL, IF_SET = "pair", "verdict", "label", "if_set"


@dataclass(frozen=True)
class LabelColumn:
    """One exported column of a label.

    `sql` is its expression over the export's select: `l` the label, `p` its pair, `i`/`c`/`oi`/`oc` the pair's
    image, caption, other image and other caption. A column without `sql` is computed from the row by `derive`.
    """

    name: str  # the row's field, the CSV header and the JSONL key
    sql: str | None = None
    pg_type: str | None = None  # its type in the Postgres table; None: not in the table
    pg_name: str = ""  # its name in the Postgres table, where it is not `name`
    key: bool = False  # part of the Postgres table's primary key
    added: bool = False  # added to the Postgres table after its first release (nullable)
    csv: bool = True
    jsonl: str | None = None  # PAIR, VERDICT, LABEL or IF_SET; None: not in JSONL
    jsonl_interval: str = ""  # JSONL: the [low, high] list this bound is part of (null when its low is null)
    derive: Callable | None = None  # the value from the row, for a column without `sql`

    @property
    def table_name(self) -> str:
        return self.pg_name or self.name

    @property
    def boolean(self) -> bool:
        return (self.pg_type or "").startswith("boolean")


def _verdict(row) -> str:
    return "positive" if row.is_positive else "negative"


_DOUBLE = "double precision"
LABEL_COLUMNS: tuple[LabelColumn, ...] = (
    LabelColumn("campaign_id", "p.campaign_id", "bigint NOT NULL", key=True, csv=False),
    LabelColumn("pair_id", "p.id", "bigint NOT NULL", key=True, jsonl=PAIR),
    LabelColumn("kind", "p.kind", "text NOT NULL", jsonl=PAIR),
    LabelColumn("image", "i.source_id", "text", pg_name="image_source_id", jsonl=PAIR),
    LabelColumn("caption", "c.source_id", "text", pg_name="caption_source_id", jsonl=PAIR),
    LabelColumn("other_image", "oi.source_id", "text", pg_name="other_image_source_id", jsonl=IF_SET),
    LabelColumn("other_caption", "oc.source_id", "text", pg_name="other_caption_source_id", jsonl=IF_SET),
    LabelColumn("is_original", "p.is_original", "boolean NOT NULL", jsonl=PAIR),
    LabelColumn("stage", "p.direction", "text NOT NULL", jsonl=PAIR),  # the stage that proposed the pair
    LabelColumn("method", "l.method", "text NOT NULL", key=True, jsonl=LABEL),
    LabelColumn("verified", derive=_verdict, jsonl=VERDICT),
    LabelColumn("choice", "NULLIF(l.choice, '')", "text", jsonl=LABEL),  # empty on 0-5 scales: null
    LabelColumn("score", "l.score", _DOUBLE, jsonl=LABEL),
    LabelColumn("is_positive", "l.is_positive", "boolean NOT NULL", jsonl=LABEL),
    LabelColumn("is_positive_strict", "l.is_positive_strict", "boolean NOT NULL", jsonl=LABEL),
    LabelColumn("confidence", "l.confidence", f"{_DOUBLE} NOT NULL", jsonl=LABEL),
    LabelColumn("answer_count", "l.answer_count", "integer NOT NULL", jsonl=LABEL),
    LabelColumn("label_updated_at", "l.updated_at", "timestamptz", csv=False),
    # P(positive) and its 90% interval; a 0-5 mean's 90% interval (null where the method gives none).
    LabelColumn("probability", "l.probability", _DOUBLE, added=True, jsonl=LABEL),
    LabelColumn("probability_low", "l.probability_low", _DOUBLE, added=True, jsonl=LABEL, jsonl_interval="interval_90"),
    LabelColumn(
        "probability_high", "l.probability_high", _DOUBLE, added=True, jsonl=LABEL, jsonl_interval="interval_90"
    ),
    LabelColumn("score_low", "l.score_low", _DOUBLE, added=True, jsonl=LABEL, jsonl_interval="score_interval_90"),
    LabelColumn("score_high", "l.score_high", _DOUBLE, added=True, jsonl=LABEL, jsonl_interval="score_interval_90"),
)

# Everything below reads LABEL_COLUMNS when it is called, so a column added there is in every export.

# ---------------------------------------------------------------------------------------------- the row


def row_columns() -> tuple[LabelColumn, ...]:
    """The columns the file exports (CSV, JSONL) select, in declaration order."""
    return tuple(c for c in LABEL_COLUMNS if c.sql and (c.csv or c.jsonl))


@cache
def _row_type(names: tuple[str, ...]) -> type:
    return namedtuple("LabelRow", names)


def row_type() -> type:
    """The named tuple of one row of `row_columns()`: every writer reads the same fields."""
    return _row_type(tuple(c.name for c in row_columns()))


def _plan(columns: Sequence[LabelColumn]) -> list[tuple[int, bool, Callable | None]]:
    """Per column: its place in a row (-1: derived), whether it is a boolean, its derive function."""
    fields = row_type()._fields
    return [(-1 if c.derive else fields.index(c.name), c.boolean, c.derive) for c in columns]


def row_values(columns: Sequence[LabelColumn]) -> Callable[[tuple], list]:
    """The function from a row (a `row_type()`) to the values of `columns`: booleans as bool (SQLite gives 0
    and 1), derived columns computed. Each column's place in the row is looked up once, not per row."""
    plan = _plan(columns)

    def values(row: tuple) -> list:
        result = []
        for index, boolean, derive in plan:
            value = derive(row) if derive is not None else row[index]
            result.append(bool(value) if boolean and value is not None else value)
        return result

    return values


# ---------------------------------------------------------------------------------------------- CSV


def csv_columns() -> tuple[LabelColumn, ...]:
    return tuple(c for c in LABEL_COLUMNS if c.csv)


def csv_cells() -> Callable[[tuple], list]:
    """The function from a row to its CSV cells, in `csv_columns()`' order: null empty, booleans 1 and 0."""
    values = row_values(csv_columns())
    return lambda row: ["" if v is None else int(v) if isinstance(v, bool) else v for v in values(row)]


# ---------------------------------------------------------------------------------------------- JSONL


def jsonl_columns(section: str) -> tuple[LabelColumn, ...]:
    """The columns of a JSONL record's `section` (PAIR, VERDICT, LABEL or IF_SET), in declaration order."""
    return tuple(c for c in LABEL_COLUMNS if c.jsonl == section)


def jsonl_fields(section: str) -> Callable[[tuple], dict]:
    """The function from a row to the JSONL fields of `section`. The two bounds of an interval make one
    [low, high] list (null when the low is null); IF_SET fields are left out where null."""
    columns = jsonl_columns(section)
    steps = zip(columns, _plan(columns), strict=True)
    plan = [(c.jsonl_interval or c.name, bool(c.jsonl_interval), *step) for c, step in steps]
    intervals = {c.jsonl_interval for c in columns if c.jsonl_interval}
    keep_nulls = section != IF_SET

    def fields(row: tuple) -> dict:
        record: dict = {}
        for key, interval, index, boolean, derive in plan:
            value = derive(row) if derive is not None else row[index]
            if boolean and value is not None:
                value = bool(value)
            if interval:
                record.setdefault(key, []).append(value)
            elif keep_nulls or value is not None:
                record[key] = value
        for key in intervals:
            if record[key][0] is None:
                record[key] = None
        return record

    return fields


# ---------------------------------------------------------------------------------------------- Postgres


def table_columns() -> tuple[LabelColumn, ...]:
    """The Postgres table's columns: the key first, then the others, each in declaration order."""
    typed = [c for c in LABEL_COLUMNS if c.pg_type]
    return tuple([c for c in typed if c.key] + [c for c in typed if not c.key])


def pg_columns() -> list[tuple[str, str]]:
    """The Postgres table's (name, type) pairs, in its order."""
    return [(c.table_name, c.pg_type or "") for c in table_columns()]


def pg_key() -> tuple[str, ...]:
    return tuple(c.table_name for c in table_columns() if c.key)


def pg_added_columns() -> tuple[str, ...]:
    """Columns added after the first release: a table an older export made gets them (nullable) on the next."""
    return tuple(c.table_name for c in table_columns() if c.added)
