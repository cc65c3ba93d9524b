"""Where a worker request's time goes, in one process: SQL queries, Python CPU and PostgreSQL CPU per request.

Runs claim, HIT page, autosave and submit through Django's full middleware stack (the test client, with
CSRF enforced, sessions in Redis as in production) against a throwaway PostgreSQL database seeded like
bench/hit_serving.py, one worker after another. Per operation it prints the SQL statements per request,
the Python CPU per request (this process) and PostgreSQL's CPU per request (the backend serving this
process's connection, read from /proc), and with --profile the top functions by cumulative time.

    .venv/bin/python bench/request_profile.py                   # 60 workers x (claim, page, 18 autosaves, submit)
    .venv/bin/python bench/request_profile.py --profile page    # plus cProfile's top 30 for the HIT page
    .venv/bin/python bench/request_profile.py --queries autosave  # print the SQL of one autosave

It measures the checkout it sits in: to measure another, copy it there (a scratch worktree of it).
"""

import argparse
import cProfile
import io
import os
import pstats
import random
import secrets
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPERATIONS = ("claim", "page", "autosave", "submit")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=60)
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--taken-hits", type=int, default=3000)
    parser.add_argument("--database", default="vericap_bench_profile")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--cache", default="redis://127.0.0.1:6379/5", help="CACHE_URL (sessions are read from it)")
    parser.add_argument("--profile", choices=OPERATIONS, help="cProfile this operation and print its top functions")
    parser.add_argument("--queries", choices=OPERATIONS, help="print the SQL of one request of this operation")
    return parser.parse_args()


def backend_cpu_seconds(pid: int) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick


def main():
    args = parse_args()
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"{args.pg}/{args.database}",
            "CACHE_URL": args.cache,
            "CELERY_BROKER_URL": args.cache,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "CONN_MAX_AGE": "60",
            "DEBUG": "false",
            "LOG_LEVEL": "ERROR",
        }
    )
    from bench.hit_serving import recreate_database

    recreate_database(args.pg, args.database)
    import django

    django.setup()
    import annotator

    print(f"measuring {Path(annotator.__file__).parent.parent}")
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from annotator import models as m
    from bench.seeding import logged_in_sessions, seed_live_campaign, seed_qualified_workers

    call_command("migrate", verbosity=0)
    rng = random.Random(0)
    campaign, _ = seed_live_campaign(
        name="profile", hits=args.workers + 2, items=args.items, redundancy=1, rng=rng, first_index=args.taken_hits
    )
    m.Hit.objects.bulk_create(
        m.Hit(campaign=campaign, index=i, assignments_required=1, has_room=False) for i in range(args.taken_hits)
    )
    users = seed_qualified_workers(campaign=campaign, prefix="profile-worker", count=args.workers + 1)
    sessions = logged_in_sessions(users)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("SELECT pg_backend_pid()")
        backend_pid = cursor.fetchone()[0]

    import re

    token_pattern = re.compile(r'data-token="([0-9a-f]+)"')
    totals = {op: {"n": 0, "queries": 0, "py": 0.0, "pg": 0.0, "wall": 0.0} for op in OPERATIONS}
    profiler = cProfile.Profile() if args.profile else None
    printed = set()

    def measure(op, call, warm):
        capture = CaptureQueriesContext(connection)
        pg0, py0, wall0 = backend_cpu_seconds(backend_pid), time.process_time(), time.perf_counter()
        if profiler and op == args.profile and not warm:
            profiler.enable()
        with capture:
            response = call()
        if profiler:
            profiler.disable()
        wall, py, pg = time.perf_counter() - wall0, time.process_time() - py0, backend_cpu_seconds(backend_pid) - pg0
        if not warm:
            row = totals[op]
            row["n"] += 1
            row["queries"] += len(capture.captured_queries)
            row["py"] += py
            row["pg"] += pg
            row["wall"] += wall
            if args.queries == op and op not in printed:
                printed.add(op)
                print(f"-- {len(capture.captured_queries)} statements in one {op}:")
                for query in capture.captured_queries:
                    print("  ", query["sql"][: int(os.environ.get("SQL_WIDTH", 400))])
        return response

    for index, key in enumerate(sessions):
        warm = index == 0  # the first worker warms URLconf, templates, the cache connection up
        client = Client(enforce_csrf_checks=True)
        csrf = secrets.token_hex(16)
        client.cookies["sessionid"] = key
        client.cookies["csrftoken"] = csrf
        headers = {"X-CSRFToken": csrf}
        response = measure(
            "claim", lambda c=client, h=headers: c.post(f"/work/campaigns/{campaign.pk}/claim", headers=h), warm
        )
        assert response.status_code == 200, response.status_code  # the claim answers with the HIT page
        location = response["Content-Location"]
        path = location.rstrip("/")
        page = measure("page", lambda c=client, u=location: c.get(u), warm)
        assert page.status_code == 200, page.status_code
        tokens = list(dict.fromkeys(token_pattern.findall(page.content.decode())))
        answers = []
        for token in tokens:
            answer = {"item_token": token, "choice": "yes", "seconds_spent": 5.0}
            answers.append(answer)
            saved = measure(
                "autosave",
                lambda c=client, h=headers, a=answer, p=path: c.post(
                    f"{p}/answer", a, content_type="application/json", headers={**h, "Accept": "application/json"}
                ),
                warm,
            )
            assert saved.status_code == 200, saved.content
        submitted = measure(
            "submit",
            lambda c=client, h=headers, a=answers, p=path: c.post(
                f"{p}/submit",
                {"answers": a},
                content_type="application/json",
                headers={**h, "Accept": "application/json"},
            ),
            warm,
        )
        assert submitted.status_code == 200, submitted.content

    print(f"\n{'operation':<10} {'count':>6} {'queries':>8} {'py ms':>7} {'pg ms':>7} {'cpu ms':>7} {'wall ms':>8}")
    for op, row in totals.items():
        n = max(row["n"], 1)
        print(
            f"{op:<10} {row['n']:>6} {row['queries'] / n:>8.1f} {1000 * row['py'] / n:>7.2f} "
            f"{1000 * row['pg'] / n:>7.2f} {1000 * (row['py'] + row['pg']) / n:>7.2f} {1000 * row['wall'] / n:>8.2f}"
        )
    print("(py: this process's CPU, the test client included; pg: the PostgreSQL backend's CPU; 10 ms clock ticks)")
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(os.environ.get("PROFILE_SORT", "cumulative")).print_stats(40)
        print(out.getvalue())
    connection.close()
    recreate_database(args.pg, args.database)  # leave nothing behind but an empty database


if __name__ == "__main__":
    main()
