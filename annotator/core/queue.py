"""Enqueue Celery work from services without importing `workers` (annotator never imports it).

Tasks are looked up by name in the Celery app, which autodiscovers `workers.tasks`. They are sent after
the surrounding transaction commits, so a worker never sees a row that is not there yet; with
CELERY_TASK_ALWAYS_EAGER (the embedded default) they run in-process at that moment.

A broker that is down (or Redis refusing writes) must not turn a committed write into an error: the
person's submit is in the database, and telling them it failed would only make them do it again. So a
message that cannot be sent after commit is logged and left to the sweep (annotator/operations/services/sweep.py),
which finds the work by its state (a submission without a score, an import without progress) and does
it. Outside a transaction there is nothing committed yet to protect: the error reaches the caller, which
may refuse the request (503) and undo its own state.

Long work started from a request (a ranking run) goes through `enqueue_in_background_on_commit`: with a
broker it is the same as `enqueue_on_commit`; with eager Celery it runs in a thread of this process after
commit, so the request answers at once instead of holding the person (and a server thread) for minutes.
Services that start long work (rankings, imports, builds, exports, and the retries of every job) call
`enqueue_long_on_commit`: while a request is being served (LongWorkInBackgroundMiddleware, below,
marks it) that is the background path; from a management command, the sweep or a task it is
enqueue_on_commit, so `manage.py demo_setup` and a service called from a test find the work done at commit.
"""

import contextlib
import contextvars
import logging
import threading

from celery import current_app
from django.db import connections, transaction

logger = logging.getLogger(__name__)

# Threads of one web process (gunicorn gthread, runserver) may enqueue their first task at the same moment;
# importing workers.tasks from several threads at once lets some of them see the package half-imported
# (NotRegistered, a 500 on the first submits after a start). One thread imports, the others wait.
_IMPORT_LOCK = threading.Lock()

# True while this thread (or task) serves a web request: long work it starts goes to the background. A
# thread started by _background_start does not inherit it (threads begin with an empty context).
_SERVING_REQUEST = contextvars.ContextVar("vericap_serving_request", default=False)


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


def _background_start(task, args, kwargs) -> threading.Thread:
    def run():
        try:
            task.apply(args=list(args), kwargs=kwargs)
        except Exception:  # the task records its own failure on its row; nobody waits on this thread
            logger.exception("background task %s%r failed", task.name, args)
        finally:
            connections.close_all()  # this thread's connections; nothing else would close them

    # A daemon: a server that stops does not wait for it. Work it leaves unfinished is found by its state
    # and resumed by the sweep, as for a worker that was killed.
    thread = threading.Thread(target=run, name=f"background {task.name}{args!r}", daemon=True)
    thread.start()
    return thread


def enqueue_in_background_on_commit(task_name: str, *args, **kwargs) -> None:
    """Send `task_name(*args, **kwargs)` once the current transaction commits, never running it in this thread.

    With a broker this is enqueue_on_commit. With eager Celery (the embedded default) the task runs in a new
    daemon thread of this process after commit (at once outside a transaction); the caller returns without
    waiting for it. The task must be safe to run beside requests: it takes ids and locks its own rows.
    """
    if not current_app.conf.task_always_eager:
        enqueue_on_commit(task_name, *args, **kwargs)
        return
    task = _task(task_name)
    transaction.on_commit(lambda: _background_start(task, args, kwargs))


def background_threads() -> list[threading.Thread]:
    """The background tasks of this process still running (the tests join them before looking)."""
    return [thread for thread in threading.enumerate() if thread.name.startswith("background ") and thread.is_alive()]


@contextlib.contextmanager
def serving_request():
    """Mark the code inside as serving a web request: long work it starts runs in the background."""
    token = _SERVING_REQUEST.set(True)
    try:
        yield
    finally:
        _SERVING_REQUEST.reset(token)


def enqueue_long_on_commit(task_name: str, *args, **kwargs) -> None:
    """Long work (a ranking, an import, a build, an export): enqueue_in_background_on_commit while a request
    is being served (serving_request), so the request answers at once and the page's progress widget follows
    the job; enqueue_on_commit otherwise (a command, the sweep, a task), where the caller may wait for it."""
    if _SERVING_REQUEST.get():
        enqueue_in_background_on_commit(task_name, *args, **kwargs)
    else:
        enqueue_on_commit(task_name, *args, **kwargs)


class LongWorkInBackgroundMiddleware:
    """Long work a request starts (a ranking, an import, a build, an export) never runs inside it.

    With a broker it goes to a worker anyway; on the embedded default (eager Celery) it would run in the
    request and hold the person for as long as it takes, with the progress bar never shown. Marked here,
    annotator.core.queue.enqueue_long_on_commit hands it to a thread after commit and the request answers at once.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with serving_request():
            return self.get_response(request)
