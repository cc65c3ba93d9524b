"""How an import walks its files (`annotator.datasets.batches`): no database."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from annotator.datasets.batches import batches, parallel


def test_batches_cut_an_iterable_into_lists_of_the_size_the_last_shorter():
    assert list(batches(iter(range(7)), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(batches([], 3)) == []


def test_parallel_returns_results_in_order_and_waits_for_every_call_before_raising():
    finished = []
    lock = threading.Lock()

    def work(n):
        if n == 0:
            raise ValueError("first fails at once")
        time.sleep(0.05)
        with lock:
            finished.append(n)
        return n * n

    with ThreadPoolExecutor(4) as pool:
        assert parallel(pool, lambda n: n * n, [(n,) for n in range(6)]) == [0, 1, 4, 9, 16, 25]
        with pytest.raises(ValueError, match="first fails"):
            parallel(pool, work, [(n,) for n in range(4)])
        assert sorted(finished) == [1, 2, 3]  # no call still running when the error is raised
