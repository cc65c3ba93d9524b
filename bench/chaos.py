"""Chaos: a crowd of simulated workers over HTTP while Redis, PostgreSQL and Celery workers are knocked over.

A production-like stack on this machine: gunicorn (config/gunicorn.conf.py, config.settings_production,
plain http), a Celery worker on the `default` queue and celery beat, PostgreSQL (a throwaway database on
the server you name) and a Redis of this script's own (broker, cache and sessions; started here, on a
free port, without persistence, so a restart loses every queued message and cached session: the worst
case). N simulated crowd workers claim HITs, load them, autosave every item and submit, behaving as the
browser does (hit.js): on a 503 or a dropped connection they wait (Retry-After) and send the same request
again; every one of those requests is idempotent.

Meanwhile faults are injected, spread over the run without overlapping:
- gunicorn: kill -9 of one gunicorn worker process (its master starts another);
- celery: kill -9 of the Celery worker (main process and pool), started again after 6-8 s;
- redis: kill -9 of Redis for 2-5 s, then started again empty;
- postgres: pg_terminate_backend on every connection to the database;
- redis_oom: Redis refuses writes (maxmemory 1 byte) for 3-5 s.
A process that dies by itself is started again after 2 s, as `restart: unless-stopped` does in compose.

Then a grace period: the load stops, and the script waits until every submitted assignment has a score
(or the grace runs out). It counts:
- responses 500 (any 5xx but 503), 503s, dropped connections, requests given up;
- lost: an autosave or submit the server acknowledged (200) that is not in the database;
- doubled: an answer stored twice, an assignment submitted twice, the same worker twice on a HIT;
- over redundancy: a HIT with more active assignments than it asks for;
- unscored: submitted assignments without a score when the grace period ends.
Exit status 1 when any of those (but 503s and dropped connections) is not 0.

    .venv/bin/python bench/chaos.py --workers 200 --minutes 5            # the documented run
    .venv/bin/python bench/chaos.py --workers 20 --minutes 1 --grace 120 # what tests/test_chaos.py runs
    .venv/bin/python bench/chaos.py --faults redis_oom --oom-times 14    # only Redis refusing writes

docs/operations.md explains how to read the output.
"""

import argparse
import json
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FAULT_KINDS = ("gunicorn", "celery", "redis", "postgres", "redis_oom")
OPERATIONS = ("claim", "page", "autosave", "submit")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=200, help="simulated crowd workers (threads)")
    parser.add_argument("--minutes", type=float, default=5.0, help="length of the load phase, faults included")
    parser.add_argument("--grace", type=float, default=120.0, help="seconds to wait for scores after the load")
    parser.add_argument("--think", type=float, default=4.0, help="mean seconds between two autosaves of a worker")
    parser.add_argument("--ramp", type=float, default=20.0, help="workers arrive spread over this many seconds")
    parser.add_argument("--items", type=int, default=16, help="candidates per HIT (plus 1+1 gold)")
    parser.add_argument("--redundancy", type=int, default=3)
    parser.add_argument(
        "--faults", default=",".join(FAULT_KINDS), help=f"comma-separated fault kinds, of {', '.join(FAULT_KINDS)}"
    )
    parser.add_argument("--gunicorn-kills", type=int, default=None, help="default: 5 per 5 minutes, at least 1")
    parser.add_argument("--celery-kills", type=int, default=None, help="default: 2 per 5 minutes, at least 1")
    parser.add_argument("--redis-stops", type=int, default=None, help="default: 2 per 5 minutes, at least 1")
    parser.add_argument("--pg-terminations", type=int, default=None, help="default: 3 per 5 minutes, at least 1")
    parser.add_argument("--oom-times", type=int, default=None, help="default: 6 per 5 minutes, at least 1")
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--gunicorn-threads", type=int, default=8)
    parser.add_argument("--celery-concurrency", type=int, default=2)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    parser.add_argument("--database", default="vericap_chaos")
    parser.add_argument("--sweep-every", type=float, default=None, help="SWEEP_EVERY_SECONDS (default: settings)")
    parser.add_argument("--score-after", type=float, default=None, help="SWEEP_SCORE_AFTER_SECONDS (default: settings)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=str(ROOT / "bench" / "out" / "chaos.json"), help="where the results go")
    parser.add_argument("--logs", default=None, help="folder for the servers' logs (default: a temporary one)")
    parser.add_argument("--keep-database", action="store_true")
    return parser.parse_args(argv)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fault_plan(args, duration: float, rng: random.Random) -> list[tuple[float, str]]:
    """(second, kind) for each fault: the issue's mix per 5 minutes, evenly spread with some jitter."""
    kinds = [k.strip() for k in args.faults.split(",") if k.strip()]
    unknown = set(kinds) - set(FAULT_KINDS)
    if unknown:
        raise SystemExit(f"unknown fault kinds: {', '.join(sorted(unknown))}")
    per_five = {"gunicorn": 5, "celery": 2, "redis": 2, "postgres": 3, "redis_oom": 6}
    chosen = {
        "gunicorn": args.gunicorn_kills,
        "celery": args.celery_kills,
        "redis": args.redis_stops,
        "postgres": args.pg_terminations,
        "redis_oom": args.oom_times,
    }
    events = []
    for kind in kinds:
        count = chosen[kind]
        if count is None:
            count = max(1, round(per_five[kind] * duration / 300.0))
        events += [kind] * count
    rng.shuffle(events)
    if not events:
        return []
    start, end = 0.12 * duration, 0.85 * duration
    step = (end - start) / len(events)
    return [(start + i * step + rng.uniform(0, 0.3 * step), kind) for i, kind in enumerate(events)]


# ---------------------------------------------------------------------------------------------- processes


class Process:
    """A server process in its own process group; `supervise` restarts it when it dies on its own."""

    def __init__(self, name: str, command: list[str], env: dict, log_dir: Path):
        self.name, self.command, self.env, self.log_dir = name, command, env, log_dir
        self.popen: subprocess.Popen | None = None
        self.lock = threading.Lock()
        self.expect_down = False
        self.crashes = 0
        self.starts = 0

    def start(self) -> None:
        with self.lock:
            log = open(self.log_dir / f"{self.name}.log", "ab")
            self.popen = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            self.starts += 1
            self.expect_down = False

    def kill(self) -> None:
        """kill -9 of the whole process group (a worker's pool children too)."""
        with self.lock:
            self.expect_down = True
            if self.popen is not None and self.popen.poll() is None:
                try:
                    os.killpg(self.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.popen.wait(timeout=30)

    def stop(self) -> None:
        with self.lock:
            self.expect_down = True
            if self.popen is not None and self.popen.poll() is None:
                try:
                    os.killpg(self.popen.pid, signal.SIGTERM)
                    self.popen.wait(timeout=20)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(self.popen.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def supervise_once(self) -> None:
        if self.popen is not None and not self.expect_down and self.popen.poll() is not None:
            self.crashes += 1
            print(f"  [{self.name}] exited by itself ({self.popen.returncode}); starting it again in 2 s", flush=True)
            time.sleep(2.0)
            if not self.expect_down:
                self.start()


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def wait_for(check, seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{what} did not come up within {seconds:.0f} s")


# ---------------------------------------------------------------------------------------------- the stack


class Stack:
    def __init__(self, args, log_dir: Path):
        self.args = args
        self.log_dir = log_dir
        self.redis_port = free_port()
        self.web_port = free_port()
        self.base = f"http://127.0.0.1:{self.web_port}"
        self.database_url = f"{args.pg}/{args.database}"
        media = Path(tempfile.mkdtemp(prefix="vericap-chaos-media-"))
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings_production",
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "SECURE_SSL_REDIRECT": "false",  # plain http on loopback
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": self.database_url,
            "CONN_MAX_AGE": "60",
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "CACHE_URL": f"redis://127.0.0.1:{self.redis_port}/1",
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "MEDIA_ROOT": str(media),
            "STATIC_ROOT": str(media / "static"),
            "LOG_LEVEL": "WARNING",
            "GUNICORN_BIND": f"127.0.0.1:{self.web_port}",
            "GUNICORN_WORKERS": str(args.gunicorn_workers),
            "GUNICORN_THREADS": str(args.gunicorn_threads),
            "GUNICORN_ACCESS_LOG": str(log_dir / "access.log"),
            "PYTHONUNBUFFERED": "1",
        }
        if args.sweep_every is not None:
            self.env["SWEEP_EVERY_SECONDS"] = str(args.sweep_every)
        if args.score_after is not None:
            self.env["SWEEP_SCORE_AFTER_SECONDS"] = str(args.score_after)
        venv = ROOT / ".venv" / "bin"
        self.redis = Process(
            "redis",
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--maxmemory-policy",
                "noeviction",
            ],
            self.env,
            log_dir,
        )
        self.web = Process(
            "gunicorn",
            [
                str(venv / "gunicorn"),
                "config.wsgi:application",
                "--config",
                "config/gunicorn.conf.py",
                "--access-logformat",
                "%(m)s %(U)s %(s)s %(D)s",
                "--log-level",
                "warning",
            ],
            self.env,
            log_dir,
        )
        self.worker = Process(
            "celery-worker",
            [
                str(venv / "celery"),
                "-A",
                "config",
                "worker",
                "-Q",
                "default",
                "--concurrency",
                str(args.celery_concurrency),
                "--hostname",
                f"default@chaos-{os.getpid()}",
                "-l",
                "WARNING",
            ],
            self.env,
            log_dir,
        )
        self.beat = Process(
            "celery-beat",
            [
                str(venv / "celery"),
                "-A",
                "config",
                "beat",
                "-l",
                "WARNING",
                "--schedule",
                str(log_dir / "celerybeat-schedule"),
            ],
            self.env,
            log_dir,
        )
        self.processes = [self.redis, self.web, self.worker, self.beat]
        self.supervising = threading.Event()

    # -- Redis --
    def redis_client(self):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.redis_port, socket_timeout=2, socket_connect_timeout=2)

    def start_redis(self) -> None:
        self.redis.start()
        wait_for(lambda: self.redis_client().ping(), 20, "Redis")

    def start_all(self) -> None:
        self.start_redis()
        self.web.start()
        import requests

        wait_for(lambda: requests.get(self.base + "/healthz", timeout=2).status_code in (200, 503), 90, "gunicorn")
        self.worker.start()
        self.beat.start()

    def supervise(self) -> None:
        """Like `restart: unless-stopped`: a process that died by itself comes back (not Redis: see faults)."""
        self.supervising.set()
        while self.supervising.is_set():
            for process in (self.web, self.worker, self.beat):
                process.supervise_once()
            time.sleep(0.5)

    def stop_all(self) -> None:
        self.supervising.clear()
        for process in reversed(self.processes):
            process.stop()

    def gunicorn_workers(self) -> list[int]:
        return children_of(self.web.popen.pid) if self.web.alive() else []


# ---------------------------------------------------------------------------------------------- database


def recreate_database(pg_url: str, name: str, drop_only: bool = False) -> None:
    import psycopg2

    connection = psycopg2.connect(f"{pg_url}/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()


def terminate_connections(pg_url: str, name: str) -> int:
    import psycopg2

    connection = psycopg2.connect(f"{pg_url}/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )
        killed = cursor.fetchone()[0]
    connection.close()
    return killed


def django_setup(stack: Stack) -> None:
    """This process talks to the same database as the servers (seeding, checking), with plain settings."""
    os.environ.update(
        {
            key: stack.env[key]
            for key in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "MEDIA_ROOT", "STATIC_ROOT", "SECRET_KEY")
        }
    )
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DEBUG"] = "false"
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "false"
    import django

    django.setup()


def seed(args, stack: Stack, slots: int) -> dict:
    """Migrate, collect the static files of the production settings, then a live campaign with enough HITs
    for `slots` assignments and `workers` logged-in, qualified workers (sessions stored as the server reads them)."""

    from django.core.management import call_command

    from bench.seeding import logged_in_sessions, seed_live_campaign, seed_qualified_workers

    call_command("migrate", verbosity=0)
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=stack.env,
        check=True,
    )
    rng = random.Random(args.seed)
    hits = -(-slots // args.redundancy) + 4
    campaign, _ = seed_live_campaign(name="chaos", hits=hits, items=args.items, redundancy=args.redundancy, rng=rng)
    users = seed_qualified_workers(campaign=campaign, prefix="chaos-worker", count=args.workers)
    sessions = logged_in_sessions(users)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    connection.close()  # the faults terminate this process's connections too; open a fresh one later
    return {"campaign": campaign.pk, "sessions": sessions, "hits": hits}


# ---------------------------------------------------------------------------------------------- the crowd


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.statuses = {op: Counter() for op in OPERATIONS}
        self.dropped = Counter()  # connection refused / reset / timed out, per operation
        self.gave_up = Counter()
        self.server_errors = []  # (op, status, url, body start) of every 5xx other than 503
        self.acked_answers = {}  # (assignment id, token) -> choice the server acknowledged
        self.acked_submits = set()
        self.hits_done = 0
        self.unexpected = []  # 4xx the crowd should never see

    def status(self, op, code, url, body):
        with self.lock:
            self.statuses[op][code] += 1
            if code >= 500 and code != 503:
                self.server_errors.append((op, code, url, body[:300]))


def send(http, recorder, op, method, url, stop_retrying_at, **kwargs):
    """One request as the browser sends it: again after a 503 (Retry-After) or a dropped connection."""
    import requests

    attempt = 0
    while True:
        attempt += 1
        try:
            response = http.request(method, url, timeout=30, **kwargs)
        except requests.RequestException:
            with recorder.lock:
                recorder.dropped[op] += 1
            response = None
        if response is not None:
            recorder.status(op, response.status_code, url, response.text if response.status_code >= 500 else "")
            if response.status_code < 500:
                return response
        if time.time() > stop_retrying_at:
            with recorder.lock:
                recorder.gave_up[op] += 1
            return None
        wait = 1.0
        if response is not None and response.headers.get("Retry-After", "").isdigit():
            wait = float(response.headers["Retry-After"])
        time.sleep(min(wait, 1.0 * 2 ** min(attempt, 4)) * random.uniform(0.5, 1.0))


def crowd_worker(base, campaign_id, session_key, args, recorder, stop_at, rng, give_up_after):
    import requests

    http = requests.Session()
    csrf = secrets.token_hex(16)
    # The cookies go in a header of their own: the production settings mark the server's cookies Secure,
    # which a client (rightly) never sends back over the plain http this bench runs on.
    http.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    http.headers["Cookie"] = f"sessionid={session_key}; csrftoken={csrf}"
    form_headers = {"X-CSRFToken": csrf, "Referer": base + "/work/"}
    json_headers = {**form_headers, "Accept": "application/json"}
    token_pattern = re.compile(r'data-token="([0-9a-f]+)"')
    time.sleep(rng.uniform(0, args.ramp))
    while time.time() < stop_at:
        claim = send(
            http,
            recorder,
            "claim",
            "POST",
            f"{base}/work/campaigns/{campaign_id}/claim",
            time.time() + give_up_after,
            headers=form_headers,
            allow_redirects=False,
        )
        if claim is None:
            return
        # The claim answers with the HIT page itself; Content-Location names the page.
        location = claim.headers.get("Content-Location", "")
        if claim.status_code != 200 or "/assignments/" not in location:
            if claim.status_code >= 400:
                with recorder.lock:
                    recorder.unexpected.append(("claim", claim.status_code, claim.text[:200]))
            return  # no HIT left for this worker
        assignment_id = int(location.rstrip("/").rsplit("/", 1)[1])
        page = claim
        tokens = list(dict.fromkeys(token_pattern.findall(page.text)))
        answers = []
        for token in tokens:
            time.sleep(rng.expovariate(1 / args.think) if args.think > 0 else 0)
            if time.time() > stop_at:
                return  # the lease stays reserved; what was acknowledged so far is checked
            choice = rng.choice(["yes", "yes", "no", "partially_yes", "mostly_no"])
            answer = {"item_token": token, "choice": choice, "seconds_spent": round(rng.uniform(2, 30), 1)}
            if choice in ("partially_yes", "mostly_no"):
                answer["shortcomings"] = ["wrong_way"]
                answer["wrong_aspects"] = [rng.choice(["color", "quantity", "action"])]
            answers.append(answer)
            saved = send(
                http,
                recorder,
                "autosave",
                "POST",
                f"{base}/work/assignments/{assignment_id}/answer",
                time.time() + give_up_after,
                json=answer,
                headers=json_headers,
            )
            if saved is not None and saved.status_code == 200:
                with recorder.lock:
                    recorder.acked_answers[(assignment_id, token)] = choice
            elif saved is not None:
                with recorder.lock:
                    recorder.unexpected.append(("autosave", saved.status_code, saved.text[:200]))
        submitted = send(
            http,
            recorder,
            "submit",
            "POST",
            f"{base}/work/assignments/{assignment_id}/submit",
            time.time() + give_up_after,
            json={"answers": answers},
            headers=json_headers,
        )
        if submitted is not None and submitted.status_code == 200:
            with recorder.lock:
                recorder.acked_submits.add(assignment_id)
                recorder.hits_done += 1
        elif submitted is not None:
            with recorder.lock:
                recorder.unexpected.append(("submit", submitted.status_code, submitted.text[:200]))


# ---------------------------------------------------------------------------------------------- faults


def inject(stack: Stack, kind: str, rng: random.Random, log: list, t0: float) -> None:
    started = time.time()
    if kind == "gunicorn":
        workers = stack.gunicorn_workers()
        if not workers:
            log.append({"at_second": round(started - t0, 1), "kind": kind, "detail": "no gunicorn worker to kill"})
            return
        victim = rng.choice(workers)
        os.kill(victim, signal.SIGKILL)
        detail = f"kill -9 gunicorn worker {victim}"
    elif kind == "celery":
        stack.worker.kill()
        down = rng.uniform(6, 8)
        time.sleep(down)
        stack.worker.start()
        detail = f"kill -9 Celery worker, started again after {down:.1f} s"
    elif kind == "redis":
        stack.redis.kill()
        down = rng.uniform(2, 5)
        time.sleep(down)
        stack.start_redis()
        detail = f"kill -9 Redis, started again (empty) after {down:.1f} s"
    elif kind == "postgres":
        killed = terminate_connections(stack.args.pg, stack.args.database)
        detail = f"pg_terminate_backend on {killed} connections"
    elif kind == "redis_oom":
        client = stack.redis_client()
        client.config_set("maxmemory", "1")
        down = rng.uniform(3, 5)
        time.sleep(down)
        client.config_set("maxmemory", "0")
        detail = f"Redis refused writes (maxmemory) for {down:.1f} s"
    else:
        raise ValueError(kind)
    log.append({"at_second": round(started - t0, 1), "kind": kind, "detail": detail})
    print(f"  +{started - t0:.0f} s: {detail}", flush=True)


def fault_injector(stack, plan, t0, rng, log, stop):
    for offset, kind in plan:
        while time.time() < t0 + offset:
            if stop.is_set():
                return
            time.sleep(0.2)
        try:
            inject(stack, kind, rng, log, t0)
        except Exception as error:  # a fault that could not be injected is reported, not fatal
            detail = f"could not inject: {type(error).__name__}: {error}"
            log.append({"at_second": round(time.time() - t0, 1), "kind": kind, "detail": detail})
            print(f"  {kind}: {detail}", flush=True)


def health_sampler(base, samples, stop):
    import requests

    while not stop.is_set():
        try:
            response = requests.get(base + "/healthz", timeout=5)
            body = response.json()
            bad = sorted(name for name, value in body.get("checks", {}).items() if not str(value).startswith("ok"))
            samples.append((time.time(), response.status_code, body.get("status"), bad))
        except Exception as error:
            samples.append((time.time(), None, f"no answer ({type(error).__name__})", []))
        stop.wait(2.0)


# ---------------------------------------------------------------------------------------------- checks


def unscored_count() -> int:
    from annotator.models import Assignment

    return Assignment.objects.filter(
        status__in=["submitted", "approved", "rejected"], submitted_at__isnull=False, scored_at__isnull=True
    ).count()


def verify(recorder: Recorder, redundancy: int) -> dict:
    from django.db.models import Count

    from annotator.crowd.selectors.work import hit_item_tokens
    from annotator.models import Answer, Assignment, AssignmentEvent, Hit

    lost_answers = 0
    tokens_of = {}
    by_assignment = defaultdict(dict)
    for (assignment_id, token), choice in recorder.acked_answers.items():
        by_assignment[assignment_id][token] = choice
    assignments = Assignment.objects.select_related("hit").in_bulk(list(by_assignment) + list(recorder.acked_submits))
    for assignment_id, acked in by_assignment.items():
        assignment = assignments.get(assignment_id)
        if assignment is None:
            lost_answers += len(acked)
            continue
        if assignment.hit_id not in tokens_of:
            tokens_of[assignment.hit_id] = hit_item_tokens(hit=assignment.hit)
        stored = dict(Answer.objects.filter(assignment_id=assignment_id).values_list("item_id", "choice"))
        for token, choice in acked.items():
            if stored.get(tokens_of[assignment.hit_id].get(token)) != choice:
                lost_answers += 1
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
    same_worker_twice = Assignment.objects.values("hit_id", "worker_id").annotate(n=Count("id")).filter(n__gt=1).count()
    over = (
        Assignment.objects.filter(status__in=["reserved", "submitted", "approved"])
        .values("hit_id")
        .annotate(n=Count("id"))
        .filter(n__gt=redundancy)
        .count()
    )
    submitted_db = Assignment.objects.filter(status__in=["submitted", "approved", "rejected"]).count()
    return {
        "lost_answers": lost_answers,
        "lost_submissions": lost_submits,
        "doubled_answers": doubled_answers,
        "doubled_submissions": doubled_submits,
        "same_worker_twice": same_worker_twice,
        "over_redundancy": over,
        "submitted_in_database": submitted_db,
        "hits_full": Hit.objects.filter(has_room=False).count(),
    }


def count_access_log(path: Path) -> dict:
    counts = Counter()
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 4:
                counts[parts[2]] += 1
    return dict(counts)


# ---------------------------------------------------------------------------------------------- main


def run(args) -> dict:
    log_dir = Path(args.logs or tempfile.mkdtemp(prefix="vericap-chaos-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    duration = args.minutes * 60.0
    stack = Stack(args, log_dir)
    print(
        f"== chaos: {args.workers} workers for {args.minutes:g} min (think {args.think} s), faults {args.faults}, "
        f"grace {args.grace:.0f} s; gunicorn {args.gunicorn_workers}x{args.gunicorn_threads}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; logs in {log_dir}",
        flush=True,
    )
    recreate_database(args.pg, args.database)
    try:
        stack.start_redis()
        django_setup(stack)
        per_hit_seconds = (args.items + 2) * args.think + 3
        slots = int(args.workers * (duration / per_hit_seconds + 2) * 1.3)
        started = time.time()
        data = seed(args, stack, slots)
        print(
            f"seeded {data['hits']} HITs x {args.redundancy} for {args.workers} workers in {time.time() - started:.0f} s"
        )
        stack.web.start()
        import requests

        wait_for(lambda: requests.get(stack.base + "/healthz", timeout=2).status_code == 200, 90, "gunicorn")
        stack.worker.start()
        stack.beat.start()
        threading.Thread(target=stack.supervise, daemon=True).start()

        plan = fault_plan(args, duration, rng)
        recorder = Recorder()
        fault_log = []
        samples = []
        stop = threading.Event()
        t0 = time.time()
        stop_at = t0 + duration
        give_up_after = 120.0
        threading.Thread(target=health_sampler, args=(stack.base, samples, stop), daemon=True).start()
        injector = threading.Thread(target=fault_injector, args=(stack, plan, t0, rng, fault_log, stop), daemon=True)
        injector.start()
        crowd = [
            threading.Thread(
                target=crowd_worker,
                daemon=True,
                args=(stack.base, data["campaign"], key, args, recorder, stop_at, random.Random(i), give_up_after),
            )
            for i, key in enumerate(data["sessions"])
        ]
        for thread in crowd:
            thread.start()
        for thread in crowd:
            thread.join(timeout=max(1.0, stop_at - time.time() + give_up_after + 40))
        injector.join(timeout=30)
        load_seconds = time.time() - t0
        print(f"load phase over after {load_seconds:.0f} s; {recorder.hits_done} HITs submitted; waiting for scores")

        grace_started = time.time()
        unscored = unscored_count()
        unscored_timeline = [(0.0, unscored)]
        while unscored and time.time() - grace_started < args.grace:
            time.sleep(5)
            unscored = unscored_count()
            unscored_timeline.append((round(time.time() - grace_started, 1), unscored))
        scored_after = time.time() - grace_started
        stop.set()
        checks = verify(recorder, args.redundancy)
        healthz = Counter(status for _t, _code, status, _bad in samples)
        degraded_parts = Counter(part for _t, _code, _s, bad in samples for part in bad)
        server_5xx = sum(
            n for op in OPERATIONS for code, n in recorder.statuses[op].items() if code >= 500 and code != 503
        )
        result = {
            "args": vars(args),
            "load_seconds": round(load_seconds, 1),
            "hits_submitted": recorder.hits_done,
            "answers_acknowledged": len(recorder.acked_answers),
            "requests": {op: dict(sorted(recorder.statuses[op].items())) for op in OPERATIONS},
            "responses_500": server_5xx,
            "responses_503": sum(recorder.statuses[op][503] for op in OPERATIONS),
            "dropped_connections": dict(recorder.dropped),
            "gave_up": dict(recorder.gave_up),
            "unexpected_4xx": recorder.unexpected[:20],
            "unexpected_4xx_count": len(recorder.unexpected),
            "server_errors": recorder.server_errors[:20],
            **checks,
            "unscored_after_grace": unscored,
            "unscored_during_grace": unscored_timeline,
            "grace_used_seconds": round(scored_after, 1),
            "faults": fault_log,
            "restarts_after_crash": {p.name: p.crashes for p in stack.processes if p.crashes},
            "healthz": dict(healthz),
            "healthz_degraded_by": dict(degraded_parts),
            "healthz_timeline": [
                (round(t - t0, 1), code, status, bad) for t, code, status, bad in samples if status != "ok"
            ],
            "access_log_statuses": count_access_log(log_dir / "access.log"),
            "log_dir": str(log_dir),
        }
        return result
    finally:
        stack.stop_all()
        if not args.keep_database:
            try:
                from django.db import connections

                connections.close_all()
            except Exception:
                pass
            recreate_database(args.pg, args.database, drop_only=True)


def report(result: dict) -> int:
    print("\nrequests by operation and status:")
    for op, statuses in result["requests"].items():
        print(f"  {op:<9} {statuses}")
    print(f"dropped connections (retried): {result['dropped_connections']}; given up: {result['gave_up']}")
    print(f"faults injected: {Counter(f['kind'] for f in result['faults'])}")
    print(f"processes that died by themselves and were started again: {result['restarts_after_crash']}")
    print(f"/healthz samples: {result['healthz']} (degraded by {result['healthz_degraded_by']})")
    print(
        f"\n{result['hits_submitted']} HITs submitted, {result['answers_acknowledged']} answers acknowledged in "
        f"{result['load_seconds']:.0f} s"
    )
    verdict = {
        "responses 500": result["responses_500"],
        "lost answers": result["lost_answers"],
        "lost submissions": result["lost_submissions"],
        "doubled answers": result["doubled_answers"],
        "doubled submissions": result["doubled_submissions"],
        "same worker twice on a HIT": result["same_worker_twice"],
        "HITs over redundancy": result["over_redundancy"],
        "requests given up": sum(result["gave_up"].values()),
        "unexpected 4xx": result["unexpected_4xx_count"],
        f"unscored after {result['grace_used_seconds']:.0f} s of grace": result["unscored_after_grace"],
    }
    for name, value in verdict.items():
        print(f"  {name:<40} {value}")
    print(f"  {'responses 503 (Retry-After, retried)':<40} {result['responses_503']}")
    if result["server_errors"]:
        print("first 5xx:", result["server_errors"][:5])
    if result["unexpected_4xx"]:
        print("first unexpected 4xx:", result["unexpected_4xx"][:5])
    failed = any(verdict.values())
    print("\nRESULT:", "FAILED" if failed else "PASSED (0 of every count above)")
    return 1 if failed else 0


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    status = report(result)
    print(f"results in {out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
