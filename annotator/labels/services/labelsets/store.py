"""Writing one label set: the LabelSet row with the next free version, its queries and its pairs."""

from __future__ import annotations

import io
import re
from collections.abc import Mapping

from django.core.exceptions import ValidationError
from django.db import connection, transaction

from annotator.analysis.labelsets import SetView, summary, touches_queries
from annotator.core.bulk import copy_in, copy_line
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Dataset
from annotator.labels.models.labelsets import LabelSet, LabelSetOperand, LabelSetPair, LabelSetQuery

BATCH_SIZE = 5_000
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}$")


def check_name(name: str) -> str:
    """A set name is a short token (letters, digits, `_ . + -`): it is typed on command lines as `name@version`."""
    name = (name or "").strip()
    if not NAME_PATTERN.match(name):
        raise ApplicationError(
            f"{name[:40]!r} is not a usable label set name: up to 100 letters, digits, '_', '.', '+' or '-', "
            "starting with a letter or digit."
        )
    return name


QUERY_COLUMNS = ("label_set_id", "direction", "image_id", "caption_id")
PAIR_COLUMNS = (
    "label_set_id",
    "kind",
    "image_id",
    "caption_id",
    "other_image_id",
    "other_caption_id",
    "is_positive",
    "score",
    "choice",
    "sampling_method",
)


def _query_row(label_set_id: int, direction: str, query: int) -> tuple:
    if direction in ("i2t", "i2i"):
        return (label_set_id, direction, query, None)
    return (label_set_id, direction, None, query)


def _pair_row(label_set_id: int, key: tuple, positive: bool, score, choice: str, sampling_method: str = "") -> tuple:
    kind, first, second = key
    if kind == "image_caption":
        members = (first, second, None, None)
    elif kind == "caption_caption":
        members = (None, first, None, second)
    else:
        members = (first, None, second, None)
    return (label_set_id, kind, *members, positive, score, choice or "", sampling_method or "")


def _insert(model, columns: tuple[str, ...], rows) -> None:
    """Insert plain rows (tuples in `columns` order) into `model`'s table without model instances: an
    ECCV-sized set is tens of thousands of rows, where building objects for bulk_create costs most of the
    time. PostgreSQL: COPY through annotator.core.bulk, in chunks; elsewhere: executemany. Runs on the caller's
    transaction."""
    table = model._meta.db_table
    db_columns = [model._meta.get_field(c.removesuffix("_id")).column for c in columns]
    chunk: list = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == BATCH_SIZE:
            _flush(table, db_columns, chunk)
            chunk = []
    _flush(table, db_columns, chunk)


def _flush(table: str, columns: list[str], rows: list) -> None:
    if not rows:
        return
    if connection.vendor == "postgresql":
        copy_in(table=table, columns=columns, source=io.StringIO("".join(copy_line(row) + "\n" for row in rows)))
        return
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    marks = ", ".join(["%s"] * len(columns))
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {connection.ops.quote_name(table)} ({quoted}) VALUES ({marks})", rows)


def labelset_store(
    *,
    dataset: Dataset,
    name: str,
    view: SetView,
    details: Mapping[tuple, tuple] | None = None,
    operands: list[LabelSet] | None = None,
    file_order: bool = False,
    **fields,
) -> LabelSet:
    """Save `view` (ids are primary keys of `dataset`'s images and captions) as the next version of `name`.

    `details`: pair -> (score, choice), or (score, choice, sampling method), where known; `fields`: the
    other LabelSet columns (kind, campaign, method, ...). Pairs that touch none of the set's queries are
    dropped (they could never be scored) and counted in report["pairs_outside_queries"]. Pairs are stored in
    `view.pairs`' own order with `file_order` (an imported file's lines, so a released CxC file exports in
    its released order), else sorted.

    Takes SELECT ... FOR UPDATE on the Dataset row, so two sets of the same name made at once get
    versions n and n + 1; nothing else is locked. Not idempotent: each call is a new version.
    """
    name = check_name(name)
    details = details or {}
    kept = {key: positive for key, positive in view.pairs.items() if touches_queries(key, view.queries)}
    report = dict(fields.pop("report", {}) or {})
    report["pairs_outside_queries"] = len(view.pairs) - len(kept)
    view = SetView(queries=view.queries, pairs=kept)
    with transaction.atomic():
        Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        latest = LabelSet.objects.filter(dataset=dataset, name=name).order_by("-version").first()
        label_set = LabelSet(
            dataset=dataset,
            name=name,
            version=(latest.version + 1) if latest else 1,
            parent=latest,
            report=report,
            stats=summary(view),
            **fields,
        )
        try:
            label_set.full_clean()
        except ValidationError as error:
            raise ApplicationError("The label set is not valid.", extra={"fields": error.message_dict}) from None
        label_set.save()
        if operands:
            LabelSetOperand.objects.bulk_create(
                [
                    LabelSetOperand(result=label_set, operand=operand, position=position)
                    for position, operand in enumerate(operands)
                ]
            )
        _insert(
            LabelSetQuery,
            QUERY_COLUMNS,
            (_query_row(label_set.pk, d, q) for d in view.directions() for q in sorted(view.queries[d])),
        )
        _insert(
            LabelSetPair,
            PAIR_COLUMNS,
            (
                _pair_row(label_set.pk, key, positive, *details.get(key, (None, "")))
                for key, positive in (view.pairs.items() if file_order else sorted(view.pairs.items()))
            ),
        )
    return label_set
