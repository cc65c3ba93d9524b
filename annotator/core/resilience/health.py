"""What is up right now: the database, the cache, the broker, the storage, Celery workers, queues, the sweep.

Used by /healthz (for load balancers and `docker compose`) and by the operations page (for people). Only
the database is essential: without it nothing works and /healthz answers 503 ("down"). Everything else
degrades: without Redis the cache answers misses and sessions come from the database, without a broker or
workers submissions still commit and the sweep scores them later. Those answer 200 with "degraded", so a
container orchestrator does not restart healthy web servers because Redis blinked.
"""

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection
from django.utils import timezone

from config.celery import app as celery_app

QUEUES = ("default", "gpu")
WORKERS_CACHE_KEY = "vericap:health:workers"
WORKERS_CACHE_SECONDS = 10
# A task waiting longer than this in a queue, or a sweep pass older than this many intervals, is reported.
OLDEST_TASK_WARNING_SECONDS = 300.0
SWEEP_LATE_INTERVALS = 4


@dataclass
class Health:
    status: str = "ok"  # ok, degraded, down
    checks: dict = field(default_factory=dict)
    workers: list = field(default_factory=list)  # [{"name": ..., "queues": [...]}]
    queues: dict = field(default_factory=dict)  # name -> {"waiting": n, "oldest_seconds": s or None}
    eager: bool = False

    def fail(self, name: str, detail: str, *, essential: bool = False) -> None:
        self.checks[name] = f"error: {detail}"
        self.status = "down" if essential else ("down" if self.status == "down" else "degraded")

    def warn(self, name: str, detail: str) -> None:
        self.checks[name] = f"degraded: {detail}"
        if self.status == "ok":
            self.status = "degraded"

    def as_dict(self) -> dict:
        return {
            "status": self.status,
            "checks": self.checks,
            "workers": self.workers,
            "queues": self.queues,
        }


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return f"ok ({connection.vendor})"


def check_cache() -> str:
    ping = getattr(cache, "ping", None)
    if ping is None:
        return f"ok ({type(cache).__name__}, per process)"
    ping()
    return "ok (redis)"


def check_storage() -> str:
    name = default_storage.save(f"healthz/{uuid.uuid4().hex}.txt", ContentFile(b"ok"))
    try:
        with default_storage.open(name) as handle:
            if handle.read() != b"ok":
                raise OSError("the storage returned other bytes than were written")
    finally:
        default_storage.delete(name)
    return f"ok ({type(default_storage).__name__})"


def check_broker() -> str:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=0, timeout=2)  # one try: a health check reports, it does not wait
    return f"ok ({celery_app.conf.broker_url.split('://')[0]})"


# Broker calls that kombu retries internally (a Redis that refuses writes) must not hold a health check up.
_PROBES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="health-probe")
PROBE_SECONDS = 3.0


def bounded(call, seconds: float = PROBE_SECONDS):
    """Run `call` with a deadline; TimeoutError when it does not answer in time (it finishes in the background)."""
    future = _PROBES.submit(call)
    try:
        return future.result(timeout=seconds)
    except FutureTimeout:
        raise TimeoutError(f"no answer within {seconds:.0f} s") from None


def alive_workers(*, timeout: float = 1.0, use_cache: bool = True) -> list[dict]:
    """Celery workers that answered a broadcast within `timeout`, with the queues they consume.

    Cached for WORKERS_CACHE_SECONDS (the broadcast waits its whole timeout for replies)."""
    if use_cache:
        cached = cache.get(WORKERS_CACHE_KEY)
        if cached is not None:
            return cached
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=0, timeout=2)
        replies = celery_app.control.inspect(timeout=timeout, connection=conn).active_queues() or {}
    workers = sorted(
        ({"name": name, "queues": sorted(q["name"] for q in queues or [])} for name, queues in replies.items()),
        key=lambda w: w["name"],
    )
    if use_cache:
        cache.set(WORKERS_CACHE_KEY, workers, WORKERS_CACHE_SECONDS)
    return workers


def _oldest_seconds(channel, queue: str, now: float) -> float | None:
    """Age of the oldest message waiting in a Redis queue, from the sent_at header config.celery stamps.

    kombu's Redis transport pushes on the left and pops on the right, so the oldest is the last element."""
    client = getattr(channel, "client", None)
    if client is None:
        return None
    raw = client.lindex(queue, -1)
    if raw is None:
        return None
    sent_at = (json.loads(raw).get("headers") or {}).get("sent_at")
    return None if sent_at is None else max(0.0, now - float(sent_at))


def queue_lengths(queues=QUEUES) -> dict:
    """Messages waiting per queue and the age of the oldest (Redis broker; other brokers give counts only)."""
    now = time.time()
    lengths = {}
    with celery_app.connection_for_read() as conn:
        conn.ensure_connection(max_retries=0, timeout=2)
        channel = conn.default_channel
        for queue in queues:
            try:
                waiting = channel.queue_declare(queue=queue, passive=True).message_count
            except Exception:  # a queue nobody declared yet holds nothing
                waiting = 0
            oldest = _oldest_seconds(channel, queue, now) if waiting else None
            lengths[queue] = {"waiting": waiting, "oldest_seconds": None if oldest is None else round(oldest, 1)}
    return lengths


def _sweep_check(health: Health) -> None:
    from annotator.core.models.operations import SweepRun

    last = SweepRun.objects.order_by("-started_at").values_list("finished_at", flat=True).first()
    every = float(settings.CELERY_BEAT_SCHEDULE.get("work-sweep", {}).get("schedule", 30.0))
    if last is None:
        health.warn("sweep", "no pass yet (is celery beat running?)")
        return
    age = (timezone.now() - last).total_seconds()
    if age > SWEEP_LATE_INTERVALS * every:
        health.warn(
            "sweep", f"last pass {age:.0f} s ago, every {every:.0f} s expected (beat or the default worker is down)"
        )
    else:
        health.checks["sweep"] = f"ok (last pass {age:.0f} s ago)"


def consumed_queues(health: Health) -> set[str]:
    return {queue for worker in health.workers for queue in worker["queues"]}


def system_health(*, workers_timeout: float = 1.0, use_cache: bool = True) -> Health:
    """Every check, each failure reported rather than raised."""
    health = Health(eager=bool(celery_app.conf.task_always_eager))
    try:
        health.checks["database"] = check_database()
    except Exception as error:
        health.fail("database", _describe(error), essential=True)
    try:
        health.checks["cache"] = check_cache()
    except Exception as error:
        health.fail("cache", f"{_describe(error)} (sessions are read from the database meanwhile)")
    try:
        health.checks["storage"] = check_storage()
    except Exception as error:
        health.fail("storage", _describe(error))
    if health.eager:
        health.checks["broker"] = "ok (eager: tasks run in-process)"
        health.checks["workers"] = "ok (eager: tasks run in-process)"
        return health
    try:
        health.checks["broker"] = bounded(check_broker)
    except Exception as error:
        health.fail("broker", f"{_describe(error)} (submissions are kept; the sweep scores them later)")
        return health
    try:
        health.workers = bounded(lambda: alive_workers(timeout=workers_timeout, use_cache=use_cache))
    except Exception as error:
        health.fail("workers", _describe(error))
    else:
        consumed = consumed_queues(health)
        if not health.workers:
            health.warn("workers", "no Celery worker answered; scoring, imports and exports wait")
        elif "default" not in consumed:
            health.warn("workers", "no worker consumes the default queue (scoring, imports, exports)")
        else:
            health.checks["workers"] = f"ok ({len(health.workers)} alive)"
    try:
        health.queues = bounded(queue_lengths)
    except Exception as error:
        health.fail("queues", _describe(error))
    else:
        late = {
            q: v["oldest_seconds"]
            for q, v in health.queues.items()
            if (v["oldest_seconds"] or 0) > OLDEST_TASK_WARNING_SECONDS
        }
        if late:
            health.warn("queues", ", ".join(f"{q}: oldest task waits {s:.0f} s" for q, s in late.items()))
        else:
            health.checks["queues"] = "ok"
    idle = [q for q, v in health.queues.items() if v["waiting"] and health.workers and q not in consumed_queues(health)]
    if idle:
        health.warn(
            "workers",
            ", ".join(f"nothing consumes the {q} queue ({health.queues[q]['waiting']} waiting)" for q in idle),
        )
    try:
        _sweep_check(health)
    except Exception as error:
        health.fail("sweep", _describe(error))
    return health
