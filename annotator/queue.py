"""Enqueue Celery work from services without importing `workers` (annotator never imports it).

Tasks are looked up by name in the Celery app, which autodiscovers `workers.tasks`. They are sent after
the surrounding transaction commits, so a worker never sees a row that is not there yet; with
CELERY_TASK_ALWAYS_EAGER (the embedded default) they run in-process at that moment.
"""

import threading

from celery import current_app
from django.db import transaction

# Threads of one web process (gunicorn gthread, runserver) may enqueue their first task at the same moment;
# importing workers.tasks from several threads at once lets some of them see the package half-imported
# (NotRegistered, a 500 on the first submits after a start). One thread imports, the others wait.
_IMPORT_LOCK = threading.Lock()


def _task(task_name: str):
    with _IMPORT_LOCK:
        if task_name not in current_app.tasks:
            current_app.loader.import_default_modules()  # make sure workers.tasks is registered
        return current_app.tasks[task_name]


def enqueue_on_commit(task_name: str, *args, **kwargs) -> None:
    """Send `task_name(*args, **kwargs)` once the current transaction commits (at once outside one)."""
    task = _task(task_name)
    transaction.on_commit(lambda: task.delay(*args, **kwargs))
