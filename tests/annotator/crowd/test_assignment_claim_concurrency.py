"""50 threads claiming at once on the real Postgres (SKIP LOCKED leases: no HIT leased twice)."""

import threading
import time
from collections import Counter

import pytest
from django.db import connection, connections
from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.crowd.services.assignments import assignment_claim
from annotator.models import Assignment, AssignmentStatus, QualificationAttempt, WorkerStanding
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
    from annotator.crowd.services.assignments import assignment_return
    from annotator.models import ACTIVE_ASSIGNMENT_STATUSES

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


def test_workers_claiming_in_parallel_never_meet_a_pair_twice():
    """12 workers, each claiming and submitting HITs in its own thread, on HITs that share gold pairs two by
    two: no worker is ever handed a pair it saw, no HIT goes over its redundancy, no claim errs."""
    from annotator.crowd.selectors.work import hit_item_tokens
    from annotator.crowd.services.answers import assignment_submit
    from annotator.models import HitItem
    from tests.factories import HitItemFactory, PairFactory

    campaign = live_campaign_with_hits(hits=12, candidates=2, redundancy=3, qualification_items=0)
    hits = list(campaign.hits.order_by("index"))
    for first, second in zip(hits[::2], hits[1::2], strict=True):  # hits 2k and 2k+1 share one extra pair
        shared = PairFactory(campaign=campaign)
        HitItemFactory(hit=first, position=99, pair=shared, role="gold_positive")
        HitItemFactory(hit=second, position=99, pair=shared, role="gold_positive")
    workers = [WorkerFactory() for _ in range(12)]
    barrier = threading.Barrier(len(workers))
    errors = []

    def work(worker):
        try:
            barrier.wait()
            while True:
                try:
                    assignment = assignment_claim(campaign=campaign, worker=worker)
                except ApplicationError as error:
                    if error.status != 404:
                        errors.append(error.message)
                    return
                answers = [{"item_token": t, "choice": "yes"} for t in hit_item_tokens(hit=assignment.hit)]
                assignment_submit(assignment=assignment, worker=worker, answers=answers)
        except Exception as error:
            errors.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assignments = list(Assignment.objects.filter(hit__campaign=campaign))
    assert max(Counter(a.hit_id for a in assignments).values()) <= 3
    for worker in workers:
        pairs = list(HitItem.objects.filter(hit__assignments__worker=worker).values_list("pair_id", flat=True))
        assert len(pairs) == len(set(pairs)), f"{worker} met a pair twice"
        hit_ids = {a.hit_id for a in assignments if a.worker_id == worker.pk}
        assert not any(h.pk in hit_ids and hits[i ^ 1].pk in hit_ids for i, h in enumerate(hits))
    assert len(assignments) == 12 * 3  # every slot filled: 12 workers, each can take one HIT of each pair


def test_racing_claims_with_gold_preferences_never_exceed_redundancy():
    """Adaptive gold: half the workers have a clean record (gold-light first), half are new (full gold first);
    8 HITs, half gold-light, x redundancy 3 = 24 slots for 50 concurrent claims."""
    campaign = live_campaign_with_hits(
        hits=8, candidates=1, redundancy=3, gold_light_hits=(1, 3, 5, 7), gold_light_share=0.5
    )
    workers = [WorkerFactory() for _ in range(THREADS // 2)]
    for number, worker in enumerate(workers):
        QualificationAttempt.objects.create(
            worker=worker, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
        )
        if number % 2:
            WorkerStanding.objects.create(requester=campaign.owner, worker=worker, gold_clean_streak=20)
    barrier = threading.Barrier(THREADS)
    errors = []

    def claim(worker):
        try:
            barrier.wait()
            assignment_claim(campaign=campaign, worker=worker)
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
    assert all(status == 404 for status in errors if isinstance(status, int)), errors
    assert not [e for e in errors if not isinstance(e, int)], errors
    assert max(Counter(a.hit_id for a in assignments).values()) <= 3
    assert max(Counter(a.worker_id for a in assignments).values()) == 1
    assert len(assignments) == 24


def _backend_waits_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", [pid])
        return cursor.fetchone()[0] > 0


def _until(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_waiting_claim_never_holds_one_hit_while_it_waits_for_another():
    """The deadlock that test_claims_racing_returns_never_lose_a_slot met under load, made to happen in order.

    Every HIT with room is locked: HIT 1 by a claim that is filling it, HIT 2 by a transaction that will then
    free a slot of HIT 1 (an expiry batch goes by HIT id, not in the claim's order). A third claim waits.
    It used to wait with `FOR UPDATE ... LIMIT 1`, which, when HIT 1 came back full, kept HIT 1's lock and
    went on to wait for HIT 2: the second transaction then waited for HIT 1, a deadlock that PostgreSQL broke
    by failing one of them. Now the claim waits for one HIT only, by id, and holds no other HIT's lock.
    """
    from django.db import transaction

    from annotator.crowd.services.hit_room import hit_room_freed
    from tests.factories import AssignmentFactory

    campaign = live_campaign_with_hits(hits=2, candidates=1, redundancy=1, qualification_items=0)
    first, second = campaign.hits.order_by("index")
    filler, claimer = WorkerFactory(), WorkerFactory()
    locked = [threading.Event(), threading.Event()]
    go = [threading.Event(), threading.Event()]
    outcome, errors, pid = {}, [], {}

    def filling_hit_one():
        try:
            with transaction.atomic():
                list(first.__class__.objects.select_for_update().filter(pk=first.pk))
                locked[0].set()
                go[0].wait(20)
                AssignmentFactory(hit=first, worker=filler, status=AssignmentStatus.RESERVED)
                first.__class__.objects.filter(pk=first.pk).update(has_room=False)
        except Exception as error:
            errors.append(("filler", repr(error)))
        finally:
            connections.close_all()

    def holding_hit_two_then_freeing_hit_one():
        try:
            with transaction.atomic():
                list(second.__class__.objects.select_for_update().filter(pk=second.pk))
                locked[1].set()
                go[1].wait(20)
                hit_room_freed(hit_id=first.pk)
        except Exception as error:
            errors.append(("freer", repr(error)))
        finally:
            connections.close_all()

    def claiming():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                pid["claimer"] = cursor.fetchone()[0]
            outcome["hit"] = assignment_claim(campaign=campaign, worker=claimer).hit_id
        except ApplicationError as error:
            outcome["status"] = error.status
        except Exception as error:
            errors.append(("claimer", repr(error)))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=filling_hit_one), threading.Thread(target=holding_hit_two_then_freeing_hit_one)]
    for thread in threads:
        thread.start()
    assert locked[0].wait(10) and locked[1].wait(10)
    claim_thread = threading.Thread(target=claiming)
    claim_thread.start()
    assert _until(lambda: "claimer" in pid and _backend_waits_on_a_lock(pid["claimer"])), "the claim never waited"
    go[0].set()  # HIT 1 fills up and its lock is released
    threads[0].join(10)
    # The claim has either answered, or waits again: for HIT 2, the old deadlock's first half.
    _until(lambda: not claim_thread.is_alive() or _backend_waits_on_a_lock(pid["claimer"]), seconds=3)
    go[1].set()  # the second transaction frees a slot of HIT 1: it needs HIT 1's row
    threads[1].join(20)
    claim_thread.join(20)
    assert not errors, errors  # a deadlock fails one of them with "deadlock detected"
    assert outcome in ({"status": 404}, {"hit": first.pk}, {"hit": second.pk}), outcome
