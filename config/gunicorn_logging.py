"""gunicorn's logger with an access log that computes only the atoms its format names.

gunicorn's own `Logger.access` builds every atom for every request before formatting: the remote
address, a strftime of the time, each request and response header and every WSGI environ variable,
then copies them all to escape quotes. Under the crowd's load that was about 5% of the server's CPU
(py-spy, docs/operations.md) for a line that names four of them. Here the format (`access_log_format`,
unchanged) reads the atoms through a mapping that works each one out when asked, with gunicorn's own
meaning and escaping: the same line, a fraction of the work.

    logger_class = "config.gunicorn_logging.Logger"      # config/gunicorn.conf.py
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Mapping

from gunicorn import glogging


def _status(atoms):
    status = atoms.resp.status
    return status.split(None, 1)[0] if isinstance(status, str) else status


def _sent(atoms):
    return getattr(atoms.resp, "sent", None)


# gunicorn's atoms (glogging.Logger.atoms), each a function of the request's LazyAtoms.
_SIMPLE_ATOMS = {
    "h": lambda a: a.environ.get("REMOTE_ADDR", "-"),
    "l": lambda a: "-",
    "u": lambda a: a.logger._get_user(a.environ) or "-",
    "t": lambda a: a.logger.now(),
    "r": lambda a: f"{a.environ['REQUEST_METHOD']} {a.environ['RAW_URI']} {a.environ['SERVER_PROTOCOL']}",
    "s": _status,
    "m": lambda a: a.environ.get("REQUEST_METHOD"),
    "U": lambda a: a.environ.get("PATH_INFO"),
    "q": lambda a: a.environ.get("QUERY_STRING"),
    "H": lambda a: a.environ.get("SERVER_PROTOCOL"),
    "b": lambda a: str(_sent(a)) if _sent(a) is not None else "-",
    "B": _sent,
    "f": lambda a: a.environ.get("HTTP_REFERER", "-"),
    "a": lambda a: a.environ.get("HTTP_USER_AGENT", "-"),
    "T": lambda a: a.request_time.seconds,
    "D": lambda a: a.request_time.seconds * 1000000 + a.request_time.microseconds,
    "M": lambda a: a.request_time.seconds * 1000 + int(a.request_time.microseconds / 1000),
    "L": lambda a: f"{a.request_time.seconds}.{a.request_time.microseconds:06d}",
    "p": lambda a: f"<{os.getpid()}>",
}


class LazyAtoms(Mapping):
    """gunicorn's atoms (see `glogging.Logger.atoms`), each computed on first use, quotes escaped as
    `glogging.SafeAtoms` escapes them and a missing one shown as '-'."""

    def __init__(self, logger, resp, req, environ, request_time):
        self.logger, self.resp, self.req, self.environ, self.request_time = logger, resp, req, environ, request_time

    def _atom(self, key: str):
        if key.startswith("{") and key.endswith(("}i", "}o", "}e")):
            name, kind = key[1:-2].lower(), key[-1]
            if kind == "i":
                pairs = self.req.headers if hasattr(self.req, "headers") else self.req
            elif kind == "o":
                pairs = self.resp.headers
            else:
                pairs = self.environ.items()
            return next((value for header, value in pairs if header.lower() == name), "-")
        atom = _SIMPLE_ATOMS.get(key)
        return atom(self) if atom is not None else "-"

    def __getitem__(self, key):
        value = self._atom(key)
        if value is None:
            return "-"
        return value.replace('"', '\\"') if isinstance(value, str) else value

    def __iter__(self):
        return iter(_SIMPLE_ATOMS)

    def __len__(self):
        return len(_SIMPLE_ATOMS)


class Logger(glogging.Logger):
    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        try:
            self.access_log.info(self.cfg.access_log_format, LazyAtoms(self, resp, req, environ, request_time))
        except Exception:
            self.error(traceback.format_exc())
