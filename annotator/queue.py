"""Enqueue Celery work from services without importing `workers` (annotator never imports it).

Tasks are looked up by name in the Celery app, which autodiscovers `workers.tasks`. They are sent after
the surrounding transaction commits, so a worker never sees a row that is not there yet; with
CELERY_TASK_ALWAYS_EAGER (the embedded default) they run in-process at that moment.

A broker that is down (or Redis refusing writes) must not turn a committed write into an error: the
person's submit is in the database, and telling them it failed would only make them do it again. So a
message that cannot be sent after commit is logged and left to the sweep (annotator/services/sweep.py),
which finds the work by its state (a submission without a score, an import without progress) and does
it. Outside a transaction there is nothing committed yet to protect: the error reaches the caller, which
may refuse the request (503) and undo its own state.
"""

import logging
import threading

from celery import current_app
from django.db import transaction

logger = logging.getLogger(__name__)

# Threads of one web process (gunicorn gthread, runserver) may enqueue their first task at the same moment;
# importing workers.tasks from several threads at once lets some of them see the package half-imported
# (NotRegistered, a 500 on the first submits after a start). One thread imports, the others wait.
_IMPORT_LOCK = threading.Lock()


def _task(task_name: str):
    with _IMPORT_LOCK:
        if task_name not in current_app.tasks:
            current_app.loader.import_default_modules()  # make sure workers.tasks is registered
        return current_app.tasks[task_name]


def _send_or_leave_to_sweep(task, args, kwargs) -> None:
    try:
        task.delay(*args, **kwargs)
    except Exception:  # the write has committed; the sweep does the work when the broker is back
        logger.exception("could not queue %s%r after commit; the sweep will pick the work up", task.name, args)


def enqueue_on_commit(task_name: str, *args, **kwargs) -> None:
    """Send `task_name(*args, **kwargs)` once the current transaction commits.

    Inside a transaction a failure to send is logged, never raised (see the module docstring). Outside one
    the task is sent at once and a broker error is raised to the caller.
    """
    task = _task(task_name)
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: _send_or_leave_to_sweep(task, args, kwargs))
    else:
        task.delay(*args, **kwargs)
