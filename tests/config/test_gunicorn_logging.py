"""The server's cheaper access log and Date header give exactly what gunicorn's own give."""

import datetime
import logging
import time
from types import SimpleNamespace

import pytest
from gunicorn import glogging
from gunicorn.config import Config

from config import gunicorn_worker
from config.gunicorn_logging import LazyAtoms, Logger

FORMATS = [
    '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"',  # gunicorn's default
    "%(m)s %(U)s %(s)s %(D)s",  # bench/hit_serving.py's
    "%(q)s %(H)s %(B)s %(T)s %(M)s %(L)s %(p)s %({user-agent}i)s %({content-type}o)s %({remote_addr}e)s %(zz)s",
]


def _request():
    environ = {
        "REMOTE_ADDR": "127.0.0.1",
        "REQUEST_METHOD": "POST",
        "RAW_URI": "/work/assignments/7/answer?x=1",
        "PATH_INFO": "/work/assignments/7/answer",
        "QUERY_STRING": "x=1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_REFERER": "http://127.0.0.1/work/",
        "HTTP_USER_AGENT": 'a "quoted" agent',
    }
    req = SimpleNamespace(headers=[("USER-AGENT", 'a "quoted" agent'), ("ACCEPT", "application/json")])
    resp = SimpleNamespace(status="200 OK", sent=123, headers=[("Content-Type", "application/json")])
    return resp, req, environ, datetime.timedelta(seconds=1, microseconds=2345)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_lazy_atoms_format_the_same_line_as_gunicorns(fmt):
    logger = Logger(Config())
    logger.now = lambda: "[27/Nov/2026:18:00:00 +0000]"  # one clock for both
    resp, req, environ, elapsed = _request()
    theirs = fmt % glogging.SafeAtoms(logger.atoms(resp, req, environ, elapsed))
    ours = fmt % LazyAtoms(logger, resp, req, environ, elapsed)
    assert ours == theirs


def test_the_logger_writes_the_access_line(tmp_path):
    config = Config()
    config.set("accesslog", str(tmp_path / "access.log"))
    config.set("access_log_format", "%(m)s %(U)s %(s)s %(D)s")
    logger = Logger(config)
    logger.access(*_request())
    for handler in logger.access_log.handlers:
        handler.flush()
    assert (tmp_path / "access.log").read_text() == "POST /work/assignments/7/answer 200 1002345\n"
    logging.getLogger("gunicorn.access").handlers.clear()


def test_the_date_header_is_gunicorns_formatted_once_a_second():
    second = int(time.time())
    value = gunicorn_worker.http_date_each_second()
    assert value in (gunicorn_worker._gunicorn_http_date(second), gunicorn_worker._gunicorn_http_date(second + 1))
    assert gunicorn_worker._date_header[1] == value  # kept for the rest of that second
    assert gunicorn_worker.http_date_each_second(0) == "Thu, 01 Jan 1970 00:00:00 GMT"
