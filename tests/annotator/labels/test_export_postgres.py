"""`labels_export_postgres` / `manage.py export_labels --to postgres`: COPY into a researcher's database."""

import psycopg2
import pytest
from django.core.management import call_command
from django.db import connection

from annotator import models
from annotator.core.errors import ApplicationError
from annotator.labels.services.exports.postgres import (
    PG_ADDED_COLUMNS,
    PG_COLUMNS,
    labels_export_postgres,
)
from tests.research_helpers import LABELLED_PAIRS, research_campaign

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
TABLE = "vericap_labels"


@pytest.fixture
def target_dsn():
    """A throwaway database next to the test database, standing in for the researcher's own."""
    if connection.vendor == "postgresql":
        params = connection.get_connection_params()
        name = f"{params['dbname']}_export_target"
        base = {key: params[key] for key in ("host", "port", "user") if params.get(key)}
    else:  # the embedded SQLite source (its COPY rows are made in Python) into the local PostgreSQL, if any
        name, base = "vericap_test_export_target", {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
    try:
        admin = psycopg2.connect(dbname="postgres", connect_timeout=3, **base)
    except psycopg2.OperationalError:
        pytest.skip("needs a PostgreSQL server to export into")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            # template0: template1 may be busy with other test runs creating their databases.
            cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    admin.close()
    dsn = " ".join(f"{key}={value}" for key, value in {**base, "dbname": name}.items())
    with psycopg2.connect(dsn) as target, target.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
    return dsn


def rows(dsn, campaign_id):
    with psycopg2.connect(dsn) as target, target.cursor() as cursor:
        cursor.execute(
            f"SELECT image_source_id, caption_source_id, choice, is_positive, is_positive_strict, confidence, stage "
            f"FROM {TABLE} WHERE campaign_id = %s ORDER BY pair_id",
            [campaign_id],
        )
        return cursor.fetchall()


def test_export_creates_the_table_and_rerunning_updates_instead_of_duplicating(target_dsn):
    campaign = research_campaign()
    result = labels_export_postgres(campaign=campaign, method=None, dsn=target_dsn, table=TABLE)
    assert result["rows"] == len(LABELLED_PAIRS) and result["method"] == "majority"
    first = rows(target_dsn, campaign.pk)
    assert [(image, caption, choice) for image, caption, choice, *_ in first] == [
        (image, caption, str(choice)) for image, caption, _, choice in LABELLED_PAIRS
    ]
    assert first[0][3:] == (True, True, 0.75, "i2t")

    # Re-run after a label changed and another vanished: updated and deleted, never duplicated.
    changed = models.Label.objects.get(pair__campaign=campaign, pair__caption__source_id="32")
    changed.choice, changed.is_positive = models.Choice.PARTIALLY_YES, True
    changed.save()
    models.Label.objects.filter(pair__campaign=campaign, pair__caption__source_id="12").delete()
    result = labels_export_postgres(campaign=campaign, method="majority", dsn=target_dsn, table=TABLE)
    assert (result["inserted"], result["updated"], result["deleted"]) == (0, 1, 1)
    second = rows(target_dsn, campaign.pk)
    assert len(second) == len(LABELLED_PAIRS) - 1
    assert ("1", "32", "partially_yes") in [row[:3] for row in second]
    models.Label.objects.create(
        pair=campaign.pairs.get(caption__source_id="12"),
        method="majority",
        choice="yes",
        is_positive=True,
        is_positive_strict=True,
        confidence=1.0,
        answer_count=2,
    )
    result = labels_export_postgres(campaign=campaign, method="majority", dsn=target_dsn, table=TABLE)
    assert (result["inserted"], result["updated"], result["deleted"]) == (1, 0, 0)  # nothing else rewritten
    assert len(rows(target_dsn, campaign.pk)) == len(LABELLED_PAIRS)


def test_the_table_carries_the_probability_and_its_interval_also_into_an_older_table(target_dsn):
    """Each row has P(positive) and its 90% interval; a table an older export made (without those columns)
    gets them on the next export, its rows updated rather than duplicated."""
    campaign = research_campaign(method="posterior")
    models.Label.objects.filter(pair__campaign=campaign).update(
        probability=0.8, probability_low=0.6, probability_high=0.93
    )
    old_columns = ", ".join(f"{name} {kind}" for name, kind in PG_COLUMNS if name not in PG_ADDED_COLUMNS)
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {TABLE} ({old_columns}, PRIMARY KEY (campaign_id, pair_id, method))")
    result = labels_export_postgres(campaign=campaign, method="posterior", dsn=target_dsn, table=TABLE)
    assert result["inserted"] == len(LABELLED_PAIRS)
    models.Label.objects.filter(pair__campaign=campaign, pair__caption__source_id="32").update(probability=0.1)
    result = labels_export_postgres(campaign=campaign, method="posterior", dsn=target_dsn, table=TABLE)
    assert (result["inserted"], result["updated"], result["deleted"]) == (0, 1, 0)
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute(
            f"SELECT caption_source_id, probability, probability_low, probability_high, score_low FROM {TABLE} "
            "WHERE campaign_id = %s ORDER BY pair_id",
            [campaign.pk],
        )
        exported = cursor.fetchall()
    assert len(exported) == len(LABELLED_PAIRS)
    assert {row[1:] for row in exported if row[0] != "32"} == {(0.8, 0.6, 0.93, None)}
    assert [row[1] for row in exported if row[0] == "32"] == [0.1]


def test_other_campaigns_rows_are_left_alone(target_dsn):
    first, second = research_campaign(), research_campaign()
    labels_export_postgres(campaign=first, method=None, dsn=target_dsn, table=TABLE)
    models.Label.objects.filter(pair__campaign=second).delete()
    models.Label.objects.create(
        pair=second.pairs.first(),
        method="majority",
        choice="yes",
        is_positive=True,
        is_positive_strict=True,
        confidence=1.0,
        answer_count=1,
    )
    labels_export_postgres(campaign=second, method=None, dsn=target_dsn, table=TABLE)
    assert len(rows(target_dsn, first.pk)) == len(LABELLED_PAIRS)
    assert len(rows(target_dsn, second.pk)) == 1


def test_the_command_writes_into_a_schema_qualified_table(target_dsn, capsys):
    campaign = research_campaign()
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute("CREATE SCHEMA IF NOT EXISTS research")
        cursor.execute("DROP TABLE IF EXISTS research.eccv")
    call_command(
        "export_labels",
        "--campaign",
        str(campaign.pk),
        "--to",
        "postgres",
        "--dsn",
        target_dsn,
        "--table",
        "research.eccv",
    )
    assert '"rows": 7' in capsys.readouterr().err
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM research.eccv")
        assert cursor.fetchone()[0] == len(LABELLED_PAIRS)


@pytest.mark.parametrize(
    ("table", "dsn", "message"),
    [
        ("labels; DROP TABLE x", None, "table name"),
        (TABLE, "host=127.0.0.1 port=1 dbname=nowhere connect_timeout=2", "Cannot connect"),
    ],
)
def test_bad_table_or_dsn_is_a_clear_error(target_dsn, table, dsn, message):
    campaign = research_campaign()
    with pytest.raises(ApplicationError, match=message):
        labels_export_postgres(campaign=campaign, method=None, dsn=dsn or target_dsn, table=table)


def test_a_failing_target_leaves_the_table_as_it_was(target_dsn):
    """A COPY the target refuses (here: a column of the wrong type) rolls back; nothing half-written stays."""
    campaign = research_campaign()
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {TABLE} (campaign_id bigint, pair_id bigint, method text, kind integer, "
            "PRIMARY KEY (campaign_id, pair_id, method))"
        )
    with pytest.raises(ApplicationError, match="refused"):
        labels_export_postgres(campaign=campaign, method=None, dsn=target_dsn, table=TABLE)
    with psycopg2.connect(target_dsn) as target, target.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {TABLE}")
        assert cursor.fetchone()[0] == 0


def test_removed_captions_are_left_out_and_a_rerun_deletes_their_rows(target_dsn):
    """A confirmed removal leaves the table (a re-run deletes its rows); proposed and dismissed ones stay."""
    campaign = research_campaign()
    captions = {caption.source_id: caption for caption in models.Caption.objects.filter(dataset=campaign.dataset)}

    def propose(source_id, status):
        return models.CleanupProposal.objects.create(
            campaign=campaign, kind=models.CleanupKind.NOT_A_DESCRIPTION, caption=captions[source_id], status=status
        )

    propose("12", models.CleanupStatus.CONFIRMED)
    later = propose("22", models.CleanupStatus.PROPOSED)
    propose("31", models.CleanupStatus.DISMISSED)
    result = labels_export_postgres(campaign=campaign, method=None, dsn=target_dsn, table=TABLE)
    kept = [(image, caption) for image, caption, _, _ in LABELLED_PAIRS if caption != "12"]
    assert result["rows"] == len(kept)
    assert [row[:2] for row in rows(target_dsn, campaign.pk)] == kept

    later.status = models.CleanupStatus.CONFIRMED
    later.save()
    result = labels_export_postgres(campaign=campaign, method=None, dsn=target_dsn, table=TABLE)
    assert (result["inserted"], result["updated"], result["deleted"]) == (0, 0, 2)  # caption 22 was in two pairs
    assert [row[:2] for row in rows(target_dsn, campaign.pk)] == [pair for pair in kept if pair[1] != "22"]
