"""gunicorn's threaded worker with a bounded queue: past capacity it answers 503 + Retry-After at once.

A gthread worker hands every readable connection to its thread pool, whose queue has no bound: past
capacity requests wait there for seconds, browsers and proxies give up, and connections are cut. Here
each connection is stamped when it is queued; a thread that picks up a request which waited longer than
`VERICAP_MAX_QUEUE_WAIT` seconds (0.5 by default) answers it with a ready-made 503 and `Retry-After`
instead of running Django on it. That answer costs a fraction of a millisecond, so a saturated server
keeps serving what it can at its full rate, refuses the rest clearly, and the connection stays open.
Retry-After grows with the share of requests refused (Pressure), so the refused come back spread out
instead of all at once. A refused request did nothing, so sending it again is always safe (hit.js does,
after Retry-After).

`/healthz` is never refused: an orchestrator must not restart a server for being busy.

    gunicorn config.wsgi -c config/gunicorn.conf.py     # worker_class = "config.gunicorn_worker.SheddingWorker"
"""

from __future__ import annotations

import json
import os
import random
import threading
import time

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker

_local = threading.local()

MESSAGE = "Vericap is busy right now. Nothing you saved is lost; your browser tries again in a few seconds."
NEVER_REFUSED = ("/healthz",)


def max_queue_wait() -> float:
    return float(os.environ.get("VERICAP_MAX_QUEUE_WAIT", "0.5"))


def retry_after_seconds() -> int:
    return int(os.environ.get("VERICAP_BUSY_RETRY_AFTER", "2"))


def retry_after_cap() -> int:
    return int(os.environ.get("VERICAP_BUSY_RETRY_AFTER_MAX", "60"))


def _wants_json(environ) -> bool:
    return (
        environ.get("PATH_INFO", "").startswith("/api/")
        or "application/json" in environ.get("HTTP_ACCEPT", "")
        or environ.get("CONTENT_TYPE", "").startswith("application/json")
    )


def busy_response(environ, start_response, retry_after: int):
    """The 503 for a request refused unprocessed: JSON for scripts, a page that reloads itself otherwise."""
    if _wants_json(environ):
        body = json.dumps({"error": MESSAGE, "retry_after": retry_after, "busy": True}).encode()
        content_type = "application/json"
    else:
        reload = (
            f'<meta http-equiv="refresh" content="{retry_after}">'
            if environ.get("REQUEST_METHOD") in ("GET", "HEAD")
            else ""
        )
        body = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"{reload}<title>Busy - Vericap</title></head>"
            f"<body><h1>Busy</h1><p>{MESSAGE}</p></body></html>"
        ).encode()
        content_type = "text/html; charset=utf-8"
    start_response(
        "503 Service Unavailable",
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Retry-After", str(retry_after)),
            ("Cache-Control", "no-store"),
            ("X-Vericap-Refused", "busy"),
        ],
    )
    return [body]


class Pressure:
    """How far past capacity this process is: refused / served requests over the last two seconds.

    Retry-After grows with it, so the refused come back spread over as many seconds as it takes to serve
    them: at 5 refused per served request, `base` x 6 seconds, at most `cap`. A fixed Retry-After would
    bring every refused browser back in the same few seconds, refused again, until refusals alone fill
    the server. Counters are updated without a lock: a lost increment only nudges an estimate.
    """

    WINDOW = 2.0

    def __init__(self):
        self.started, self.served, self.refused, self.ratio = time.monotonic(), 0, 0, 0.0

    def note(self, *, refused: bool) -> None:
        now = time.monotonic()
        if now - self.started >= self.WINDOW:
            self.ratio = self.refused / max(self.served, 1)
            self.started, self.served, self.refused = now, 0, 0
        if refused:
            self.refused += 1
        else:
            self.served += 1

    def retry_after(self, base: int, cap: int) -> int:
        ratio = max(self.ratio, self.refused / max(self.served, 1))
        # A little spread too, so refused browsers do not all come back in the same second.
        return min(cap, round(base * (1 + ratio))) + random.randint(0, 1)


def shedding(app, *, max_wait: float, retry_after: int, retry_cap: int = 60):
    """`app`, but a request that waited in the queue longer than `max_wait` seconds gets the busy 503,
    with a Retry-After from `retry_after` up to `retry_cap` seconds as the overload grows (Pressure)."""
    pressure = Pressure()

    def wrapped(environ, start_response):
        waited = getattr(_local, "waited", 0.0)
        if waited > max_wait and environ.get("PATH_INFO") not in NEVER_REFUSED:
            pressure.note(refused=True)
            # Consume a small body, so the connection stays usable for the client's next request; a large
            # one (an upload) is left to gunicorn, which drains it within its time limit or closes the
            # connection after this answer.
            try:
                length = int(environ.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if 0 < length <= 1 << 20:
                environ["wsgi.input"].read(length)
            return busy_response(environ, start_response, pressure.retry_after(retry_after, retry_cap))
        pressure.note(refused=False)
        return app(environ, start_response)

    wrapped.pressure = pressure
    return wrapped


_gunicorn_http_date = util.http_date
_date_header = (0, "")


def http_date_each_second(timestamp=None):
    """gunicorn's `util.http_date`, formatted once a second: every response carries a Date header, and
    `email.utils.formatdate` per response was about 3% of the server's CPU under the crowd's load."""
    global _date_header
    if timestamp is not None:
        return _gunicorn_http_date(timestamp)
    second = int(time.time())
    cached = _date_header  # one read: another thread may replace it meanwhile, never half of it
    if cached[0] != second:
        cached = (second, _gunicorn_http_date(second))
        _date_header = cached
    return cached[1]


class SheddingWorker(ThreadWorker):
    def load_wsgi(self):
        util.http_date = http_date_each_second  # gunicorn.http.wsgi reads it as util.http_date per response
        super().load_wsgi()
        self.wsgi = shedding(
            self.wsgi, max_wait=max_queue_wait(), retry_after=retry_after_seconds(), retry_cap=retry_after_cap()
        )

    def enqueue_req(self, conn):
        conn.vericap_queued_at = time.monotonic()
        super().enqueue_req(conn)

    def handle(self, conn):
        queued_at = getattr(conn, "vericap_queued_at", None)
        _local.waited = time.monotonic() - queued_at if queued_at is not None else 0.0
        return super().handle(conn)
