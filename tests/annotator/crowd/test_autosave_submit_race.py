"""An autosave that arrives while the same HIT is being submitted (real PostgreSQL, two connections).

The autosave's single statement writes only while the assignment is still the worker's open lease, and its
FOR UPDATE waits for the submit holding the row: once the submit commits, the autosave finds a submitted
HIT and is refused with 409; no answer is written after the submission.
"""

import threading
import time

import pytest
from django.db import connection, connections, transaction

from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.crowd.services.answers import answer_save
from annotator.crowd.services.assignments import assignment_transition, lock_own_assignment
from annotator.models import Answer, Assignment, AssignmentStatus
from tests.factories import AssignmentFactory, live_campaign_with_hits

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("needs the real PostgreSQL (row locks across two connections)")


def test_an_autosave_waiting_on_a_submit_is_refused_once_the_submit_commits():
    assignment = AssignmentFactory(hit=live_campaign_with_hits(hits=1).hits.get())
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    locked, outcome = threading.Event(), {}

    def autosave():
        try:
            locked.wait(10)
            started = time.monotonic()
            try:
                answer_save(
                    assignment=Assignment(pk=assignment.pk), worker=assignment.worker, item_token=token, choice="yes"
                )
                outcome["result"] = "saved"
            except ApplicationError as error:
                outcome["result"] = error.status
            outcome["waited"] = time.monotonic() - started
        finally:
            connections.close_all()

    thread = threading.Thread(target=autosave)
    thread.start()
    with transaction.atomic():  # the submit: holds the assignment's row lock until it commits
        held = lock_own_assignment(assignment=Assignment(pk=assignment.pk), worker=assignment.worker)
        locked.set()
        time.sleep(0.5)  # the autosave has read the open lease and now waits on the lock
        assignment_transition(assignment=held, target=AssignmentStatus.SUBMITTED, reason="submitted")
    thread.join(15)

    assert outcome["result"] == 409
    assert outcome["waited"] >= 0.3  # it waited for the submit instead of writing beside it
    assert not Answer.objects.filter(assignment_id=assignment.pk).exists()


def test_an_autosave_on_an_open_lease_is_written_once_and_only_grows_its_seconds():
    assignment = AssignmentFactory(hit=live_campaign_with_hits(hits=1).hits.get())
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    first = answer_save(
        assignment=Assignment(pk=assignment.pk),
        worker=assignment.worker,
        item_token=token,
        choice="no",
        seconds_spent=9,
    )
    again = answer_save(
        assignment=Assignment(pk=assignment.pk),
        worker=assignment.worker,
        item_token=token,
        choice="yes",
        seconds_spent=4,
    )
    stored = Answer.objects.get(assignment_id=assignment.pk)
    assert first.pk == again.pk == stored.pk
    assert (stored.choice, stored.seconds_spent) == ("yes", 9.0)
