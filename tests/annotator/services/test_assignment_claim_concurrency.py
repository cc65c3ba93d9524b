"""50 threads claiming at once on the real Postgres (issue 5: SKIP LOCKED leases)."""

import threading
from collections import Counter

import pytest
from django.db import connection, connections
from django.utils import timezone

from annotator.errors import ApplicationError
from annotator.models import Assignment, AssignmentStatus, QualificationAttempt
from annotator.services.assignments import assignment_claim
from tests.factories import WorkerFactory, live_campaign_with_hits

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 50


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("needs the real PostgreSQL (SELECT ... FOR UPDATE SKIP LOCKED)")


def test_fifty_threads_never_exceed_redundancy_nor_double_assign():
    # 8 HITs x redundancy 3 = 24 slots for 50 concurrent claims (25 workers, each claiming twice at once).
    campaign = live_campaign_with_hits(hits=8, candidates=1, redundancy=3)
    workers = [WorkerFactory() for _ in range(THREADS // 2)]
    for worker in workers:
        QualificationAttempt.objects.create(
            worker=worker, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
        )
    barrier = threading.Barrier(THREADS)
    results, errors = [], []

    def claim(worker):
        try:
            barrier.wait()
            results.append(assignment_claim(campaign=campaign, worker=worker).pk)
        except ApplicationError as error:
            errors.append(error.status)
        except Exception as error:  # anything else is a bug: keep it for the assertion message
            errors.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claim, args=(workers[i % len(workers)],)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assignments = list(Assignment.objects.filter(hit__campaign=campaign))
    per_hit = Counter(a.hit_id for a in assignments)
    per_worker_hit = Counter((a.worker_id, a.hit_id) for a in assignments)
    per_worker = Counter(a.worker_id for a in assignments)
    assert all(status == 404 for status in errors if isinstance(status, int)), errors
    assert not [e for e in errors if not isinstance(e, int)], errors
    assert max(per_hit.values()) <= 3
    assert max(per_worker_hit.values()) == 1
    # a worker's two simultaneous claims get the same lease (idempotent), never two HITs
    assert max(per_worker.values()) == 1
    assert len(assignments) == 24  # 25 workers for 24 slots: every slot taken, one worker told none is left
    assert all(a.status == AssignmentStatus.RESERVED for a in assignments)
    assert len(set(results)) == len(assignments)


def test_claims_racing_returns_never_lose_a_slot():
    """Claims and returns at once: a HIT with a free slot must stay visible to claims (Hit.has_room)."""
    from annotator.models import ACTIVE_ASSIGNMENT_STATUSES
    from annotator.services.assignments import assignment_return

    campaign = live_campaign_with_hits(hits=4, candidates=1, redundancy=2)
    workers = [WorkerFactory() for _ in range(24)]
    for worker in workers:
        QualificationAttempt.objects.create(
            worker=worker, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
        )
    barrier = threading.Barrier(len(workers))
    errors = []

    def claim_then_maybe_return(index, worker):
        try:
            barrier.wait()
            for round_ in range(3):
                try:
                    assignment = assignment_claim(campaign=campaign, worker=worker)
                except ApplicationError as error:
                    assert error.status == 404, error.message
                    continue
                if (index + round_) % 2 == 0:
                    assignment_return(assignment=assignment, worker=worker)
        except Exception as error:
            errors.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claim_then_maybe_return, args=(i, w)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    for hit in campaign.hits.all():
        active = hit.assignments.filter(status__in=ACTIVE_ASSIGNMENT_STATUSES).count()
        assert active <= hit.assignments_required
        assert hit.has_room or active >= hit.assignments_required, (hit.pk, active)
