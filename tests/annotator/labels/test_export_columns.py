"""A label's exported columns are declared once (`annotator/labels/export_columns.py`): the CSV, the JSONL and
the Postgres table follow the declaration, so a column added there is in all three, and the lists cannot drift."""

import ast
import csv
import io
import json
from pathlib import Path

import psycopg2
import pytest

from annotator import models
from annotator.labels import export_columns as columns
from annotator.labels.export_columns import (
    IF_SET,
    LABEL,
    LABEL_COLUMNS,
    PAIR,
    VERDICT,
    LabelColumn,
    csv_cells,
    csv_columns,
    jsonl_columns,
    jsonl_fields,
    pg_added_columns,
    pg_columns,
    pg_key,
    row_type,
)
from annotator.labels.services.exports.postgres import labels_export_postgres
from annotator.labels.services.exports.write import labels_write
from tests.annotator.labels.test_export_postgres import target_dsn  # noqa: F401 (the fixture)
from tests.research_helpers import LABELLED_PAIRS, research_campaign

TABLE = "vericap_label_columns"
# A column as a later release would add it: in the CSV, in JSONL's label, in the Postgres table.
QUERY = LabelColumn("query_id", "p.query_id", "bigint", added=True, jsonl=LABEL)


def export_text(campaign, fmt: str) -> str:
    out = io.BytesIO()
    labels_write(out=out, campaign_id=campaign.pk, format=fmt, method="majority", variant="", merge_original=False)
    return out.getvalue().decode()


# ---------------------------------------------------------------------------------------------- the declaration


def test_the_formats_are_the_released_ones():
    """What the declaration makes today, spelled out: reordering or renaming a column fails here."""
    assert [c.name for c in csv_columns()] == [
        "pair_id",
        "kind",
        "image",
        "caption",
        "other_image",
        "other_caption",
        "is_original",
        "stage",
        "method",
        "verified",
        "choice",
        "score",
        "is_positive",
        "is_positive_strict",
        "confidence",
        "answer_count",
        "probability",
        "probability_low",
        "probability_high",
        "score_low",
        "score_high",
    ]
    assert [name for name, _ in pg_columns()][:8] == [
        "campaign_id",
        "pair_id",
        "method",
        "kind",
        "image_source_id",
        "caption_source_id",
        "other_image_source_id",
        "other_caption_source_id",
    ]
    assert pg_key() == ("campaign_id", "pair_id", "method")
    assert pg_added_columns() == ("probability", "probability_low", "probability_high", "score_low", "score_high")
    assert {section: [c.name for c in jsonl_columns(section)] for section in (PAIR, VERDICT, IF_SET)} == {
        PAIR: ["pair_id", "kind", "image", "caption", "is_original", "stage"],
        VERDICT: ["verified"],
        IF_SET: ["other_image", "other_caption"],
    }


def test_the_declaration_is_consistent():
    names = [c.name for c in LABEL_COLUMNS]
    assert len(names) == len(set(names))
    table = [name for name, _ in pg_columns()]
    assert len(table) == len(set(table))
    for column in LABEL_COLUMNS:
        assert (column.sql is None) == (column.derive is not None), column.name  # selected or derived
        assert column.jsonl in (None, PAIR, VERDICT, LABEL, IF_SET), column.name
        assert column.csv or column.jsonl or column.pg_type, column.name  # in some export
        if column.pg_type:
            assert column.sql, column.name  # the table's COPY selects every column of it
        if column.key:
            assert "NOT NULL" in column.pg_type and not column.added, column.name
        if column.added:
            assert "NOT NULL" not in column.pg_type, column.name  # ALTER TABLE ADD COLUMN on a filled table
    intervals = [c.jsonl_interval for c in LABEL_COLUMNS if c.jsonl_interval]
    assert all(intervals.count(name) == 2 for name in intervals)  # a low and a high


def test_the_declaration_is_pure():
    """No Django, no other annotator module: what the exports derive from it is tested without a database."""
    tree = ast.parse(Path(columns.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert imported and not {name for name in imported if name.split(".")[0] in ("django", "annotator", "psycopg2")}


def test_jsonl_joins_an_intervals_bounds_and_leaves_out_an_unset_other_side():
    row_class = row_type()
    values = {name: None for name in row_class._fields}
    values.update(pair_id=7, is_original=1, is_positive=0, probability_low=0.2, probability_high=0.9)
    row = row_class(**values)
    label = jsonl_fields(LABEL)(row)
    assert (label["interval_90"], label["score_interval_90"]) == ([0.2, 0.9], None)
    assert "probability_low" not in label and label["is_positive"] is False
    assert jsonl_fields(IF_SET)(row) == {}
    assert jsonl_fields(VERDICT)(row) == {"verified": "negative"}
    assert jsonl_fields(PAIR)(row)["is_original"] is True
    cells = dict(zip([c.name for c in csv_columns()], csv_cells()(row), strict=True))
    assert (cells["is_original"], cells["is_positive"], cells["verified"], cells["score"]) == (1, 0, "negative", "")


# ---------------------------------------------------------------------------------------------- one column added


@pytest.fixture
def query_column(monkeypatch):
    """The declaration with QUERY added: the exports read it when they run."""
    monkeypatch.setattr(columns, "LABEL_COLUMNS", (*columns.LABEL_COLUMNS, QUERY))


@pytest.mark.django_db
def test_a_declared_column_is_in_the_csv_and_the_jsonl(query_column):
    campaign = research_campaign()
    queries = dict(campaign.pairs.values_list("id", "query_id"))
    rows = list(csv.DictReader(io.StringIO(export_text(campaign, "csv"))))
    assert len(rows) == len(LABELLED_PAIRS)
    assert {int(row["pair_id"]): int(row["query_id"]) for row in rows} == queries
    assert list(rows[0])[-1] == "query_id"
    lines = [json.loads(line) for line in export_text(campaign, "jsonl").splitlines()]
    assert {line["pair_id"]: line["label"]["query_id"] for line in lines} == queries


@pytest.mark.django_db
@pytest.mark.postgres
def test_a_declared_column_is_in_the_postgres_table_also_one_made_before_it(target_dsn, monkeypatch):  # noqa: F811
    campaign = research_campaign()
    queries = dict(campaign.pairs.values_list("id", "query_id"))
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
    labels_export_postgres(campaign=campaign, method=None, dsn=target_dsn, table=TABLE)  # made without it
    monkeypatch.setattr(columns, "LABEL_COLUMNS", (*columns.LABEL_COLUMNS, QUERY))
    models.Label.objects.filter(pair__campaign=campaign, pair__caption__source_id="32").delete()
    result = labels_export_postgres(campaign=campaign, method=None, dsn=target_dsn, table=TABLE)
    # Every row changed (its new column was null): updated, and the vanished label's row deleted.
    assert (result["inserted"], result["updated"], result["deleted"]) == (0, len(LABELLED_PAIRS) - 1, 1)
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute(f"SELECT pair_id, query_id FROM {TABLE} WHERE campaign_id = %s", [campaign.pk])
        exported = dict(cursor.fetchall())
        cursor.execute(f"DROP TABLE {TABLE}")
    assert exported == {pair: query for pair, query in queries.items() if pair in exported}
    assert len(exported) == len(LABELLED_PAIRS) - 1
    result = labels_export_postgres(campaign=campaign, method=None, dsn=target_dsn, table=TABLE)  # a new table
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute(f"SELECT pair_id, query_id FROM {TABLE} WHERE campaign_id = %s", [campaign.pk])
        assert dict(cursor.fetchall()) == exported
        cursor.execute(f"DROP TABLE {TABLE}")
