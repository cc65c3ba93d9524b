"""A bounded chaos run in the suite: bench/chaos.py with 20 workers for a minute, every fault kind once.

gunicorn with the production settings, a real Celery worker and beat, PostgreSQL (a throwaway database on
the server the suite uses) and a Redis of the run's own, which it kills, restarts and fills; the shared
Redis is never touched. Fails on any 500, any acknowledged answer or submission missing, anything stored
twice, a HIT over its redundancy, or a submission still unscored after the grace period.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

pytestmark = [pytest.mark.chaos, pytest.mark.postgres]
ROOT = Path(__file__).resolve().parents[1]


def server_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"


def test_workers_see_no_500_and_nothing_is_lost_doubled_or_left_unscored(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the chaos run needs PostgreSQL (DATABASE_URL)")
    if shutil.which("redis-server") is None:
        pytest.skip("the chaos run starts a Redis of its own (redis-server)")
    out = tmp_path / "chaos.json"
    command = [
        sys.executable,
        "bench/chaos.py",
        "--workers",
        "20",
        "--minutes",
        "1",
        "--think",
        "1.5",
        "--ramp",
        "5",
        "--grace",
        "120",
        "--sweep-every",
        "10",
        "--score-after",
        "20",
        "--pg",
        server_url(),
        "--database",
        f"vericap_chaos_{os.getpid()}",
        "--logs",
        str(tmp_path / "logs"),
        "--json",
        str(out),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_", "CACHE_URL"))}
    finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=540)
    assert out.exists(), finished.stdout[-3000:] + finished.stderr[-3000:]
    result = json.loads(out.read_text())
    summary = finished.stdout[-4000:]
    assert {fault["kind"] for fault in result["faults"]} == {"gunicorn", "celery", "redis", "postgres", "redis_oom"}
    assert not any(f["detail"].startswith("could not inject") for f in result["faults"]), result["faults"]
    assert result["hits_submitted"] >= 20 and result["answers_acknowledged"] >= 300, summary
    assert result["responses_500"] == 0, result["server_errors"]
    assert result["lost_answers"] == 0 and result["lost_submissions"] == 0, summary
    assert result["doubled_answers"] == 0 and result["doubled_submissions"] == 0, summary
    assert result["same_worker_twice"] == 0 and result["over_redundancy"] == 0, summary
    assert sum(result["gave_up"].values()) == 0 and result["unexpected_4xx_count"] == 0, summary
    assert result["unscored_after_grace"] == 0, summary
    assert finished.returncode == 0, summary
