"""Run a Celery task in the test's own thread and return its result."""


def run_task(task, *args):
    """`task.apply(args).get()`, without Celery's join guard: the guard is one process-wide flag that an eager
    task running in another thread (the live server of the browser tests) may hold at that moment."""
    return task.apply(args=list(args)).get(disable_sync_subtasks=False)
