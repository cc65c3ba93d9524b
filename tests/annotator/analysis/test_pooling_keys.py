"""Pair keys one at a time (`key_function`, `key_query`) agree with the vectorised `query_keys`: no database."""

import numpy as np
import pytest

from annotator.analysis.pooling import decode_keys, key_function, key_query, query_keys


@pytest.mark.parametrize("direction", ["i2t", "t2i", "t2t", "i2i"])
def test_a_scalar_key_is_the_vectorised_one_and_gives_back_its_query(direction):
    rng = np.random.default_rng(7)
    queries, targets = rng.integers(1, 2**31, size=200), rng.integers(1, 2**31, size=200)
    make_key = key_function(direction)
    keys = [make_key(int(q), int(t)) for q, t in zip(queries, targets, strict=True)]
    assert keys == query_keys(direction, queries, targets).tolist()
    first, second = decode_keys(np.array(keys))
    if direction in ("i2t", "t2i"):
        assert [key_query(direction, key) for key in keys] == queries.tolist()
    else:  # symmetric: (low, high), whichever side was the query
        assert (first <= second).all() and make_key(int(targets[0]), int(queries[0])) == keys[0]


def test_a_symmetric_pair_of_an_id_with_itself_has_no_key_and_an_unknown_direction_is_refused():
    assert key_function("t2t")(5, 5) is None and key_function("i2t")(5, 5) == (5 << 32) | 5
    with pytest.raises(ValueError):
        key_function("x2y")(1, 2)
