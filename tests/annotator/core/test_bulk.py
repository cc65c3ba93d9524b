"""annotator.core.bulk on whichever database the suite runs on: COPY on PostgreSQL, the bulk_create and encoding
fallback on SQLite. The values that break a naive COPY (tabs, line breaks, backslashes, NULL, \\N as text,
non-ASCII) go in and come out unchanged."""

import datetime
import threading

import numpy as np
import pytest
from django.db import connection, transaction

from annotator.core import bulk
from annotator.models import Caption, Dataset, Image
from tests.factories import ImageFactory

pytestmark = pytest.mark.django_db

TRICKY = [
    "plain",
    "a\ttab",
    "two\nlines",
    "carriage\rreturn",
    "back\\slash",
    "\\N",  # the text of NULL, as text
    "\\t not a tab",
    "ünïcødé 画像 🚲",
    "",
]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "\\N"),
        (True, "t"),
        (False, "f"),
        (7, "7"),
        (0.1, "0.1"),
        ("a\tb\nc\rd\\e", "a\\tb\\nc\\rd\\\\e"),
        ({"k": "v\t"}, '{"k": "v\\\\t"}'),
        (["x"], '["x"]'),
        (datetime.date(2024, 2, 29), "2024-02-29"),
    ],
)
def test_a_value_is_written_in_copy_text_format(value, text):
    assert bulk.copy_text(value) == text


@pytest.mark.parametrize("value", TRICKY)
def test_copy_text_and_copy_unescape_round_trip(value):
    encoded = bulk.copy_text(value)
    assert "\t" not in encoded and "\n" not in encoded and "\r" not in encoded
    assert bulk.copy_unescape(encoded) == value


@pytest.mark.parametrize("leading", [(7, "t2i"), ("100%\tdone", None), ()])
def test_columns_of_numbers_give_the_same_text_as_one_line_per_row(leading):
    queries, scores = [1, 2, 3], [0.5, 1 / 3, -2.0]
    rows = [(*leading, q, s) for q, s in zip(queries, scores, strict=True)]
    expected = "".join(bulk.copy_line(row) + "\n" for row in rows)
    assert bulk.copy_text_columns(leading=leading, columns=(queries, scores)) == expected
    assert bulk.copy_text_columns(leading=leading, columns=(np.array(queries), np.array(scores))) == expected


def _image():
    return ImageFactory()


def test_rows_insert_returns_the_new_ids_in_order_and_keeps_every_text_unchanged():
    image = _image()
    rows = [
        {"dataset_id": image.dataset_id, "image_id": image.pk, "source_id": f"c{i}", "text": text}
        for i, text in enumerate(TRICKY)
    ]
    with transaction.atomic():
        ids = bulk.rows_insert(Caption, rows)
    assert len(ids) == len(TRICKY) and len(set(ids)) == len(ids)
    stored = dict(Caption.objects.filter(pk__in=ids).values_list("pk", "text"))
    assert [stored[pk] for pk in ids] == TRICKY
    assert [Caption.objects.get(pk=pk).source_id for pk in ids] == [f"c{i}" for i in range(len(TRICKY))]


def test_rows_insert_fills_defaults_json_and_automatic_dates():
    with transaction.atomic():
        (pk,) = bulk.rows_insert(Dataset, [{"name": "bulk\tname", "report": {"note": "tab\there", "n": [1, None]}}])
    dataset = Dataset.objects.get(pk=pk)
    assert dataset.name == "bulk\tname"
    assert dataset.report == {"note": "tab\there", "n": [1, None]}
    assert dataset.status == Dataset._meta.get_field("status").default
    assert dataset.images_total == 0 and dataset.created_at is not None and dataset.owner_id is None
    assert bulk.rows_insert(Dataset, []) == []


def test_rows_insert_without_ids_writes_the_rows_and_returns_nothing():
    image = _image()
    rows = [{"dataset_id": image.dataset_id, "image_id": image.pk, "source_id": "x", "text": "t"}]
    with transaction.atomic():
        assert bulk.rows_insert(Caption, rows, ids=False) == []
    assert Caption.objects.filter(source_id="x").count() == 1


def test_objects_create_writes_every_batch():
    dataset = _image().dataset
    objects = [
        Image(dataset=dataset, source_id=f"i{i}", file_name="f", file="f", content_hash="h", width=1, height=1)
        for i in range(5)
    ]
    bulk.objects_create(Image, objects, batch_size=2)
    assert Image.objects.filter(dataset=dataset, source_id__startswith="i").count() == 5


def _captions_sql() -> tuple[str, list]:
    table = connection.ops.quote_name(Caption._meta.db_table)
    return f"SELECT id, text, NULL FROM {table} ORDER BY id", []


class _Sink:
    def __init__(self):
        self.text = ""

    def write(self, data) -> int:
        self.text += data.decode() if isinstance(data, bytes | bytearray | memoryview) else data
        return len(data)


def test_copy_out_writes_rows_that_decode_to_the_stored_values():
    image = _image()
    for i, text in enumerate(TRICKY):
        Caption.objects.create(dataset=image.dataset, image=image, source_id=f"c{i}", text=text)
    sink = _Sink()
    sql, params = _captions_sql()
    with transaction.atomic():
        count = bulk.copy_out(sql=sql, params=params, sink=sink)
    lines = sink.text.split("\n")
    assert lines[-1] == "" and count == len(TRICKY) == len(lines) - 1
    decoded = [line.split("\t") for line in lines[:-1]]
    assert [bulk.copy_unescape(text) for _pk, text, _null in decoded] == TRICKY
    assert {null for _pk, _text, null in decoded} == {"\\N"}


def test_rows_stream_yields_every_row():
    image = _image()
    Caption.objects.bulk_create(
        [Caption(dataset=image.dataset, image=image, source_id=f"s{i}", text="t") for i in range(12)]
    )
    sql, params = _captions_sql()
    with transaction.atomic():
        assert len(list(bulk.rows_stream(sql, params))) == 12


def _consume(pipe: bulk.CopyPipe, result: dict) -> None:
    try:
        result["data"] = pipe.reader().read()
    except OSError as error:
        result["error"] = error


def test_a_copy_pipe_hands_every_byte_to_the_reader_in_order():
    pipe, result = bulk.CopyPipe(max_chunks=2), {}
    reader = threading.Thread(target=_consume, args=(pipe, result))
    reader.start()
    lines = [bulk.copy_line((i, TRICKY[i % len(TRICKY)])) + "\n" for i in range(20_000)]
    for line in lines:
        pipe.write(line)
    pipe.flush()
    pipe.close(complete=True)
    reader.join(timeout=30)
    assert result["data"].decode() == "".join(lines)


def test_an_incomplete_copy_pipe_makes_the_reader_fail():
    pipe, result = bulk.CopyPipe(), {}
    reader = threading.Thread(target=_consume, args=(pipe, result))
    reader.start()
    pipe.write("1\tpartial\n")
    pipe.flush()
    pipe.close(complete=False)
    reader.join(timeout=30)
    assert isinstance(result.get("error"), OSError) and "data" not in result


def test_a_failed_consumer_stops_the_producer_instead_of_blocking_it():
    pipe = bulk.CopyPipe(max_chunks=1)
    pipe.write("x" * bulk.COPY_BUFFER)  # one full chunk fills the queue
    pipe.fail()
    with pytest.raises(OSError):
        pipe.write("y" * bulk.COPY_BUFFER)


def _read_all(pipe: bulk.CopyPipe) -> bytes:
    return pipe.reader().read()


def _write_lines(count: int):
    def produce(pipe: bulk.CopyPipe) -> int:
        for i in range(count):
            pipe.write(bulk.copy_line((i, TRICKY[i % len(TRICKY)])) + "\n")
        return count

    return produce


def test_copy_across_hands_every_row_to_the_consumer_and_returns_both_sides():
    rows, data = bulk.copy_across(produce=_write_lines(5_000), consume=_read_all)
    assert rows == 5_000
    assert data.decode() == "".join(bulk.copy_line((i, TRICKY[i % len(TRICKY)])) + "\n" for i in range(5_000))


def test_copy_across_raises_the_producers_error_and_the_consumer_sees_an_incomplete_copy():
    seen = {}

    def produce(pipe):
        pipe.write("1\tpartial\n")
        pipe.flush()
        raise ValueError("reading the rows failed")

    def consume(pipe):
        try:
            return pipe.reader().read()
        except OSError as error:
            seen["error"] = error
            raise

    with pytest.raises(ValueError, match="reading the rows failed"):
        bulk.copy_across(produce=produce, consume=consume)
    assert isinstance(seen["error"], OSError)


def test_copy_across_raises_the_consumers_error_and_stops_the_producer():
    def consume(pipe):
        pipe.reader().read(10)
        raise LookupError("the target refused the rows")

    with pytest.raises(LookupError, match="refused"):  # not the producer's OSError, nor a hang on a full queue
        bulk.copy_across(produce=_write_lines(200_000), consume=consume)
