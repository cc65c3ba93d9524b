"""HIT serving under load: N simulated crowd workers over HTTP against gunicorn and PostgreSQL.

Each simulated worker (a thread with its own HTTP session, logged in with a real session cookie and a
CSRF token) repeats: claim a HIT (POST, like the "Start working" button), load the HIT page, autosave
every item (one JSON POST per item, with a think time between items), submit (JSON POST). We print p50
and p99 latency per operation, submissions per second and errors.

Everything is local and bounded: a throwaway database (default `vericap_bench_hits`, dropped and
re-created and migrated by this script), gunicorn on 127.0.0.1, a fixed number of requests, a time cap.
Scoring tasks go to Redis (no Celery worker consumes them here; the queue is emptied at the end), as in
production where a separate worker scores submissions.

    .venv/bin/python bench/hit_serving.py                       # 200 workers, 1 HIT each, think 5 s
    .venv/bin/python bench/hit_serving.py --think 2 --ramp 10   # a harder burst
    .venv/bin/python bench/hit_serving.py --workers 50 --hits-per-worker 2 --think 1.0
"""

import argparse
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=200, help="simulated crowd workers (threads)")
    parser.add_argument("--hits-per-worker", type=int, default=1)
    parser.add_argument("--items", type=int, default=16, help="candidates per HIT (plus 1+1 gold)")
    parser.add_argument("--redundancy", type=int, default=3)
    parser.add_argument(
        "--taken-hits",
        type=int,
        default=3000,
        help="HITs already full (submitted by earlier workers) ahead of the open ones: a campaign "
        "of ECCV Caption's size (2,940 HITs) well under way",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=5.0,
        help="mean seconds between two autosaves of one worker (people take ~20-30 s per item)",
    )
    parser.add_argument(
        "--ramp",
        type=float,
        default=30.0,
        help="workers arrive spread over this many seconds (a campaign does not get 200 clicks in the same second)",
    )
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--gunicorn-threads", type=int, default=8)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--database", default="vericap_bench_hits")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/5")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="hard cap on the load phase")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def recreate_database(pg_url: str, name: str) -> None:
    import psycopg2

    connection = psycopg2.connect(f"{pg_url}/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()


def seed(args) -> dict:
    """Migrate, then create a live campaign with enough HITs and `workers` logged-in, qualified workers."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.utils import timezone

    from annotator import models as m
    from bench.seeding import logged_in_sessions, seed_live_campaign, seed_qualified_workers

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # served by WhiteNoise, as in production
    rng = random.Random(args.seed)
    slots = args.workers * args.hits_per_worker
    hits = -(-(slots + 4 * args.gunicorn_workers) // args.redundancy) + 2  # everyone + the warm-up + spare
    campaign, _ = seed_live_campaign(
        name="bench", hits=hits, items=args.items, redundancy=args.redundancy, rng=rng, first_index=args.taken_hits
    )
    # HITs already full before the run (every slot submitted by earlier workers): claims must pass them by.
    taken = m.Hit.objects.bulk_create(
        m.Hit(campaign=campaign, index=i, assignments_required=args.redundancy, has_room=False)
        for i in range(args.taken_hits)
    )
    earlier = [
        m.Worker.objects.create(external_id=f"EARLIER{k}", pseudonym=f"w-earlier{k}") for k in range(args.redundancy)
    ]
    m.Assignment.objects.bulk_create(
        (
            m.Assignment(
                hit=hit,
                worker=worker,
                status=m.AssignmentStatus.SUBMITTED,
                expires_at=timezone.now(),
                submitted_at=timezone.now(),
            )
            for hit in taken
            for worker in earlier
        ),
        batch_size=5000,
    )
    # A few more workers than simulated: they warm the gunicorn processes up (URLconf, templates, the
    # broker connection) before anything is measured.
    warmers = 4 * args.gunicorn_workers
    users = seed_qualified_workers(campaign=campaign, prefix="bench-worker", count=args.workers + warmers)
    sessions = logged_in_sessions(users)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the planner's statistics, as autovacuum keeps them on a live database
    return {
        "campaign": campaign.pk,
        "sessions": sessions[: args.workers],
        "warmup_sessions": sessions[args.workers :],
        "hits": hits,
        "items_per_hit": args.items + 2,
    }


def start_gunicorn(args, env, access_log: str) -> subprocess.Popen:
    command = [
        str(ROOT / ".venv" / "bin" / "gunicorn"),
        "config.wsgi:application",
        "--config",
        "config/gunicorn.conf.py",
        "--bind",
        f"127.0.0.1:{args.port}",
        "--workers",
        str(args.gunicorn_workers),
        "--threads",
        str(args.gunicorn_threads),
        "--worker-class",
        "gthread",
        "--log-level",
        "warning",
        # server-side time per request (microseconds), to tell server time from the client's own queueing
        "--access-logfile",
        access_log,
        "--access-logformat",
        "%(m)s %(U)s %(s)s %(D)s",
        "--timeout",
        "60",
        "--keep-alive",
        "120",  # people pause between items; keep their connections
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    import requests

    for _ in range(120):
        try:
            if requests.get(f"http://127.0.0.1:{args.port}/healthz", timeout=2).status_code == 200:
                return process
        except requests.RequestException:
            pass
        if process.poll() is not None:
            raise SystemExit("gunicorn exited during start-up")
        time.sleep(0.5)
    process.terminate()
    raise SystemExit("gunicorn did not answer /healthz within 60 s")


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = {"claim": [], "page": [], "autosave": [], "submit": []}
        self.errors = []
        self.submissions = 0

    def add(self, op, seconds):
        with self.lock:
            self.latencies[op].append(seconds)

    def error(self, op, detail):
        with self.lock:
            self.errors.append(f"{op}: {detail}")


def simulated_worker(base, campaign_id, session_key, args, recorder, stop_at, rng):
    import re

    import requests

    http = requests.Session()
    csrf = secrets.token_hex(16)  # a 32-character secret, as Django keeps it in the cookie
    http.cookies.set("sessionid", session_key, domain="127.0.0.1")
    http.cookies.set("csrftoken", csrf, domain="127.0.0.1")
    json_headers = {"X-CSRFToken": csrf, "Accept": "application/json", "Referer": base + "/work/"}
    token_pattern = re.compile(r'data-token="([0-9a-f]+)"')

    def timed(op, call):
        started = time.perf_counter()
        try:
            response = call()
        except requests.RequestException as exc:
            recorder.error(op, type(exc).__name__)
            return None
        recorder.add(op, time.perf_counter() - started)
        return response

    time.sleep(rng.uniform(0, args.ramp))  # people do not all arrive in the same second
    for _ in range(args.hits_per_worker):
        if time.time() > stop_at:
            return
        response = timed(
            "claim",
            lambda: http.post(
                f"{base}/work/campaigns/{campaign_id}/claim",
                headers={"X-CSRFToken": csrf, "Referer": base + "/work/"},
                allow_redirects=False,
                timeout=30,
            ),
        )
        if (
            response is None
            or response.status_code != 302
            or "/assignments/" not in response.headers.get("Location", "")
        ):
            recorder.error("claim", getattr(response, "status_code", "no response"))
            return
        hit_url = base + response.headers["Location"]
        assignment_path = response.headers["Location"].rstrip("/")
        page = timed("page", lambda url=hit_url: http.get(url, timeout=30))
        if page is None or page.status_code != 200:
            recorder.error("page", getattr(page, "status_code", "no response"))
            return
        tokens = list(dict.fromkeys(token_pattern.findall(page.text)))
        answers = []
        for token in tokens:
            if time.time() > stop_at:
                return
            time.sleep(rng.expovariate(1 / args.think) if args.think > 0 else 0)
            choice = rng.choice(["yes", "yes", "no", "partially_yes", "mostly_no"])
            answer = {"item_token": token, "choice": choice, "seconds_spent": round(rng.uniform(2, 30), 1)}
            if choice in ("partially_yes", "mostly_no"):
                answer["shortcomings"] = ["wrong_way"]
                answer["wrong_aspects"] = [rng.choice(["color", "quantity", "action"])]
            answers.append(answer)
            saved = timed(
                "autosave",
                lambda path=assignment_path, body=answer: http.post(
                    f"{base}{path}/answer", json=body, headers=json_headers, timeout=30
                ),
            )
            if saved is None or saved.status_code != 200:
                recorder.error("autosave", getattr(saved, "status_code", "no response"))
        submitted = timed(
            "submit",
            lambda path=assignment_path, body={"answers": answers}: http.post(
                f"{base}{path}/submit", json=body, headers=json_headers, timeout=30
            ),
        )
        if submitted is None or submitted.status_code != 200:
            recorder.error("submit", getattr(submitted, "status_code", "no response"))
        else:
            with recorder.lock:
                recorder.submissions += 1


def warm_up(base, campaign_id, session_keys, args):
    """Not measured: each gunicorn process imports the URLconf, compiles templates and connects to the
    broker on its first requests. A few extra workers do whole HITs, at once, so every process gets some."""
    quick = argparse.Namespace(**{**vars(args), "think": 0.0, "ramp": 0.0, "hits_per_worker": 1})
    recorder = Recorder()
    threads = [
        threading.Thread(
            target=simulated_worker,
            daemon=True,
            args=(base, campaign_id, key, quick, recorder, time.time() + 120, random.Random(-i)),
        )
        for i, key in enumerate(session_keys)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=150)


def process_group_cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of every live process in a process group (gunicorn's master and workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields: state, ppid, pgrp, ..., utime (11), stime (12)
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def main():
    args = parse_args()
    media = tempfile.mkdtemp(prefix="vericap-bench-media-")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"{args.pg}/{args.database}",
        "CELERY_BROKER_URL": args.broker,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "CONN_MAX_AGE": "60",  # persistent connections: no PostgreSQL connect per request
        # a cache shared by the gunicorn processes: sessions are then read from Redis, not PostgreSQL
        "CACHE_URL": args.broker,
        "DEBUG": "false",
        "MEDIA_ROOT": media,
        "STATIC_ROOT": os.path.join(media, "static"),
        "LOG_LEVEL": "ERROR",
    }
    os.environ.update(env)
    print(
        f"== hit_serving: {args.workers} workers x {args.hits_per_worker} HIT(s), redundancy {args.redundancy}, "
        f"{args.taken_hits} HITs already taken, "
        f"think {args.think}s, arrivals over {args.ramp}s, gunicorn {args.gunicorn_workers}x{args.gunicorn_threads} threads, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"offered load: about {args.workers / args.think if args.think else float('inf'):.0f} autosaves/s "
        f"once everyone has arrived"
    )
    recreate_database(args.pg, args.database)
    started = time.perf_counter()
    data = seed(args)
    print(
        f"seeded {args.taken_hits} taken and {data['hits']} open HITs of {data['items_per_hit']} items and {args.workers} workers "
        f"in {time.perf_counter() - started:.1f}s"
    )

    access_log = os.path.join(media, "access.log")
    server = start_gunicorn(args, env, access_log)
    recorder = Recorder()
    base = f"http://127.0.0.1:{args.port}"
    try:
        warm_up(base, data["campaign"], data["warmup_sessions"], args)
        time.sleep(1.0)
        warm_lines = len(Path(access_log).read_text().splitlines())
        stop_at = time.time() + args.max_seconds
        threads = [
            threading.Thread(
                target=simulated_worker,
                daemon=True,
                args=(base, data["campaign"], key, args, recorder, stop_at, random.Random(i)),
            )
            for i, key in enumerate(data["sessions"])
        ]
        load_started = time.perf_counter()
        # CPU actually spent per request, on each side: unlike latency it does not depend on what else runs.
        server_cpu_started, client_cpu_started = process_group_cpu_seconds(server.pid), time.process_time()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=max(1.0, stop_at - time.time() + 30))
        elapsed = time.perf_counter() - load_started
        server_cpu = process_group_cpu_seconds(server.pid) - server_cpu_started
        client_cpu = time.process_time() - client_cpu_started
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    from django.db.models import Count

    from annotator.models import Assignment

    over = (
        Assignment.objects.filter(status__in=["reserved", "submitted", "approved"])
        .values("hit_id")
        .annotate(n=Count("id"))
        .filter(n__gt=args.redundancy)
        .count()
    )
    submitted_db = Assignment.objects.filter(status="submitted").count()
    try:
        import redis

        broker = redis.Redis.from_url(args.broker)
        broker.delete("default")  # the unconsumed scoring messages of this run
        for key in broker.scan_iter(match="*django.contrib.sessions.cached_db*", count=1000):
            broker.delete(key)  # and the cached sessions of its throwaway users
    except Exception as exc:  # the numbers above stand without the clean-up
        print(f"(could not empty the broker queue: {exc})")

    rows = {}
    print(
        f"\nclient side (what a worker's browser waits):\n{'operation':<10} {'count':>7} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'max ms':>8}"
    )
    for op, values in recorder.latencies.items():
        rows[op] = {
            "count": len(values),
            "p50_ms": 1000 * percentile(values, 50),
            "p99_ms": 1000 * percentile(values, 99),
            "max_ms": 1000 * max(values) if values else None,
        }
        print(
            f"{op:<10} {len(values):>7} {rows[op]['p50_ms']:>8.1f} {rows[op]['p99_ms']:>8.1f} "
            f"{(rows[op]['max_ms'] or float('nan')):>8.1f}"
        )
    server_side = {"claim": [], "page": [], "autosave": [], "submit": []}
    for line in Path(access_log).read_text().splitlines()[warm_lines:]:
        parts = line.split()
        if len(parts) != 4:
            continue
        method, path, _status, micros = parts
        op = (
            "claim"
            if path.endswith("/claim")
            else "autosave"
            if path.endswith("/answer")
            else "submit"
            if path.endswith("/submit")
            else "page"
            if "/assignments/" in path and method == "GET"
            else None
        )
        if op:
            server_side[op].append(int(micros) / 1e6)
    print("\nserver side (gunicorn's own time per request, without the client's queueing):")
    for op, values in server_side.items():
        rows[op]["server_p50_ms"] = 1000 * percentile(values, 50)
        rows[op]["server_p99_ms"] = 1000 * percentile(values, 99)
        print(f"{op:<10} {len(values):>7} {rows[op]['server_p50_ms']:>8.1f} {rows[op]['server_p99_ms']:>8.1f}")
    requests_total = sum(len(v) for v in recorder.latencies.values())
    print(
        f"\nsubmissions: {recorder.submissions} in {elapsed:.1f}s = {recorder.submissions / elapsed:.2f}/s; "
        f"requests: {requests_total} = {requests_total / elapsed:.1f}/s; errors: {len(recorder.errors)}"
    )
    per_request = 1000 / max(requests_total, 1)
    print(
        f"CPU in the load phase: gunicorn {server_cpu:.1f}s = {server_cpu * per_request:.1f} ms per request "
        f"(PostgreSQL not included); this bench's own client threads {client_cpu:.1f}s = "
        f"{client_cpu * per_request:.1f} ms per request; load average at the end {os.getloadavg()[0]:.1f}"
    )
    print(
        f"database check: {submitted_db} submitted assignments ({len(data['warmup_sessions'])} of them from the "
        f"warm-up), HITs over redundancy: {over}"
    )
    if recorder.errors:
        print("first errors:", recorder.errors[:10])
    worst = max((r["p99_ms"] for r in rows.values() if r["count"]), default=float("nan"))
    print(
        f"goal p99 < 150 ms and zero errors: {'MET' if worst < 150 and not recorder.errors else 'NOT MET'} "
        f"(worst p99 {worst:.1f} ms)"
    )
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "hit_serving.json").write_text(
        json.dumps(
            {
                "args": vars(args),
                "latency": rows,
                "submissions": recorder.submissions,
                "elapsed_s": elapsed,
                "submissions_per_s": recorder.submissions / elapsed,
                "errors": recorder.errors[:100],
                "error_count": len(recorder.errors),
                "over_redundancy": over,
                "server_cpu_ms_per_request": server_cpu * per_request,
                "client_cpu_ms_per_request": client_cpu * per_request,
                "load_average": os.getloadavg(),
            },
            indent=2,
        )
    )
    stats = statistics.mean(recorder.latencies["autosave"]) if recorder.latencies["autosave"] else 0
    print(f"mean autosave {1000 * stats:.1f} ms; results in bench/out/hit_serving.json")
    return 1 if recorder.errors or over else 0


if __name__ == "__main__":
    sys.exit(main())
