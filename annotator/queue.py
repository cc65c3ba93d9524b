"""Enqueue Celery work from services without importing `workers` (annotator never imports it).

Tasks are looked up by name in the Celery app, which autodiscovers `workers.tasks`. They are sent after
the surrounding transaction commits, so a worker never sees a row that is not there yet; with
CELERY_TASK_ALWAYS_EAGER (the embedded default) they run in-process at that moment.
"""

from celery import current_app
from django.db import transaction


def enqueue_on_commit(task_name: str, *args, **kwargs) -> None:
    """Send `task_name(*args, **kwargs)` once the current transaction commits (at once outside one)."""
    current_app.loader.import_default_modules()  # make sure workers.tasks is registered
    task = current_app.tasks[task_name]
    transaction.on_commit(lambda: task.delay(*args, **kwargs))
