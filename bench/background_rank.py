"""`make demo`'s "Rank with" on the embedded default: does the request answer at once, does the bar move,
do pages stay responsive while a thread of the server ranks?

A throwaway SQLite database (a temporary directory, migrated here, `var/` untouched) with the demo set
imported and a requester, `manage.py runserver` on it with no environment besides (eager Celery, as
`make demo` runs it), then over HTTP as a browser would: log in, POST "Rank with" from the dataset page,
poll the job's status JSON (as static/js/jobs.js does) and load the dataset page every 0.2 s until the run
is done. Printed: the POST's latency, the run's duration, the progress values seen, the dataset page's
latency meanwhile, and the ratio of the POST's latency to the run's duration (goal: well under 0.1).

    .venv/bin/python bench/background_rank.py                          # tfidf_pivot, the quick one
    .venv/bin/python bench/background_rank.py --annotator minilm_pivot # the demo's neural annotator
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PASSWORD = "vericap-bench"
SETUP = f"""
from django.core.management.base import OutputWrapper
import io
from annotator.models import Role
from annotator.scenarios.demo import demo_dataset
from tests.factories import user_with_role
user_with_role(Role.REQUESTER, username="requester", password="{PASSWORD}")
demo_dataset(out=OutputWrapper(io.StringIO()))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def csrf(text: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text).group(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotator", default="tfidf_pivot", choices=["tfidf_pivot", "minilm_pivot"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vericap-bench-bg-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
        env["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
        env["MEDIA_ROOT"] = f"{tmp}/media"
        manage = [PY, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True, cwd=ROOT)
        subprocess.run([*manage, "shell", "-c", SETUP], env=env, check=True, cwd=ROOT)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            run(base, args.annotator)
        finally:
            server.terminate()
            server.wait(timeout=30)


def run(base: str, annotator: str) -> None:
    session = requests.Session()
    for _ in range(120):
        try:
            login = session.get(f"{base}/accounts/login/", timeout=5)
            break
        except requests.RequestException:  # the server is still starting
            time.sleep(0.5)
    session.post(
        f"{base}/accounts/login/",
        data={"username": "requester", "password": PASSWORD, "csrfmiddlewaretoken": csrf(login.text)},
        headers={"Referer": f"{base}/accounts/login/"},
    )
    listing = session.get(f"{base}/datasets/").text
    dataset_url = base + re.search(r'href="(/datasets/\d+/)"', listing).group(1)
    page = session.get(dataset_url).text
    began = time.monotonic()
    posted = session.post(
        dataset_url + "rank/",
        data={"annotator": f"kind:{annotator}", "top_k": "25", "csrfmiddlewaretoken": csrf(page)},
        headers={"Referer": dataset_url},
        allow_redirects=False,
    )
    post_s = time.monotonic() - began
    assert posted.status_code == 302, posted.status_code
    run_id = int(re.search(r"/ranking/runs/(\d+)/", posted.headers["Location"]).group(1))
    page_times, finished = [], threading.Event()

    def pages():
        reader = requests.Session()
        reader.cookies.update(session.cookies)
        while not finished.is_set():
            started = time.monotonic()
            reader.get(dataset_url, timeout=60)
            page_times.append(time.monotonic() - started)
            time.sleep(0.2)

    threading.Thread(target=pages, daemon=True).start()
    seen = []
    while True:
        job = session.get(f"{base}/jobs/ranking/{run_id}/status.json", timeout=60).json()
        if not seen or seen[-1][1:] != (job["state"], job["percent"]):
            seen.append((round(time.monotonic() - began, 2), job["state"], job["percent"]))
        if job["state"] not in ("queued", "running"):
            break
        time.sleep(0.1)
    duration = time.monotonic() - began
    finished.set()
    print(f"annotator {annotator} on the demo set (19 images, 95 captions), embedded SQLite + runserver")
    print(
        f"POST Rank with: {posted.status_code} in {post_s:.3f} s; run {run_id} ended {seen[-1][1]} after {duration:.1f} s"
    )
    print("progress (seconds, state, percent):", seen)
    if page_times:
        print(
            f"dataset page while ranking: {len(page_times)} loads, median {statistics.median(page_times):.3f} s, "
            f"worst {max(page_times):.3f} s"
        )
    print(f"ratio POST latency / run duration: {post_s / duration:.4f} (goal < 0.1)")


if __name__ == "__main__":
    main()
