"""Long work handed to a thread of the process (annotator.core.queue): hold it at its start, wait for it to end."""

import threading

from celery.signals import task_prerun

from annotator.core.queue import background_threads


def background_join(timeout: float = 120) -> None:
    """Wait for the background tasks of this process to finish; fail if one does not in `timeout` s."""
    for thread in background_threads():
        thread.join(timeout=timeout)
        assert not thread.is_alive(), f"{thread.name} did not finish in {timeout} s"


class HeldTask:
    """Holds the Celery task `name` at its start until `release` is set (at most 30 s) and records the thread
    it runs in. A request that ran the task itself would be the one held, so a test sees it did not."""

    def __init__(self, name: str):
        self.name = name
        self.started = threading.Event()
        self.release = threading.Event()
        self.thread = None
        task_prerun.connect(self._hold, weak=False)

    def _hold(self, sender=None, **kwargs):
        if sender is not None and sender.name == self.name:
            self.thread = threading.current_thread()
            self.started.set()
            self.release.wait(timeout=30)

    def close(self):
        self.release.set()
        task_prerun.disconnect(self._hold)
