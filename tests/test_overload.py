"""Past capacity the server refuses clearly: 503 with Retry-After, never a dropped connection.

The unit part drives the worker's refusal (config/gunicorn_worker.py) directly; the bounded part runs
bench/hit_serving.py --hammer against a deliberately small gunicorn (one process, two threads, a 20 ms
queue bound) so that it is over capacity, and checks what the crowd got and what the database holds.
"""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from config import gunicorn_worker

ROOT = Path(__file__).resolve().parents[1]


def call(app, path="/work/assignments/1/answer", accept="application/json", method="POST"):
    answer = {}

    def start_response(status, headers):
        answer["status"], answer["headers"] = status, dict(headers)

    environ = {
        "PATH_INFO": path,
        "HTTP_ACCEPT": accept,
        "REQUEST_METHOD": method,
        "wsgi.input": io.BytesIO(b'{"choice": "yes"}'),
    }
    answer["body"] = b"".join(app(environ, start_response))
    return answer


def served(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"served"]


def test_a_request_that_waited_past_the_bound_gets_503_with_retry_after_and_json():
    app = gunicorn_worker.shedding(served, max_wait=0.5, retry_after=2)
    gunicorn_worker._local.waited = 0.8
    answer = call(app)
    assert answer["status"].startswith("503")
    assert answer["headers"]["Retry-After"] in ("2", "3", "4", "5")
    body = json.loads(answer["body"])
    assert body["busy"] is True and "Nothing you saved is lost" in body["error"]


def test_a_page_refused_reloads_itself_and_a_prompt_request_is_served():
    app = gunicorn_worker.shedding(served, max_wait=0.5, retry_after=2)
    gunicorn_worker._local.waited = 0.8
    page = call(app, path="/work/assignments/1/", accept="text/html", method="GET")
    assert page["status"].startswith("503") and b'http-equiv="refresh"' in page["body"]
    gunicorn_worker._local.waited = 0.1
    assert call(app)["body"] == b"served"


def test_retry_after_grows_with_the_share_refused_and_stays_capped():
    app = gunicorn_worker.shedding(served, max_wait=0.5, retry_after=2, retry_cap=20)
    gunicorn_worker._local.waited = 0.8
    first = int(call(app)["headers"]["Retry-After"])
    for _ in range(10):  # 10 refused, none served: far past capacity
        call(app)
    later = int(call(app)["headers"]["Retry-After"])
    assert first in (2, 3, 4, 5) and 20 <= later <= 21
    gunicorn_worker._local.waited = 0.0
    for _ in range(100):  # served again: the estimate comes down
        call(app)
    gunicorn_worker._local.waited = 0.8
    assert int(call(app)["headers"]["Retry-After"]) <= 5


def test_the_health_check_is_never_refused():
    app = gunicorn_worker.shedding(served, max_wait=0.5, retry_after=2)
    gunicorn_worker._local.waited = 5.0
    assert call(app, path="/healthz", method="GET")["body"] == b"served"


def server_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_short_hammer_past_capacity_gets_503s_with_retry_after_and_no_dropped_connection(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the hammer needs PostgreSQL (DATABASE_URL)")
    out = tmp_path / "hammer.json"
    broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
    command = [
        sys.executable,
        "bench/hit_serving.py",
        "--hammer",
        "--steps",
        "24",
        "--step-seconds",
        "12",
        "--items",
        "4",
        "--taken-hits",
        "0",
        "--cpu-workers",
        "0",
        "--gunicorn-workers",
        "1",
        "--gunicorn-threads",
        "2",
        "--max-queue-wait",
        "0.02",
        "--timeout",
        "20",
        "--pg",
        server_url(),
        "--database",
        f"vericap_hammer_{os.getpid()}",
        "--broker",
        broker,
        "--port",
        str(18000 + os.getpid() % 1000),
        "--out",
        str(out),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_", "CACHE_URL"))}
    finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    summary = finished.stdout[-4000:] + finished.stderr[-2000:]
    assert out.exists(), summary
    result = json.loads(out.read_text())
    assert result["steps"][0]["served"] >= 100, summary
    assert result["refused"] > 0, "the small server was never over capacity: " + summary
    assert result["refused_without_retry_after"] == 0, summary
    assert result["dropped"] == 0, result["dropped_kinds"]
    assert result["unexpected"] == [], summary
    check = result["check"]
    assert check["acknowledged_submissions"] > 0, summary
    assert check["lost_answers"] == 0 and check["lost_submissions"] == 0, summary
    assert check["doubled_answers"] == 0 and check["doubled_submissions"] == 0, summary
    assert check["over_redundancy"] == 0 and check["same_worker_twice"] == 0, summary
    assert finished.returncode == 0, summary
