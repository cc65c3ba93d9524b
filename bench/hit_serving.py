"""HIT serving under load: N simulated crowd workers over HTTP against gunicorn and PostgreSQL.

Each simulated worker (a thread with its own HTTP session, logged in with a real session cookie and a
CSRF token) repeats: claim a HIT (POST, like the "Start working" button; the answer is the HIT page),
answer every item with a think time between items, autosaving as hit.js does (the answers not yet
acknowledged in one JSON POST once HIT_AUTOSAVE_BATCH_ITEMS wait, or when HIT_AUTOSAVE_WAIT_SECONDS pass
without a change), submit (JSON POST). Like hit.js, a worker sends a request again after a 503 (waiting
its Retry-After) or a dropped connection; every one of those requests is idempotent.

Three parts, all against the same server:
1. **CPU per operation**: a few workers do claims, then pages, then autosaves, then submits, each kind on
   its own, and the CPU that gunicorn's processes and the database's backends spent is divided by the
   requests of that kind (Python = gunicorn's processes, PostgreSQL = the backends of this database).
2. **The load**: with think time (default), `--workers` people arrive over `--ramp` seconds and each does
   `--hits-per-worker` HITs; with `--hammer`, no think time, in steps of growing concurrency (`--steps`,
   `--step-seconds` each), HIT after HIT: per step the served requests per second, p50/p99 per operation
   (the latency curve), refusals (503, each checked for Retry-After) and dropped connections. Per step too,
   per completed HIT: the server's CPU (gunicorn's processes + the PostgreSQL backends of its database),
   the requests it took (refusals included) and HITs per second.
3. **The check**: every acknowledged autosave and submit is in the database, nothing is doubled, no HIT
   is over its redundancy.
It ends with one table: each goal of docs/operations.md ("Serving the crowd") beside what was measured,
and beside an earlier run when `--compare` names its JSON.

Everything is local and bounded: a throwaway database (default `vericap_bench_hits`, dropped and
re-created and migrated by this script), gunicorn on 127.0.0.1, a time cap.
Scoring tasks go to Redis (no Celery worker consumes them here; the queue is emptied at the end), as in
production where a separate worker scores submissions.

    .venv/bin/python bench/hit_serving.py                       # 200 workers, 1 HIT each, think 5 s
    .venv/bin/python bench/hit_serving.py --workers 1000 --ramp 60        # a thousand people (about 4 min)
    .venv/bin/python bench/hit_serving.py --hammer                        # no think time, 10..1000 workers
    .venv/bin/python bench/hit_serving.py --hammer --app-root /work/main  # the same against another checkout
    .venv/bin/python bench/hit_serving.py --hammer --compare bench/out/baseline.json --out bench/out/new.json
    .venv/bin/python bench/hit_serving.py --hammer --steps 50,200 --step-seconds 60 --cpu-workers 0  # per HIT
"""

import argparse
import json
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = ("claim", "page", "autosave", "submit")
# The floors of docs/operations.md ("Serving the crowd").
GOAL_CPU_MS = 4.0
GOAL_P99_MS = 150.0
GOAL_HAMMER_RPS = 120.0
GOAL_CPU_PER_HIT_MS = 40.0
GOAL_REQUESTS_PER_HIT = 6.0
# hit.js's autosave (config/settings.py HIT_AUTOSAVE_BATCH_ITEMS, HIT_AUTOSAVE_WAIT_SECONDS defaults).
BATCH_ITEMS = 6
BATCH_WAIT_SECONDS = 10.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=200, help="simulated crowd workers (threads), think mode")
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
    parser.add_argument("--hammer", action="store_true", help="no think time, concurrency in --steps")
    parser.add_argument("--steps", default="10,30,100,300,1000", help="hammer: concurrent workers per step")
    parser.add_argument("--step-seconds", type=float, default=20.0, help="hammer: seconds per step")
    parser.add_argument(
        "--cpu-workers", type=int, default=40, help="workers whose HITs measure CPU per operation (0: skip)"
    )
    parser.add_argument(
        "--cpu-rounds",
        type=int,
        default=3,
        help="the CPU measurement repeated on fresh workers this many times; the median round is reported "
        "(the machine's other load moves a single round by a millisecond or more)",
    )
    parser.add_argument(
        "--max-queue-wait",
        type=float,
        help="VERICAP_MAX_QUEUE_WAIT for the server: seconds a request may wait before it is refused (503)",
    )
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--gunicorn-threads", type=int, default=8)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--database", default="vericap_bench_hits")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/5")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="hard cap on the load phase")
    parser.add_argument("--timeout", type=float, default=30.0, help="client timeout per request (then: dropped)")
    parser.add_argument(
        "--app-root",
        default=str(ROOT),
        help="the checkout whose code is served and seeded (its config/gunicorn.conf.py too): a baseline",
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "hit_serving.json"))
    parser.add_argument("--compare", help="an earlier run's JSON (--out) to print beside this one")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.steps = [int(s) for s in args.steps.split(",")] if args.hammer else [args.workers]
    return args


def recreate_database(pg_url: str, name: str, template: str | None = None) -> None:
    import psycopg2

    connection = psycopg2.connect(f"{pg_url}/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    connection.close()


def migrated_template(pg_url: str, app_root: Path) -> str:
    """A database migrated to `app_root`'s migrations, made once and copied for every run (CREATE
    DATABASE ... TEMPLATE takes a second; migrating takes tens). Named after the migrations' content."""
    import hashlib

    import psycopg2

    digest = hashlib.sha1()
    for path in sorted(app_root.glob("*/migrations/0*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    name = f"vericap_bench_template_{digest.hexdigest()[:12]}"
    connection = psycopg2.connect(f"{pg_url}/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            building = f"{name}_{os.getpid()}"
            cursor.execute(f'CREATE DATABASE "{building}"')
            env = {**os.environ, "DATABASE_URL": f"{pg_url}/{building}", "DJANGO_SETTINGS_MODULE": "config.settings"}
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=app_root, env=env, check=True
            )
            try:  # two runs may build it at once: the first rename wins, the other copy is dropped
                cursor.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
            except psycopg2.Error:
                cursor.execute(f'DROP DATABASE "{building}" WITH (FORCE)')
    connection.close()
    return name


def seed(args, *, crowd: int, slots: int) -> dict:
    """Migrate, then a live campaign with room for `slots` assignments and `crowd` logged-in, qualified
    workers (plus the warm-up's and the CPU measurement's)."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.utils import timezone

    from annotator import models as m
    from bench.seeding import logged_in_sessions, seed_live_campaign, seed_qualified_workers

    call_command("migrate", verbosity=0)  # nothing to do on the migrated template
    call_command("collectstatic", interactive=False, verbosity=0)  # served by WhiteNoise, as in production
    rng = random.Random(args.seed)
    # Six warm-up people per server thread (one HIT each: every HIT holds the same gold pairs): each
    # thread's PostgreSQL connection has then prepared its statements, run them past the five custom plans
    # PostgreSQL makes before it weighs a generic one, and warmed its backend's catalog caches, as in a
    # server that has been running. Fewer, and the CPU per claim measured mostly that warming.
    warmers = 6 * args.gunicorn_workers * args.gunicorn_threads
    slots += warmers + args.cpu_workers * args.cpu_rounds
    hits = -(-slots // args.redundancy) + 2
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
    # Extra workers warm the gunicorn processes up (URLconf, templates, the broker connection) before
    # anything is measured; others measure CPU per operation.
    users = seed_qualified_workers(
        campaign=campaign, prefix="bench-worker", count=crowd + warmers + args.cpu_workers * args.cpu_rounds
    )
    sessions = logged_in_sessions(users)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the planner's statistics, as autovacuum keeps them on a live database
    return {
        "campaign": campaign.pk,
        "sessions": sessions[:crowd],
        "warmup_sessions": sessions[crowd : crowd + warmers],
        "cpu_sessions": sessions[crowd + warmers :],
        "hits": hits,
        "items_per_hit": args.items + 2,
    }


def start_gunicorn(args, env, access_log: str) -> subprocess.Popen:
    command = [
        str(ROOT / ".venv" / "bin" / "gunicorn"),
        "config.wsgi:application",
        "--config",
        "config/gunicorn.conf.py",  # the served checkout's: its worker class, backlog, keep-alive
        "--bind",
        f"127.0.0.1:{args.port}",
        "--workers",
        str(args.gunicorn_workers),
        "--threads",
        str(args.gunicorn_threads),
        "--log-level",
        "warning",
        # server-side time per request (microseconds), to tell server time from the client's own queueing
        "--access-logfile",
        access_log,
        "--access-logformat",
        "%(m)s %(U)s %(s)s %(D)s",
    ]
    process = subprocess.Popen(command, cwd=args.app_root, env=env, start_new_session=True)
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


# ------------------------------------------------------------------------------------------ CPU meters


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


def pid_cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class PostgresCpu:
    """CPU seconds of the PostgreSQL backends serving this database (the server shares the machine).

    Backends come and go; a sampler notes each one's CPU every 0.2 s, and a backend that ended keeps its
    last reading. The meter's own backend is left out. Background processes (WAL writer, checkpointer)
    are not counted: they serve every database at once."""

    def __init__(self, pg_url: str, database: str):
        import psycopg2

        self.connection = psycopg2.connect(f"{pg_url}/{database}")
        self.connection.autocommit = True
        self.database = database
        self.seen: dict[int, float] = {}
        # what the database's backends were doing at each sample, per step: where PostgreSQL's time goes
        self.waits: dict[int, Counter] = defaultdict(Counter)
        self.step = -1  # the warm-up is not sampled
        self.lock = threading.Lock()
        self.stop = threading.Event()
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.own = cursor.fetchone()[0]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def sample(self) -> float:
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid, state, wait_event_type, wait_event FROM pg_stat_activity WHERE datname = %s",
                [self.database],
            )
            rows = [row for row in cursor.fetchall() if row[0] != self.own]
        pids = [row[0] for row in rows]
        with self.lock:
            for _pid, state, kind, event in rows if self.step >= 0 else ():
                if state == "active":  # running or waiting inside a statement
                    self.waits[self.step][f"{kind}:{event}" if kind else "CPU"] += 1
                elif state == "idle in transaction":  # between two statements of one transaction
                    self.waits[self.step]["idle in transaction"] += 1
            for pid in pids:
                value = pid_cpu_seconds(pid)
                if value is not None:
                    self.seen[pid] = max(value, self.seen.get(pid, 0.0))
            return sum(self.seen.values())

    def _run(self):
        while not self.stop.wait(0.2):
            try:
                self.sample()
            except Exception:  # the meter never stops the bench
                pass

    def close(self):
        self.stop.set()
        self.thread.join(timeout=2)
        self.connection.close()


class Meters:
    def __init__(self, server_pid: int, pg: PostgresCpu):
        self.server_pid, self.pg = server_pid, pg

    def read(self) -> tuple[float, float]:
        return process_group_cpu_seconds(self.server_pid), self.pg.sample()


# -------------------------------------------------------------------------------------------- the crowd


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.step = 0
        self.latencies = defaultdict(lambda: {op: [] for op in OPERATIONS})  # step -> op -> seconds
        self.served = Counter()  # step -> answered requests (not refused)
        self.refused = Counter()  # step -> 503s
        self.refused_without_retry_after = 0
        self.dropped = Counter()  # step -> connections dropped, reset or timed out
        self.dropped_kinds = Counter()
        self.statuses = {op: Counter() for op in OPERATIONS}
        self.unexpected = []  # answers the crowd should never see: a 4xx, a 5xx other than 503
        self.acked_answers = {}  # (assignment id, token) -> the choice the server acknowledged
        self.acked_submits = set()
        self.completed = Counter()  # step -> HITs submitted
        self.requests = Counter()  # step -> requests sent (served, refused or dropped)
        self.out_of_hits = 0

    def answered(self, op, response, seconds):
        with self.lock:
            self.requests[self.step] += 1
            self.statuses[op][response.status_code] += 1
            if response.status_code == 503:
                self.refused[self.step] += 1
                if not response.headers.get("Retry-After", "").isdigit():
                    self.refused_without_retry_after += 1
            else:
                self.served[self.step] += 1
                self.latencies[self.step][op].append(seconds)
                if response.status_code >= 400:
                    self.unexpected.append((op, response.status_code, response.text[:200]))

    def drop(self, op, error):
        with self.lock:
            self.requests[self.step] += 1
            self.dropped[self.step] += 1
            self.dropped_kinds[f"{op}: {error}"] += 1


class Dropped(Exception):
    """The connection was refused, reset, closed or timed out before a whole answer came."""


class LeanResponse:
    def __init__(self, status: int, headers, content: bytes):
        self.status_code, self.headers, self.content = status, headers, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class LeanHttp:
    """One kept-alive HTTP/1.1 connection, as a browser tab keeps one. http.client, not requests: requests
    costs about 2 ms of CPU a request, and the simulated crowd shares the server's cores; what the bench
    measures is the server. Never follows redirects."""

    def __init__(self, base: str):
        from urllib.parse import urlsplit

        parts = urlsplit(base)
        self.base, self.host, self.port = base, parts.hostname, parts.port
        self.headers: dict[str, str] = {}
        self.connection = None

    def _connection(self, timeout):
        import http.client
        import select

        connection = self.connection
        if connection is not None and connection.sock is not None:
            # A kept connection the server closed while idle reads as readable (EOF): open a fresh one,
            # as browsers do, rather than count a request that was never sent as dropped.
            if select.select([connection.sock], [], [], 0)[0]:
                connection.close()
                connection = None
        if connection is None:
            connection = self.connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        return connection

    def request(self, method, url, *, timeout, json=None, headers=None, allow_redirects=False):
        import http.client
        import json as jsonlib

        path = url[len(self.base) :] if url.startswith(self.base) else url
        sent = {**self.headers, **(headers or {})}
        body = None
        if json is not None:
            body = jsonlib.dumps(json).encode()
            sent["Content-Type"] = "application/json"
        connection = self._connection(timeout)
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            content = response.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            self.connection = None
            raise Dropped(type(error).__name__) from error
        if response.will_close:
            connection.close()
            self.connection = None
        return LeanResponse(response.status, response.headers, content)


def send(http, recorder, op, method, url, stop_at, timeout, **kwargs):
    """One request as hit.js sends it: again after a 503 (its Retry-After) or a dropped connection."""
    attempt = 0
    while True:
        attempt += 1
        started = time.perf_counter()
        try:
            response = http.request(method, url, timeout=timeout, **kwargs)
        except Dropped as error:
            recorder.drop(op, error)
            response = None
        else:
            recorder.answered(op, response, time.perf_counter() - started)
            if response.status_code != 503:
                return response
        if time.time() > stop_at:
            return None
        wait = min(30.0, 2.0**attempt)
        if response is not None and response.headers.get("Retry-After", "").isdigit():
            wait = float(response.headers["Retry-After"])
        # As hit.js: the wait the server names (or a doubling one), plus up to 30 % at random.
        time.sleep(min(wait * random.uniform(1.0, 1.3), max(0.0, stop_at - time.time())))
        if time.time() >= stop_at:
            return None


class SessionPool:
    """Logged-in people waiting to start: a worker may take a HIT of a campaign once (each HIT holds the
    same gold pairs, and nobody is shown a pair twice), so a hammering thread continues as the next person."""

    def __init__(self, keys):
        self.keys, self.lock = list(keys), threading.Lock()

    def take(self):
        with self.lock:
            return self.keys.pop() if self.keys else None


def send_batch(http, recorder, page_url, unsent, *, stop_at, timeout, headers) -> None:
    """One autosave as hit.js sends it: every answer not yet acknowledged; noted as acknowledged on a 200."""
    saved = send(
        http,
        recorder,
        "autosave",
        "POST",
        f"{page_url}/answers",
        stop_at,
        timeout,
        json={"answers": unsent},
        headers=headers,
    )
    if saved is not None and saved.status_code == 200:
        assignment_id = int(page_url.rsplit("/", 1)[1])
        with recorder.lock:
            for entry in unsent:
                recorder.acked_answers[(assignment_id, entry["item_token"])] = entry["choice"]
    unsent.clear()


def answer_hit(http, recorder, page_url, tokens, rng, *, think, stop_at, timeout, headers) -> list | None:
    """Answer every item with a think time before each, autosaving as hit.js does: once BATCH_ITEMS answers
    wait, or when BATCH_WAIT_SECONDS pass without a change. The answers, or None when time ran out."""
    answers, unsent = [], []
    for token in tokens:
        gap = rng.expovariate(1 / think) if think > 0 else 0
        if unsent and gap >= BATCH_WAIT_SECONDS:  # hit.js's timer fires during a long pause
            time.sleep(BATCH_WAIT_SECONDS)
            send_batch(http, recorder, page_url, unsent, stop_at=stop_at, timeout=timeout, headers=headers)
            gap -= BATCH_WAIT_SECONDS
        time.sleep(gap)
        if time.time() > stop_at:
            return None
        choice = rng.choice(["yes", "yes", "no", "partially_yes", "mostly_no"])
        answer = {"item_token": token, "choice": choice, "seconds_spent": round(rng.uniform(2, 30), 1)}
        if choice in ("partially_yes", "mostly_no"):
            answer["shortcomings"] = ["wrong_way"]
            answer["wrong_aspects"] = [rng.choice(["color", "quantity", "action"])]
        answers.append(answer)
        unsent.append(answer)
        if len(unsent) >= BATCH_ITEMS:
            send_batch(http, recorder, page_url, unsent, stop_at=stop_at, timeout=timeout, headers=headers)
    return answers


def crowd_worker(base, campaign_id, session_key, args, recorder, stop_at, rng, *, hits, think, ramp, start, pool=None):
    start.wait()
    http = LeanHttp(base)
    csrf = secrets.token_hex(16)  # a 32-character secret, as Django keeps it in the cookie
    # The cookies go in a header of their own: the server may mark its cookies Secure, which a client
    # rightly never sends back over plain http, and only the session and CSRF cookies matter here.
    http.headers["Cookie"] = f"sessionid={session_key}; csrftoken={csrf}"
    form_headers = {"X-CSRFToken": csrf, "Referer": base + "/work/"}
    json_headers = {**form_headers, "Accept": "application/json"}
    token_pattern = re.compile(r'data-token="([0-9a-f]+)"')
    timeout = args.timeout
    time.sleep(rng.uniform(0, ramp))  # people do not all arrive in the same second
    done = 0
    while done < hits and time.time() < stop_at:
        claim = send(
            http,
            recorder,
            "claim",
            "POST",
            f"{base}/work/campaigns/{campaign_id}/claim",
            stop_at,
            timeout,
            headers=form_headers,
            allow_redirects=False,
        )
        if claim is None:
            return
        # The claim answers with the HIT page itself; Content-Location names it.
        location = claim.headers.get("Content-Location", "")
        if claim.status_code != 200 or "/assignments/" not in location:
            with recorder.lock:
                recorder.out_of_hits += 1
            return
        assignment_id = int(location.rstrip("/").rsplit("/", 1)[1])
        tokens = list(dict.fromkeys(token_pattern.findall(claim.text)))
        answers = answer_hit(
            http,
            recorder,
            f"{base}/work/assignments/{assignment_id}",
            tokens,
            rng,
            think=think,
            stop_at=stop_at,
            timeout=timeout,
            headers=json_headers,
        )
        if answers is None:
            return  # the lease stays reserved; what was acknowledged so far is checked
        submitted = send(
            http,
            recorder,
            "submit",
            "POST",
            f"{base}/work/assignments/{assignment_id}/submit",
            stop_at,
            timeout,
            json={"answers": answers},
            headers=json_headers,
        )
        if submitted is not None and submitted.status_code == 200:
            with recorder.lock:
                recorder.acked_submits.add(assignment_id)
                recorder.completed[recorder.step] += 1
                for entry in answers:  # the submit carries every answer, the unsent ones too
                    recorder.acked_answers[(assignment_id, entry["item_token"])] = entry["choice"]
            done += 1
            if pool is not None:  # the next person, on the same connection
                session_key = pool.take()
                if session_key is None:
                    with recorder.lock:
                        recorder.out_of_hits += 1
                    return
                http.headers["Cookie"] = f"sessionid={session_key}; csrftoken={csrf}"


def run_crowd(base, campaign_id, sessions, args, recorder, *, hits, think, ramp, stop_at, seed=0, pool=None):
    start = threading.Event()
    threads = [
        threading.Thread(
            target=crowd_worker,
            daemon=True,
            args=(base, campaign_id, key, args, recorder, stop_at, random.Random(seed + i)),
            kwargs={"hits": hits, "think": think, "ramp": ramp, "start": start, "pool": pool},
        )
        for i, key in enumerate(sessions)
    ]
    for thread in threads:
        thread.start()
    start.set()
    return threads


def measure_cpu_per_operation(base, campaign_id, sessions, args, meters) -> dict:
    """Each kind of request on its own, from 4 client threads: (Python ms, PostgreSQL ms) per request."""
    from concurrent.futures import ThreadPoolExecutor

    import requests

    token_pattern = re.compile(r'data-token="([0-9a-f]+)"')
    clients = []
    for key in sessions:
        http = requests.Session()
        csrf = secrets.token_hex(16)
        http.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
        http.headers["Cookie"] = f"sessionid={key}; csrftoken={csrf}"
        clients.append({"http": http, "headers": {"X-CSRFToken": csrf, "Referer": base + "/work/"}})

    def claim(c):
        r = c["http"].post(f"{base}/work/campaigns/{campaign_id}/claim", headers=c["headers"], allow_redirects=False)
        c["location"] = r.headers["Content-Location"]  # the answer is the HIT page
        c["tokens"] = list(dict.fromkeys(token_pattern.findall(r.text)))
        return 1

    def page(c):  # a reload of the HIT page
        c["http"].get(base + c["location"]).raise_for_status()
        return 1

    def autosave(c):  # hit.js's batches
        path = base + c["location"].rstrip("/")
        batches = [c["tokens"][k : k + BATCH_ITEMS] for k in range(0, len(c["tokens"]), BATCH_ITEMS)]
        for batch in batches:
            c["http"].post(
                f"{path}/answers",
                json={"answers": [{"item_token": token, "choice": "yes", "seconds_spent": 5} for token in batch]},
                headers={**c["headers"], "Accept": "application/json"},
            ).raise_for_status()
        return len(batches)

    def submit(c):
        path = base + c["location"].rstrip("/")
        answers = [{"item_token": t, "choice": "yes"} for t in c["tokens"]]
        c["http"].post(
            f"{path}/submit", json={"answers": answers}, headers={**c["headers"], "Accept": "application/json"}
        ).raise_for_status()
        return 1

    result = {}
    with ThreadPoolExecutor(4) as pool:
        for op, call in (("claim", claim), ("page", page), ("autosave", autosave), ("submit", submit)):
            time.sleep(0.3)  # the sampler settles
            python0, pg0 = meters.read()
            count = sum(pool.map(call, clients))
            time.sleep(0.3)
            python1, pg1 = meters.read()
            result[op] = {
                "requests": count,
                "python_ms": 1000 * (python1 - python0) / count,
                "postgres_ms": 1000 * (pg1 - pg0) / count,
            }
    return result


def median_rounds(rounds: list[dict]) -> dict:
    """Per operation, the round whose total CPU per request is the median, with every round's total."""
    result = {}
    for op in rounds[0]:
        ordered = sorted(rounds, key=lambda r: r[op]["python_ms"] + r[op]["postgres_ms"])
        middle = ordered[len(ordered) // 2][op]
        totals = [r[op]["python_ms"] + r[op]["postgres_ms"] for r in rounds]
        result[op] = {**middle, "round_totals_ms": totals}
    return result


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def verify(recorder: Recorder, redundancy: int) -> dict:
    """What the server acknowledged is in the database once, and no HIT is over its redundancy."""
    from django.db.models import Count

    from annotator.models import Answer, Assignment, AssignmentEvent

    by_assignment = defaultdict(dict)
    for (assignment_id, token), choice in recorder.acked_answers.items():
        by_assignment[assignment_id][token] = choice
    assignments = Assignment.objects.in_bulk(list(by_assignment) + list(recorder.acked_submits))
    from annotator.crowd.selectors.hits import hit_item_token

    lost_answers = 0
    for assignment_id, acked in by_assignment.items():
        assignment = assignments.get(assignment_id)
        if assignment is None:
            lost_answers += len(acked)
            continue
        stored = {
            hit_item_token(hit_id=assignment.hit_id, item_id=item_id): choice
            for item_id, choice in Answer.objects.filter(assignment_id=assignment_id).values_list("item_id", "choice")
        }
        lost_answers += sum(1 for token, choice in acked.items() if stored.get(token) != choice)
    lost_submits = sum(
        1
        for pk in recorder.acked_submits
        if pk not in assignments or assignments[pk].status not in ("submitted", "approved", "rejected")
    )
    doubled_answers = Answer.objects.values("assignment_id", "item_id").annotate(n=Count("id")).filter(n__gt=1).count()
    doubled_submits = (
        AssignmentEvent.objects.filter(to_status="submitted")
        .values("assignment_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    over = (
        Assignment.objects.filter(status__in=["reserved", "submitted", "approved"])
        .values("hit_id")
        .annotate(n=Count("id"))
        .filter(n__gt=redundancy)
        .count()
    )
    same_worker_twice = Assignment.objects.values("hit_id", "worker_id").annotate(n=Count("id")).filter(n__gt=1).count()
    return {
        "lost_answers": lost_answers,
        "lost_submissions": lost_submits,
        "doubled_answers": doubled_answers,
        "doubled_submissions": doubled_submits,
        "over_redundancy": over,
        "same_worker_twice": same_worker_twice,
        "acknowledged_answers": len(recorder.acked_answers),
        "acknowledged_submissions": len(recorder.acked_submits),
    }


def goal_rows(result: dict) -> list[tuple[str, str, float | None, bool | None]]:
    """(what, floor, measured, met) for every goal this run measures."""
    rows = []
    for op, cpu in result.get("cpu_per_operation", {}).items():
        total = cpu["python_ms"] + cpu["postgres_ms"]
        rows.append((f"CPU per {op} (Python + PostgreSQL) ms", f"<= {GOAL_CPU_MS:g}", total, total <= GOAL_CPU_MS))
    if result["mode"] == "think":
        for op in OPERATIONS:
            if not result["steps"][0]["latency"][op]["count"]:
                continue  # "page": the claim's answer is the page
            p99 = result["steps"][0]["latency"][op]["p99_ms"]
            rows.append(
                (
                    f"{result['workers']} workers with think time: p99 {op} ms",
                    f"< {GOAL_P99_MS:g}",
                    p99,
                    p99 < GOAL_P99_MS,
                )
            )
        errors = result["errors"]
        rows.append((f"{result['workers']} workers with think time: errors", "0", errors, errors == 0))
    else:
        rows.append(
            (
                "hammer: served requests/s at saturation",
                f">= {GOAL_HAMMER_RPS:g}",
                result["saturation_rps"],
                result["saturation_rps"] >= GOAL_HAMMER_RPS,
            )
        )
        first, last = result["steps"][0], result["steps"][-1]
        rows.append(
            (
                f"hammer, {first['workers']} workers: CPU per HIT ms",
                f"<= {GOAL_CPU_PER_HIT_MS:g}",
                first["cpu_ms_per_hit"],
                first["cpu_ms_per_hit"] <= GOAL_CPU_PER_HIT_MS,
            )
        )
        worst = max(step["requests_per_hit"] for step in result["steps"])
        rows.append(
            ("hammer: requests per HIT", f"<= {GOAL_REQUESTS_PER_HIT:g}", worst, worst <= GOAL_REQUESTS_PER_HIT)
        )
        if len(result["steps"]) > 1:
            rise = 100 * (last["cpu_ms_per_hit"] / max(first["cpu_ms_per_hit"], 1e-9) - 1)
            rows.append(
                (f"hammer, {first['workers']} -> {last['workers']}: CPU per HIT rise %", "<= 20", rise, rise <= 20)
            )
            rows.append(
                (
                    f"hammer, HITs/s at {last['workers']} (vs {first['hits_per_s']:.1f} at {first['workers']})",
                    ">= first",
                    last["hits_per_s"],
                    last["hits_per_s"] >= first["hits_per_s"],
                )
            )
        rows.append(
            (
                "hammer: 503s without Retry-After",
                "0",
                result["refused_without_retry_after"],
                result["refused_without_retry_after"] == 0,
            )
        )
    rows.append(("dropped connections", "0", result["dropped"], result["dropped"] == 0))
    lost = sum(result["check"][k] for k in ("lost_answers", "lost_submissions"))
    doubled = sum(
        result["check"][k] for k in ("doubled_answers", "doubled_submissions", "over_redundancy", "same_worker_twice")
    )
    rows.append(("lost answers or submissions", "0", lost, lost == 0))
    rows.append(("doubled answers/submissions, over redundancy", "0", doubled, doubled == 0))
    return rows


def print_summary(result: dict, earlier: dict | None) -> None:
    before = {row[0]: row[2] for row in goal_rows(earlier)} if earlier else {}
    head = f"\n{'goal':<52} {'floor':>8} "
    if earlier:
        head += f"{'--compare':>10} "
    print(head + f"{'this run':>10}  verdict")
    for what, floor, value, met in goal_rows(result):
        line = f"{what:<52} {floor:>8} "
        if earlier:
            old = before.get(what)
            line += f"{old:>10.1f} " if isinstance(old, float) else f"{old if old is not None else '-':>10} "
        shown = f"{value:>10.1f}" if isinstance(value, float) else f"{value:>10}"
        print(line + f"{shown}  {'MET' if met else 'NOT MET'}")


def raise_open_files_limit() -> None:
    """A thousand people hold a thousand connections, on this side and (inherited) in gunicorn's."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else hard
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def operation_of(method: str, path: str) -> str | None:
    """Which of OPERATIONS an access-log line is, or None."""
    if path.endswith("/claim"):
        return "claim"
    if path.endswith("/answers") or path.endswith("/answer"):
        return "autosave"
    if path.endswith("/submit"):
        return "submit"
    return "page" if "/assignments/" in path and method == "GET" else None


def server_side_latencies(access_log: str, *, skip: int) -> dict[str, list[float]]:
    """gunicorn's own seconds per served request, by operation, past the first `skip` lines (the warm-up)."""
    server_side: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    for line in Path(access_log).read_text().splitlines()[skip:]:
        parts = line.split()
        if len(parts) != 4 or parts[2] == "503":
            continue
        method, path, _status, micros = parts
        op = operation_of(method, path)
        if op:
            server_side[op].append(int(micros) / 1e6)
    return server_side


def print_per_hit(steps: list[dict], recorder: Recorder) -> None:
    """Per step, per completed HIT: the server's CPU, the requests it took, and HITs per second."""
    print("\nper completed HIT (server CPU = gunicorn's processes + the PostgreSQL backends of its database):")
    print(f"{'workers':>7} {'HITs':>6} {'HITs/s':>7} {'cpu ms/HIT':>10} {'py':>6} {'pg':>6} {'req/HIT':>8} {'load':>5}")
    for index, step in enumerate(steps):
        completed = recorder.completed[index]
        step["completed_hits"] = completed
        step["hits_per_s"] = completed / step["seconds"]
        per = 1000 / max(completed, 1)
        step["python_ms_per_hit"] = step["python_cpu_s"] * per
        step["postgres_ms_per_hit"] = step["postgres_cpu_s"] * per
        step["cpu_ms_per_hit"] = step["python_ms_per_hit"] + step["postgres_ms_per_hit"]
        step["requests_per_hit"] = recorder.requests[index] / max(completed, 1)
        print(
            f"{step['workers']:>7} {completed:>6} {step['hits_per_s']:>7.1f} {step['cpu_ms_per_hit']:>10.1f} "
            f"{step['python_ms_per_hit']:>6.1f} {step['postgres_ms_per_hit']:>6.1f} {step['requests_per_hit']:>8.2f} "
            f"{step['load_average']:>5.1f}"
        )


def print_waits(steps: list[dict], pg: PostgresCpu) -> None:
    """Per step, the busy backends of the database by what they were doing (sampled every 0.2 s)."""
    print("\nPostgreSQL backends of the database, busy ones by what they were doing (share of samples):")
    for index, step in enumerate(steps):
        waits = pg.waits.get(index, Counter())
        total = sum(waits.values()) or 1
        step["postgres_waits"] = dict(waits.most_common())
        print(
            f"{step['workers']:>7} workers: "
            + ", ".join(f"{name} {100 * n / total:.0f}%" for name, n in waits.most_common(6))
        )


def print_cpu_table(cpu: dict, args) -> None:
    print(
        f"\nCPU per request, each kind on its own ({args.cpu_workers} HITs a round, the median of "
        f"{args.cpu_rounds} rounds; 10 ms clock ticks):"
    )
    print(f"{'operation':<10} {'requests':>8} {'python ms':>10} {'postgres ms':>12} {'total ms':>9}  rounds")
    for op, row in cpu.items():
        print(
            f"{op:<10} {row['requests']:>8} {row['python_ms']:>10.2f} {row['postgres_ms']:>12.2f} "
            f"{row['python_ms'] + row['postgres_ms']:>9.2f}  "
            + " ".join(f"{total:.2f}" for total in row["round_totals_ms"])
        )


INVARIANTS = (
    "lost_answers",
    "lost_submissions",
    "doubled_answers",
    "doubled_submissions",
    "over_redundancy",
    "same_worker_twice",
)


def run_failed(recorder, check: dict, *, mode: str) -> bool:
    """A dropped connection, a 503 without Retry-After, an unexpected answer or a broken invariant fails the
    run; with think time (a load the server should carry) a 503 does too."""
    dropped = sum(recorder.dropped.values())
    bad = dropped or recorder.refused_without_retry_after or recorder.unexpected
    bad = bad or any(check[k] for k in INVARIANTS)
    return bool(bad or (mode == "think" and sum(recorder.refused.values())))


def main(argv=None):
    args = parse_args(argv)
    raise_open_files_limit()
    sys.path.insert(0, str(Path(args.app_root).resolve()))
    media = tempfile.mkdtemp(prefix="vericap-bench-media-")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"{args.pg}/{args.database}",
        "CELERY_BROKER_URL": args.broker,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        # persistent connections: no PostgreSQL connect per request, and a backend's prepared statements and
        # catalog caches are kept for ten minutes rather than built again every minute
        "CONN_MAX_AGE": "600",
        # a cache shared by the gunicorn processes: sessions are then read from Redis, not PostgreSQL
        "CACHE_URL": args.broker,
        "DEBUG": "false",
        "MEDIA_ROOT": media,
        "STATIC_ROOT": os.path.join(media, "static"),
        "LOG_LEVEL": "ERROR",
    }
    if args.max_queue_wait is not None:
        env["VERICAP_MAX_QUEUE_WAIT"] = str(args.max_queue_wait)
    os.environ.update(env)
    mode = "hammer" if args.hammer else "think"
    crowd = max(args.steps)
    total_seconds = len(args.steps) * args.step_seconds if args.hammer else args.max_seconds
    # hammer: everyone holds a lease, plus what up to 60 HITs/s can finish meanwhile (a run that uses them
    # up says "workers who found no HIT left", and its last steps measure less than the server can do)
    slots = crowd + int(60 * total_seconds) if args.hammer else args.workers * args.hits_per_worker
    print(
        f"== hit_serving ({mode}): steps {args.steps} workers, redundancy {args.redundancy}, {args.taken_hits} HITs "
        f"already taken, think {0 if args.hammer else args.think}s, gunicorn {args.gunicorn_workers}x"
        f"{args.gunicorn_threads} threads ({args.app_root}), {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    started = time.perf_counter()
    recreate_database(args.pg, args.database, template=migrated_template(args.pg, Path(args.app_root).resolve()))
    data = seed(args, crowd=slots if args.hammer else crowd, slots=slots)
    people = SessionPool(data["sessions"][crowd:]) if args.hammer else None
    print(
        f"seeded {data['hits']} open HITs of {data['items_per_hit']} items, {crowd} workers in "
        f"{time.perf_counter() - started:.1f}s"
    )

    access_log = os.path.join(media, "access.log")
    server = start_gunicorn(args, env, access_log)
    pg = PostgresCpu(args.pg, args.database)
    meters = Meters(server.pid, pg)
    base = f"http://127.0.0.1:{args.port}"
    recorder = Recorder()
    steps = []
    try:
        warm = Recorder()
        for thread in run_crowd(
            base,
            data["campaign"],
            data["warmup_sessions"],
            args,
            warm,
            hits=1,
            think=0,
            ramp=0,
            stop_at=time.time() + 120,
            seed=-1000,
        ):
            thread.join(timeout=150)
        cpu = {}
        if args.cpu_workers:
            rounds = [
                measure_cpu_per_operation(
                    base,
                    data["campaign"],
                    data["cpu_sessions"][k * args.cpu_workers : (k + 1) * args.cpu_workers],
                    args,
                    meters,
                )
                for k in range(args.cpu_rounds)
            ]
            cpu = median_rounds(rounds)
            print_cpu_table(cpu, args)
        time.sleep(1.0)
        warm_lines = len(Path(access_log).read_text().splitlines())
        load_started = time.time()
        stop_at = load_started + (total_seconds if args.hammer else args.max_seconds)
        threads, begun = [], 0
        client_cpu0 = time.process_time()
        for index, size in enumerate(args.steps):
            recorder.step = pg.step = index
            python0, pg0 = meters.read()
            step_started = time.perf_counter()
            threads += run_crowd(
                base,
                data["campaign"],
                data["sessions"][begun:size],
                args,
                recorder,
                hits=10**6 if args.hammer else args.hits_per_worker,
                think=0.0 if args.hammer else args.think,
                ramp=min(1.0, args.step_seconds / 10) if args.hammer else args.ramp,
                stop_at=stop_at,
                seed=begun,
                pool=people,
            )
            begun = size
            if args.hammer:
                time.sleep(max(0.0, load_started + (index + 1) * args.step_seconds - time.time()))
            else:
                for thread in threads:
                    thread.join(timeout=max(1.0, stop_at - time.time() + args.timeout))
            python1, pg1 = meters.read()
            seconds = time.perf_counter() - step_started
            steps.append(
                {
                    "workers": size,
                    "seconds": seconds,
                    "python_cpu_s": python1 - python0,
                    "postgres_cpu_s": pg1 - pg0,
                    "load_average": os.getloadavg()[0],
                }
            )
        recorder.step = len(args.steps) - 1
        for thread in threads:
            thread.join(timeout=args.timeout + 5)
        client_cpu = time.process_time() - client_cpu0
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        pg.close()

    check = verify(recorder, args.redundancy)
    try:
        import redis

        broker = redis.Redis.from_url(args.broker)
        broker.delete("default")  # the unconsumed scoring messages of this run
        for key in broker.scan_iter(match="*django.contrib.sessions.cached_db*", count=1000):
            broker.delete(key)  # and the cached sessions of its throwaway users
    except Exception as exc:  # the numbers above stand without the clean-up
        print(f"(could not empty the broker queue: {exc})")

    print(f"\nthe load ({mode}; client side, what a worker's browser waits; served = not refused):")
    print(
        f"{'workers':>7} {'served/s':>9} {'503/s':>7} {'dropped':>7} {'cpu ms/req':>10} {'py':>5} {'pg':>5}  "
        + "  ".join(f"{op + ' p50/p99':>18}" for op in OPERATIONS)
    )
    for index, step in enumerate(steps):
        served = recorder.served[index]
        step["served"], step["refused"], step["dropped"] = served, recorder.refused[index], recorder.dropped[index]
        step["served_per_s"] = served / step["seconds"]
        step["refused_per_s"] = recorder.refused[index] / step["seconds"]
        per = 1000 / max(served + recorder.refused[index], 1)
        step["python_ms_per_request"] = step["python_cpu_s"] * per
        step["postgres_ms_per_request"] = step["postgres_cpu_s"] * per
        step["latency"] = {
            op: {
                "count": len(values),
                "p50_ms": 1000 * percentile(values, 50),
                "p99_ms": 1000 * percentile(values, 99),
                "max_ms": 1000 * max(values) if values else float("nan"),
            }
            for op, values in recorder.latencies[index].items()
        }
        cells = "  ".join(
            f"{step['latency'][op]['p50_ms']:>8.0f}/{step['latency'][op]['p99_ms']:<9.0f}" for op in OPERATIONS
        )
        print(
            f"{step['workers']:>7} {step['served_per_s']:>9.1f} {step['refused_per_s']:>7.1f} {step['dropped']:>7} "
            f"{step['python_ms_per_request'] + step['postgres_ms_per_request']:>10.2f} "
            f"{step['python_ms_per_request']:>5.1f} {step['postgres_ms_per_request']:>5.1f}  {cells}"
        )
    print_per_hit(steps, recorder)
    print_waits(steps, pg)
    server_side = server_side_latencies(access_log, skip=warm_lines)
    print(
        "server side, whole load (gunicorn's own time per request, without queueing): "
        + ", ".join(
            f"{op} p50 {1000 * percentile(v, 50):.1f} / p99 {1000 * percentile(v, 99):.1f} ms"
            for op, v in server_side.items()
        )
    )
    served_total = sum(recorder.served.values())
    refused_total = sum(recorder.refused.values())
    dropped_total = sum(recorder.dropped.values())
    errors = refused_total + dropped_total + len(recorder.unexpected)
    print(
        f"requests served {served_total}, refused (503) {refused_total} ({recorder.refused_without_retry_after} "
        f"without Retry-After), dropped {dropped_total} {dict(recorder.dropped_kinds) or ''}, unexpected answers "
        f"{len(recorder.unexpected)}; this bench's own client CPU {1000 * client_cpu / max(served_total, 1):.1f} ms "
        f"per request; load average at the end {os.getloadavg()[0]:.1f}"
    )
    if recorder.out_of_hits:
        print(f"(workers who found no HIT left: {recorder.out_of_hits})")
    if recorder.unexpected:
        print("first unexpected answers:", recorder.unexpected[:5])
    print("database check: " + ", ".join(f"{k} {v}" for k, v in check.items()))
    result = {
        "args": {k: v for k, v in vars(args).items()},
        "mode": mode,
        "workers": crowd,
        "cpu_per_operation": cpu,
        "steps": steps,
        "saturation_rps": max((s["served_per_s"] for s in steps), default=0.0),
        "refused": refused_total,
        "refused_without_retry_after": recorder.refused_without_retry_after,
        "dropped": dropped_total,
        "dropped_kinds": dict(recorder.dropped_kinds),
        "unexpected": recorder.unexpected[:50],
        "errors": errors,
        "check": check,
        "load_average": os.getloadavg(),
    }
    earlier = json.loads(Path(args.compare).read_text()) if args.compare else None
    print_summary(result, earlier)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"results in {out}")
    return 1 if run_failed(recorder, check, mode=mode) else 0


if __name__ == "__main__":
    sys.exit(main())
