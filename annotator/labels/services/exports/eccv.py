"""ECCV Caption JSON: `{"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}}`, as one file
or as the two files ECCV Caption released (a zip).

Which queries a map has: a pair asked in the image-to-caption stage (`Pair.direction == "i2t"`) or
proposed by an i2t ranking (a PairSource in i2t) makes its image an i2t query; likewise t2i makes its
caption a t2i query; a pair without a recorded stage (imported, hand-made) counts for both. The positives
of a query are all positive labelled pairs of that query in the campaign, whatever stage proposed them,
plus (on request) the dataset's original pairs. Queries without any positive are left out: R-Precision
and mAP@R cannot score them.

On PostgreSQL each query's list is aggregated in SQL and read with `COPY ... TO STDOUT` a row at a time.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import IO

from django.db import connection, transaction

from annotator.campaigns.models.campaign import Pair, PairSource
from annotator.core.bulk import copy_out, copy_unescape, rows_stream
from annotator.datasets.models.dataset import Caption, Image
from annotator.labels.eccv_ids import id_json
from annotator.labels.models.exports import ExportVariant
from annotator.labels.models.labels import Label
from annotator.labels.services.exports.rows import caption_kept, db_table

ECCV_SPLIT_NAMES = {"i2t": "eccv_image_to_caption.json", "t2i": "eccv_caption_to_image.json"}
# Companion files of the split export: each query's verified negatives (labelled, not positive), beside the
# positives-only files that keep the form ECCV Caption released.
ECCV_NEGATIVE_NAMES = {"i2t": "eccv_image_to_caption_negatives.json", "t2i": "eccv_caption_to_image_negatives.json"}
# The pseudo-variant that selects verified negatives in the ECCV maps (never a user's choice).
NEGATIVES = "verified_negatives"


def _positive_column(variant: str) -> str:
    """The label condition of the ECCV maps: positives (lenient or strict), or the verified negatives."""
    if variant == NEGATIVES:
        return "is_positive IS FALSE"
    return "is_positive_strict" if variant == ExportVariant.STRICT else "is_positive"


def _eccv_sql(*, campaign_id: int, method: str, direction: str, variant: str, merge_original: bool) -> tuple[str, list]:
    """SQL yielding (query pk, query source id, target source id) ordered by query, and its parameters.

    A removed caption is neither a query nor a positive (verified or added original).
    """
    query_col, target_col = ("image_id", "caption_id") if direction == "i2t" else ("caption_id", "image_id")
    query_model, target_model = (Image, Caption) if direction == "i2t" else (Caption, Image)
    queries = (
        f"SELECT q.{query_col} FROM {db_table(Pair)} q WHERE q.campaign_id = %s AND q.kind = 'image_caption' "
        f"AND (q.direction IN ('{direction}', '') OR EXISTS (SELECT 1 FROM {db_table(PairSource)} qs "
        f"WHERE qs.pair_id = q.id AND qs.direction = '{direction}'))"
    )
    verified = (
        f"SELECT p.{query_col} AS qpk, qm.source_id AS qsrc, tm.source_id AS tsrc "
        f"FROM {db_table(Label)} l JOIN {db_table(Pair)} p ON p.id = l.pair_id "
        f"JOIN {db_table(query_model)} qm ON qm.id = p.{query_col} "
        f"JOIN {db_table(target_model)} tm ON tm.id = p.{target_col} "
        f"WHERE p.campaign_id = %s AND p.kind = 'image_caption' AND l.method = %s AND l.{_positive_column(variant)} "
        f"AND p.{query_col} IN ({queries}) "
        f"AND {caption_kept(caption='p.caption_id', campaign='p.campaign_id')}"
    )
    if not merge_original or variant == NEGATIVES:
        return f"{verified} ORDER BY 1, 3", [campaign_id, method, campaign_id]
    if direction == "i2t":  # an image's original captions
        original = (
            f"SELECT i.id, i.source_id, c.source_id "
            f"FROM {db_table(Caption)} c JOIN {db_table(Image)} i ON i.id = c.image_id "
            f"WHERE i.id IN ({queries}) AND {caption_kept(caption='c.id', campaign='%s')}"
        )
    else:  # a caption's original image
        original = (
            f"SELECT c.id, c.source_id, i.source_id "
            f"FROM {db_table(Caption)} c JOIN {db_table(Image)} i ON i.id = c.image_id "
            f"WHERE c.id IN ({queries}) AND {caption_kept(caption='c.id', campaign='%s')}"
        )
    # verified (campaign, method, its queries' campaign), then original (its queries' campaign, the removals' campaign)
    return f"{verified} UNION {original} ORDER BY 1, 3", [campaign_id, method, campaign_id, campaign_id, campaign_id]


def _eccv_groups(*, campaign_id: int, method: str, direction: str, variant: str, merge_original: bool):
    """(query source id, [target source ids]) per query, in query order, one group in memory at a time."""
    sql, params = _eccv_sql(
        campaign_id=campaign_id, method=method, direction=direction, variant=variant, merge_original=merge_original
    )
    current_pk, current_src, targets = None, None, []
    for query_pk, query_src, target_src in rows_stream(sql, params):
        if query_pk != current_pk:
            if targets:
                yield current_src, targets
            current_pk, current_src, targets = query_pk, query_src, []
        targets.append(target_src)
    if targets:
        yield current_src, targets


def eccv_label_map(*, campaign_id: int, method: str, variant: str, merge_original: bool = False) -> dict:
    """The ECCV map in memory, `{"i2t": {id: [ids]}, "t2i": {...}}` with string ids (for evaluation)."""
    options = {"campaign_id": campaign_id, "method": method, "variant": variant, "merge_original": merge_original}
    with transaction.atomic():
        return {
            direction: {
                str(key): [str(t) for t in targets] for key, targets in _eccv_groups(direction=direction, **options)
            }
            for direction in ("i2t", "t2i")
        }


class _EccvCopySink:
    """Receives `COPY (one row per query: key, its ids as JSON) TO STDOUT` a row per write() and writes
    `"key": [ids]` entries as they arrive: the rows never gather in memory."""

    def __init__(self, out: IO[str]):
        self.out = out
        self.count = 0

    def write(self, data) -> int:
        line = data.decode("utf-8") if isinstance(data, (bytes, bytearray, memoryview)) else data
        key, targets = line.rstrip("\n").split("\t")
        self.out.write(("," if self.count else "") + copy_unescape(key) + ": [" + copy_unescape(targets) + "]")
        self.count += 1
        return len(data)


def _eccv_map_postgres(
    out: IO[str], *, campaign_id: int, method: str, direction: str, variant: str, merge_original: bool
) -> int:
    """PostgreSQL: each query's list is aggregated in SQL and streamed with COPY, the fastest way out.

    Same content and order as the portable path: queries in primary-key order, ids sorted, integer-looking
    ids as JSON integers.
    """
    sql, params = _eccv_sql(
        campaign_id=campaign_id, method=method, direction=direction, variant=variant, merge_original=merge_original
    )
    inner = sql.rsplit(" ORDER BY ", 1)[0]
    as_json = "CASE WHEN x.tsrc ~ '^(-?[1-9][0-9]{0,17}|0)$' THEN x.tsrc ELSE to_json(x.tsrc)::text END"
    aggregated = (
        f"SELECT to_json(x.qsrc::text)::text, string_agg({as_json}, ', ' ORDER BY x.tsrc) "
        f"FROM ({inner}) x(qpk, qsrc, tsrc) GROUP BY x.qpk, x.qsrc ORDER BY x.qpk"
    )
    sink = _EccvCopySink(out)
    with connection.cursor() as cursor:
        # The grouping sorts the positives; enough memory keeps that sort off the disk (this transaction only).
        cursor.execute("SET LOCAL work_mem = '64MB'")
    copy_out(sql=aggregated, params=params, sink=sink)
    return sink.count


def _write_eccv_map(out: IO[str], *, direction: str, **options) -> int:
    """Write `{"id": [ids], ...}` for one direction; returns the number of keys."""
    out.write("{")
    if connection.vendor == "postgresql":
        count = _eccv_map_postgres(out, direction=direction, **options)
    else:
        count = 0
        for key, targets in _eccv_groups(direction=direction, **options):
            out.write(("," if count else "") + json.dumps(str(key)) + ": [" + ", ".join(map(id_json, targets)) + "]")
            count += 1
    out.write("}")
    return count


def write_eccv_json(*, out: IO[str], campaign_id: int, method: str, variant: str, merge_original: bool) -> int:
    """`{"i2t": {...}, "t2i": {...}, "verified_negatives": {"i2t": {...}, "t2i": {...}}}` into a text
    stream: the positives in ECCV Caption's form, the crowd's verified negatives in a field beside them
    (a pair not listed in either was not judged). Returns the number of positive query keys written."""
    options = {"campaign_id": campaign_id, "method": method, "variant": variant, "merge_original": merge_original}
    out.write('{"i2t": ')
    keys = _write_eccv_map(out, direction="i2t", **options)
    out.write(', "t2i": ')
    keys += _write_eccv_map(out, direction="t2i", **options)
    negatives = {**options, "variant": NEGATIVES, "merge_original": False}
    out.write(', "verified_negatives": {"i2t": ')
    _write_eccv_map(out, direction="i2t", **negatives)
    out.write(', "t2i": ')
    _write_eccv_map(out, direction="t2i", **negatives)
    out.write("}}\n")
    return keys


def write_eccv_split(*, out: IO[bytes], campaign_id: int, method: str, variant: str, merge_original: bool) -> int:
    """A zip of the two files ECCV Caption released (image_to_caption, caption_to_image), and two companion
    files with each query's verified negatives (ECCV_NEGATIVE_NAMES). Returns the positive query keys."""
    options = {"campaign_id": campaign_id, "method": method, "variant": variant, "merge_original": merge_original}
    negatives = {**options, "variant": NEGATIVES, "merge_original": False}
    keys = 0
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for names, chosen in ((ECCV_SPLIT_NAMES, options), (ECCV_NEGATIVE_NAMES, negatives)):
            for direction, name in names.items():
                with archive.open(name, "w", force_zip64=True) as member:
                    text = io.TextIOWrapper(member, encoding="utf-8", newline="")
                    written = _write_eccv_map(text, direction=direction, **chosen)
                    keys += written if chosen is options else 0
                    text.write("\n")
                    text.flush()
                    text.detach()
    return keys
