"""Crisscrossed Captions' three CSV files, written in CxC's own columns and id spellings.

`sits_test.csv` is `caption,image,agg_score,sampling_method`, `sts_test.csv` `caption1,caption2,...` and
`sis_test.csv` `image1,image2,...`; ids as CxC spells them (annotator.labels.selectors.cxc_ids) and scores as
Python writes a float (`2.2`, `5.0`), so a released file imported and exported again reads back the same.
Shared by the campaign export (crowd ratings) and the label-set export (an imported or derived set).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO

from annotator.core.csvsafe import csv_writer

KIND_HEADERS = {
    "image_caption": ["caption", "image", "agg_score", "sampling_method"],
    "caption_caption": ["caption1", "caption2", "agg_score", "sampling_method"],
    "image_image": ["image1", "image2", "agg_score", "sampling_method"],
}
FORMAT_KINDS = {"cxc_sits": "image_caption", "cxc_sts": "caption_caption", "cxc_sis": "image_image"}
# What CxC calls a pair of each kind when nothing more is known of how it was chosen.
ORIGINAL_METHOD = {"image_caption": "c2i_original", "caption_caption": "c2c_cocaption"}
PREFIX = {"image_caption": "c2i", "caption_caption": "c2c", "image_image": "i2i"}


def cxc_score(score: float | None) -> str:
    return "" if score is None else repr(round(float(score), 2))


def cxc_members(*, kind: str, image, caption, other_image, other_caption, ids: dict) -> tuple[str, str]:
    """The two ids of a pair in CxC's column order (caption before image for SITS)."""
    if kind == "caption_caption":
        return ids["caption"][caption], ids["caption"][other_caption]
    if kind == "image_image":
        return ids["image"][image], ids["image"][other_image]
    return ids["caption"][caption], ids["image"][image]


def cxc_rows_write(*, out: IO[str], kind: str, rows: Iterable[tuple[str, str, str, str]]) -> int:
    """Write the header of `kind` and `rows` of (first id, second id, score text, method); returns the count."""
    writer = csv_writer(out, lineterminator="\n")
    writer.writerow(KIND_HEADERS[kind])
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count


def cxc_chunks(*, kind: str, rows: Iterable[tuple[str, str, str, str]], every: int = 5000) -> Iterator[str]:
    """The same file as text chunks, for a streamed download."""
    import io

    buffer = io.StringIO()
    writer = csv_writer(buffer, lineterminator="\n")
    writer.writerow(KIND_HEADERS[kind])
    for count, row in enumerate(rows, start=1):
        writer.writerow(row)
        if count % every == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
