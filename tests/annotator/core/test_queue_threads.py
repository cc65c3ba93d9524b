"""The first tasks enqueued at the same moment by several threads of a fresh web process all find their task.

Found by bench/hit_serving.py: gunicorn's threads importing workers.tasks at once saw it half
imported (NotRegistered -> a 500 on the first submits after a start). The task modules are imported by one
thread while the others wait.
"""

import threading
import time

from celery import current_app

from annotator.core import queue

NAME = "vericap.tests.not_yet_imported"


def test_concurrent_first_lookups_import_once_and_all_find_the_task(monkeypatch):
    running, seen, calls = [0], [], []

    def slow_import():  # stands in for importing workers.tasks, which takes a while
        running[0] += 1
        seen.append(running[0])
        calls.append(1)
        time.sleep(0.05)
        current_app.tasks[NAME] = "the task"
        running[0] -= 1

    monkeypatch.setattr(current_app.loader, "import_default_modules", slow_import)
    barrier = threading.Barrier(8)
    found = []

    def lookup():
        barrier.wait()
        found.append(queue._task(NAME))

    threads = [threading.Thread(target=lookup) for _ in range(8)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    finally:
        current_app.tasks.pop(NAME, None)
    assert found == ["the task"] * 8
    assert max(seen) == 1 and len(calls) == 1
