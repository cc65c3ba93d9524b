"""How the ECCV Caption JSON files write an id: an integer when the source id is one (COCO ids, as ECCV Caption
releases them), else a JSON string. One rule for the campaign export (`annotator/labels/services/exports/eccv.py`)
and the label-set export (`annotator/labels/services/labelsets/exports.py`). Pure: no Django."""

from __future__ import annotations

import json
import re

# An integer as JSON writes it: no leading zeros ("007" stays a string), at most 18 digits (fits an int64).
INTEGER_ID = re.compile(r"-?[1-9][0-9]{0,17}|0")


def id_json(source_id: str) -> str:
    """A source id as JSON text: the integer itself when it is one, else a JSON string."""
    return source_id if INTEGER_ID.fullmatch(source_id) else json.dumps(source_id)


def id_order(source_id: str) -> tuple[bool, int, str]:
    """A sort key: the integer ids first, in numeric order, then the others in text order."""
    integer = INTEGER_ID.fullmatch(source_id) is not None
    return (not integer, int(source_id) if integer else 0, source_id)
