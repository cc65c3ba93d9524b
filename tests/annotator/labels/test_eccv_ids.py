"""How the ECCV JSON files write an id (`annotator/labels/eccv_ids.py`), for both exports: no database."""

import json

import pytest

from annotator.labels.eccv_ids import id_json, id_order


@pytest.mark.parametrize(
    ("source_id", "value"),
    [
        ("391895", 391895),
        ("0", 0),
        ("-12", -12),
        ("007", "007"),  # leading zeros: a string, or it would not read back the same
        ("1e3", "1e3"),
        ("a\tb", "a\tb"),
        ("9" * 19, "9" * 19),  # past an int64
    ],
)
def test_an_id_is_a_json_integer_only_when_it_is_one(source_id, value):
    assert json.loads(id_json(source_id)) == value
    assert type(json.loads(id_json(source_id))) is type(value)


def test_integer_ids_sort_first_in_numeric_order_then_the_others():
    assert sorted(["b", "10", "007", "9", "-1", "a"], key=id_order) == ["-1", "9", "10", "007", "a", "b"]
