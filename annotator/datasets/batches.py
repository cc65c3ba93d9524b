"""How an import walks its files: batch sizes, batches of an iterable, calls on the thread pool, progress."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from itertools import islice

IMAGE_BATCH = 500
PARALLEL_FILES = 32
CAPTION_BATCH = 2000
Progress = Callable[[str, int, int], None]  # (phase, done, total; total 0 while still unknown)


def batches(iterable: Iterable, size: int) -> Iterator[list]:
    iterator = iter(iterable)
    while batch := list(islice(iterator, size)):
        yield batch


def parallel(pool: ThreadPoolExecutor, function, argument_tuples: list[tuple]) -> list:
    """`function(*args)` for each tuple on the pool, results in order. Waits for every call before
    raising the first error, so no file is still being written while a failed import cleans up."""
    futures = [pool.submit(function, *args) for args in argument_tuples]
    wait(futures)
    return [future.result() for future in futures]
