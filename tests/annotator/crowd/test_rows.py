"""The hot paths' hand-written reads (`annotator.crowd.rows`) build the same instances the ORM builds."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from annotator.core.errors import ApplicationError
from annotator.crowd.auth import user_with_role
from annotator.crowd.rows import fetch_one, instances, select_list, table
from annotator.crowd.services import claim_queries
from annotator.crowd.services.assignments import lock_own_assignment
from annotator.models import Assignment, Campaign, Hit, Role, Worker, WorkerStanding
from tests.factories import AssignmentFactory, WorkerFactory, live_campaign_with_hits
from tests.factories import user_with_role as make_user

pytestmark = pytest.mark.django_db


def field_values(instance):
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def test_a_row_becomes_the_instance_the_orm_builds_with_every_value_converted():
    campaign = live_campaign_with_hits(hits=1, build_report={"pairs": 3, "notes": ["a", "b"]})
    assignment = AssignmentFactory(hit=campaign.hits.get(), flags=["too_fast"])
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select_list(Assignment, 'a')}, {select_list(Campaign, 'c')} FROM {table(Assignment)} a"
            f" JOIN {table(Hit)} h ON h.id = a.hit_id JOIN {table(Campaign)} c ON c.id = h.campaign_id"
            " WHERE a.id = %s",
            [assignment.pk],
        )
        built_assignment, built_campaign = instances(cursor.fetchone(), Assignment, Campaign)

    assert field_values(built_assignment) == field_values(Assignment.objects.get(pk=assignment.pk))
    assert field_values(built_campaign) == field_values(Campaign.objects.get(pk=campaign.pk))
    assert built_assignment.flags == ["too_fast"]  # JSON parsed, not its text
    assert built_campaign.build_report == {"pairs": 3, "notes": ["a", "b"]}
    assert built_assignment.expires_at.tzinfo is not None  # aware, as the ORM gives it (SQLite included)
    assert not built_assignment._state.adding and built_assignment._state.db == "default"


def test_the_user_comes_with_role_and_worker_in_one_query():
    worker = WorkerFactory()
    requester = make_user(Role.REQUESTER)
    with CaptureQueriesContext(connection) as queries:
        loaded = user_with_role(worker.user_id)
        assert loaded.profile.role == Role.WORKER
        assert loaded.worker.pk == worker.pk and loaded.worker.user is loaded
        loaded_requester = user_with_role(str(requester.pk))  # the session keeps the id as text
        assert loaded_requester.profile.role == Role.REQUESTER
        assert getattr(loaded_requester, "worker", None) is None  # no Worker: DoesNotExist, as select_related
    assert len([query for query in queries if not query["sql"].startswith("PREPARE")]) == 2
    expected = get_user_model().objects.get(pk=worker.user_id)
    assert field_values(loaded) == field_values(expected)
    assert user_with_role(10**9) is None and user_with_role("not a number") is None


def test_the_locked_assignment_is_the_workers_own_with_its_hit_and_campaign():
    assignment = AssignmentFactory()
    with transaction.atomic():
        locked = lock_own_assignment(assignment=Assignment(pk=assignment.pk), worker=assignment.worker)
        with CaptureQueriesContext(connection) as queries:
            assert locked.hit.campaign.pk == assignment.hit.campaign_id
        assert len(queries) == 0
        with pytest.raises(ApplicationError) as refused:
            lock_own_assignment(assignment=Assignment(pk=assignment.pk), worker=WorkerFactory())
        assert refused.value.status == 404


def test_the_claims_campaign_read_carries_the_owners_standing_and_the_qualification():
    campaign = live_campaign_with_hits(hits=1)
    worker = WorkerFactory()
    with transaction.atomic():
        loaded_worker, loaded, standing = claim_queries.lock_worker_with_campaign(
            worker_id=worker.pk, campaign_id=campaign.pk
        )
    assert loaded_worker.pk == worker.pk and loaded.pk == campaign.pk
    assert standing == claim_queries.ClaimStanding()

    WorkerStanding.objects.create(requester=campaign.owner, worker=worker, soft_blocked=True, gold_clean_streak=3)
    with transaction.atomic():
        _, _, standing = claim_queries.lock_worker_with_campaign(worker_id=worker.pk, campaign_id=campaign.pk)
        _, missing, _ = claim_queries.lock_worker_with_campaign(worker_id=worker.pk, campaign_id=10**9)
        nobody, _, _ = claim_queries.lock_worker_with_campaign(worker_id=10**9, campaign_id=campaign.pk)
    assert standing == claim_queries.ClaimStanding(soft_blocked=True, gold_clean_streak=3)
    assert missing is None and nobody is None


@pytest.mark.django_db(transaction=True)
def test_a_statement_is_prepared_once_per_connection_and_again_on_a_new_one():
    worker = WorkerFactory()
    # A text no other test runs, so this connection has not prepared it yet.
    sql = f"SELECT {select_list(Worker, 'w')} FROM {table(Worker)} w WHERE w.id = %s AND w.pseudonym <> 'prep'"

    def statements(call):
        with CaptureQueriesContext(connection) as queries:
            rows = [call() for _ in range(3)]
        assert rows[0] == rows[1] == rows[2] and instances(rows[0], Worker)[0].pk == worker.pk
        return [query["sql"].split(" ")[0] for query in queries]

    expected = ["PREPARE", "EXECUTE", "EXECUTE", "EXECUTE"] if connection.vendor == "postgresql" else ["SELECT"] * 3
    assert statements(lambda: fetch_one(sql, [worker.pk])) == expected
    connection.close()  # a replaced connection (a restart, CONN_MAX_AGE) has none of its statements
    assert statements(lambda: fetch_one(sql, [worker.pk])) == expected


@pytest.mark.django_db(transaction=True)
def test_behind_a_transaction_pooler_the_text_is_sent_each_time_and_nothing_is_prepared(settings):
    # PgBouncer in transaction mode may run the next transaction on another server connection, where a
    # statement PREPAREd on this one does not exist: DATABASE_TRANSACTION_POOLING sends the SQL itself.
    settings.DATABASE_TRANSACTION_POOLING = True
    worker = WorkerFactory()
    sql = f"SELECT {select_list(Worker, 'w')} FROM {table(Worker)} w WHERE w.id = %s AND w.pseudonym <> 'pool'"
    with CaptureQueriesContext(connection) as queries:
        rows = [fetch_one(sql, [worker.pk]) for _ in range(2)]
    assert rows[0] == rows[1] and instances(rows[0], Worker)[0].pk == worker.pk
    assert [query["sql"].split(" ")[0] for query in queries] == ["SELECT", "SELECT"]
