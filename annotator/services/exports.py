"""Exports of a campaign's verified labels: ECCV Caption JSON, JSONL, Crisscrossed CSV, a Postgres table.

Every writer streams, so memory does not grow with the number of labels: rows come from server-side
cursors (`connection.chunked_cursor()`, a named cursor on PostgreSQL) in chunks and are written as they
arrive, grouped in SQL order. On PostgreSQL the ECCV JSON lists are aggregated in SQL and read with
`COPY ... TO STDOUT` a row at a time, and the Postgres export pipes COPY to COPY. Files go to a temporary
file first and then to the default storage (local disk or S3), which uploads from the file without
reading it into memory.

Which queries an ECCV map has: a pair asked in the image-to-caption stage (`Pair.direction == "i2t"`) or
proposed by an i2t ranking (a PairSource in i2t) makes its image an i2t query; likewise t2i makes its
caption a t2i query; a pair without a recorded stage (imported, hand-made) counts for both. The positives
of a query are all positive labelled pairs of that query in the campaign, whatever stage proposed them,
plus (on request) the dataset's original pairs. Queries without any positive are left out: R-Precision
and mAP@R cannot score them.

Removed captions (post-processing, ECCV Caption App. C): a caption whose CleanupProposal (of either kind) the
requester confirmed is left out of every export, with every pair it is in (as `caption` or as
`other_caption`): it is neither a query, nor a positive, nor an added original, nor a row. Proposed and
dismissed proposals change nothing. The filter is an anti-join in each export's SQL (`_caption_kept`).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import queue
import re
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from typing import IO

from django.core.files import File
from django.db import connection, transaction
from django.utils import timezone

from annotator.errors import ApplicationError
from annotator.models import (
    EXPORT_TRANSITIONS,
    Answer,
    Assignment,
    Campaign,
    CampaignDirection,
    Caption,
    CleanupProposal,
    CleanupStatus,
    ExportFormat,
    ExportJob,
    ExportStatus,
    ExportVariant,
    Hit,
    HitItem,
    Image,
    Label,
    MachineAnnotator,
    Pair,
    PairSource,
    RankingRun,
    Scale,
    Worker,
)
from annotator.models.state import check_transition
from annotator.queue import enqueue_on_commit
from annotator.selectors.research import label_method_resolve

logger = logging.getLogger(__name__)
CHUNK_ROWS = 5_000  # rows per fetch from a server-side cursor: bounds the memory of a stream
EXPORT_TASK = "workers.tasks.exports.export_run"
FILE_SUFFIX = {
    ExportFormat.ECCV_JSON: "json",
    ExportFormat.ECCV_SPLIT: "zip",
    ExportFormat.JSONL: "jsonl",
    ExportFormat.CXC_CSV: "csv",
}
ECCV_SPLIT_NAMES = {"i2t": "eccv_image_to_caption.json", "t2i": "eccv_caption_to_image.json"}
_INTEGER = re.compile(r"-?[1-9][0-9]{0,17}|0")


def _t(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _stream(sql: str, params: list) -> Iterator[tuple]:
    """Rows of `sql` in chunks from a server-side cursor (PostgreSQL) or a plain cursor (SQLite)."""
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while True:
            rows = cursor.fetchmany(CHUNK_ROWS)
            if not rows:
                return
            yield from rows


def _id_json(source_id: str) -> str:
    """A source id as JSON: an integer when it is one (COCO ids, as ECCV Caption releases them), else a string."""
    return source_id if _INTEGER.fullmatch(source_id) else json.dumps(source_id)


def _positive_column(variant: str) -> str:
    return "is_positive_strict" if variant == ExportVariant.STRICT else "is_positive"


def _caption_kept(*, caption: str, campaign: str) -> str:
    """SQL condition: the caption in column `caption` (NULL passes) was not removed from campaign `campaign`
    (a column, or %s), i.e. no confirmed CleanupProposal of that campaign names it. The proposals are few, so
    this is a small hashed anti-join and the export stays one streamed query."""
    return (
        f"NOT EXISTS (SELECT 1 FROM {_t(CleanupProposal)} r WHERE r.campaign_id = {campaign} "
        f"AND r.caption_id = {caption} AND r.status = '{CleanupStatus.CONFIRMED}')"
    )


def _pair_kept(alias: str) -> str:
    """SQL condition: pair `alias` holds no removed caption, on either side (caption-caption pairs have two)."""
    return (
        f"{_caption_kept(caption=f'{alias}.caption_id', campaign=f'{alias}.campaign_id')} "
        f"AND {_caption_kept(caption=f'{alias}.other_caption_id', campaign=f'{alias}.campaign_id')}"
    )


def _eccv_sql(*, campaign_id: int, method: str, direction: str, variant: str, merge_original: bool) -> tuple[str, list]:
    """SQL yielding (query pk, query source id, target source id) ordered by query, and its parameters.

    A removed caption is neither a query nor a positive (verified or added original).
    """
    query_col, target_col = ("image_id", "caption_id") if direction == "i2t" else ("caption_id", "image_id")
    query_model, target_model = (Image, Caption) if direction == "i2t" else (Caption, Image)
    queries = (
        f"SELECT q.{query_col} FROM {_t(Pair)} q WHERE q.campaign_id = %s AND q.kind = 'image_caption' "
        f"AND (q.direction IN ('{direction}', '') OR EXISTS (SELECT 1 FROM {_t(PairSource)} qs "
        f"WHERE qs.pair_id = q.id AND qs.direction = '{direction}'))"
    )
    verified = (
        f"SELECT p.{query_col} AS qpk, qm.source_id AS qsrc, tm.source_id AS tsrc "
        f"FROM {_t(Label)} l JOIN {_t(Pair)} p ON p.id = l.pair_id "
        f"JOIN {_t(query_model)} qm ON qm.id = p.{query_col} JOIN {_t(target_model)} tm ON tm.id = p.{target_col} "
        f"WHERE p.campaign_id = %s AND p.kind = 'image_caption' AND l.method = %s AND l.{_positive_column(variant)} "
        f"AND p.{query_col} IN ({queries}) "
        f"AND {_caption_kept(caption='p.caption_id', campaign='p.campaign_id')}"
    )
    if not merge_original:
        return f"{verified} ORDER BY 1, 3", [campaign_id, method, campaign_id]
    if direction == "i2t":  # an image's original captions
        original = (
            f"SELECT i.id, i.source_id, c.source_id FROM {_t(Caption)} c JOIN {_t(Image)} i ON i.id = c.image_id "
            f"WHERE i.id IN ({queries}) AND {_caption_kept(caption='c.id', campaign='%s')}"
        )
    else:  # a caption's original image
        original = (
            f"SELECT c.id, c.source_id, i.source_id FROM {_t(Caption)} c JOIN {_t(Image)} i ON i.id = c.image_id "
            f"WHERE c.id IN ({queries}) AND {_caption_kept(caption='c.id', campaign='%s')}"
        )
    # verified (campaign, method, its queries' campaign), then original (its queries' campaign, the removals' campaign)
    return f"{verified} UNION {original} ORDER BY 1, 3", [campaign_id, method, campaign_id, campaign_id, campaign_id]


def _eccv_groups(*, campaign_id: int, method: str, direction: str, variant: str, merge_original: bool):
    """(query source id, [target source ids]) per query, in query order, one group in memory at a time."""
    sql, params = _eccv_sql(
        campaign_id=campaign_id, method=method, direction=direction, variant=variant, merge_original=merge_original
    )
    current_pk, current_src, targets = None, None, []
    for query_pk, query_src, target_src in _stream(sql, params):
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


_COPY_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_COPY_ESCAPE = re.compile(r"\\(.)")


def _copy_unescape(field: str) -> str:
    """A field of COPY's text format back to its value (COPY TO only emits these backslash sequences)."""
    if "\\" not in field:
        return field
    return _COPY_ESCAPE.sub(lambda match: _COPY_ESCAPES.get(match.group(1), match.group(1)), field)


class _EccvCopySink:
    """Receives `COPY (one row per query: key, its ids as JSON) TO STDOUT` a row per write() and writes
    `"key": [ids]` entries as they arrive: the rows never gather in memory."""

    def __init__(self, out: IO[str]):
        self.out = out
        self.count = 0

    def write(self, data) -> int:
        line = data.decode("utf-8") if isinstance(data, (bytes, bytearray, memoryview)) else data
        key, targets = line.rstrip("\n").split("\t")
        self.out.write(("," if self.count else "") + _copy_unescape(key) + ": [" + _copy_unescape(targets) + "]")
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
        select = cursor.cursor.mogrify(aggregated, params).decode()
        cursor.cursor.copy_expert(f"COPY ({select}) TO STDOUT", sink, size=1 << 18)
    return sink.count


def _write_eccv_map(out: IO[str], *, direction: str, **options) -> int:
    """Write `{"id": [ids], ...}` for one direction; returns the number of keys."""
    out.write("{")
    if connection.vendor == "postgresql":
        count = _eccv_map_postgres(out, direction=direction, **options)
    else:
        count = 0
        for key, targets in _eccv_groups(direction=direction, **options):
            out.write(("," if count else "") + json.dumps(str(key)) + ": [" + ", ".join(map(_id_json, targets)) + "]")
            count += 1
    out.write("}")
    return count


def write_eccv_json(*, out: IO[str], campaign_id: int, method: str, variant: str, merge_original: bool) -> int:
    """`{"i2t": {...}, "t2i": {...}}` into a text stream; returns the number of query keys written."""
    options = {"campaign_id": campaign_id, "method": method, "variant": variant, "merge_original": merge_original}
    out.write('{"i2t": ')
    keys = _write_eccv_map(out, direction="i2t", **options)
    out.write(', "t2i": ')
    keys += _write_eccv_map(out, direction="t2i", **options)
    out.write("}\n")
    return keys


def write_eccv_split(*, out: IO[bytes], campaign_id: int, method: str, variant: str, merge_original: bool) -> int:
    """A zip of the two files ECCV Caption released (image_to_caption, caption_to_image)."""
    options = {"campaign_id": campaign_id, "method": method, "variant": variant, "merge_original": merge_original}
    keys = 0
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for direction, name in ECCV_SPLIT_NAMES.items():
            with archive.open(name, "w", force_zip64=True) as member:
                text = io.TextIOWrapper(member, encoding="utf-8", newline="")
                keys += _write_eccv_map(text, direction=direction, **options)
                text.write("\n")
                text.flush()
                text.detach()
    return keys


def _pair_sql() -> str:
    return (
        "SELECT p.id, p.kind, i.source_id, c.source_id, oi.source_id, oc.source_id, p.is_original, p.direction, "
        "l.choice, l.score, l.is_positive, l.is_positive_strict, l.confidence, l.answer_count, l.method "
        f"FROM {_t(Label)} l JOIN {_t(Pair)} p ON p.id = l.pair_id "
        f"LEFT JOIN {_t(Image)} i ON i.id = p.image_id LEFT JOIN {_t(Caption)} c ON c.id = p.caption_id "
        f"LEFT JOIN {_t(Image)} oi ON oi.id = p.other_image_id "
        f"LEFT JOIN {_t(Caption)} oc ON oc.id = p.other_caption_id "
        f"WHERE p.campaign_id = %s AND l.method = %s AND {_pair_kept('p')} ORDER BY p.id"
    )


def _sources_stream(campaign_id: int) -> Iterator[tuple]:
    sql = (
        "SELECT s.pair_id, a.name, a.kind, s.run_id, s.direction, s.rank, s.score "
        f"FROM {_t(PairSource)} s JOIN {_t(Pair)} p ON p.id = s.pair_id "
        f"JOIN {_t(RankingRun)} r ON r.id = s.run_id JOIN {_t(MachineAnnotator)} a ON a.id = r.annotator_id "
        "WHERE p.campaign_id = %s ORDER BY s.pair_id, s.rank, s.id"
    )
    return _stream(sql, [campaign_id])


def _answers_stream(campaign_id: int) -> Iterator[tuple]:
    """Answers of approved assignments only, by pair."""
    sql = (
        "SELECT hi.pair_id, w.pseudonym, an.choice, an.score, an.shortcomings, an.wrong_aspects, an.comment, "
        "an.seconds_spent, asg.id "
        f"FROM {_t(Answer)} an JOIN {_t(Assignment)} asg ON asg.id = an.assignment_id "
        f"JOIN {_t(Worker)} w ON w.id = asg.worker_id JOIN {_t(HitItem)} hi ON hi.id = an.item_id "
        f"JOIN {_t(Hit)} h ON h.id = hi.hit_id "
        "WHERE h.campaign_id = %s AND asg.status = 'approved' ORDER BY hi.pair_id, asg.id"
    )
    return _stream(sql, [campaign_id])


class _Follower:
    """Merge-join helper: the rows of a pair-ordered stream that belong to the pair being written."""

    def __init__(self, rows: Iterator[tuple]):
        self._rows = rows
        self._head = next(rows, None)

    def take(self, pair_id: int) -> list[tuple]:
        taken = []
        while self._head is not None and self._head[0] <= pair_id:
            if self._head[0] == pair_id:
                taken.append(self._head)
            self._head = next(self._rows, None)
        return taken


def _json_list(value) -> list:
    if value is None or value == "":
        return []
    return json.loads(value) if isinstance(value, str) else list(value)


def write_jsonl(*, out: IO[str], campaign_id: int, method: str, variant: str = "", merge_original: bool = False) -> int:
    """One line per labelled pair: ids, provenance, label, confidence and every approved answer."""
    sources = _Follower(_sources_stream(campaign_id))
    answers = _Follower(_answers_stream(campaign_id))
    count = 0
    for row in _stream(_pair_sql(), [campaign_id, method]):
        (
            pair_id,
            kind,
            image,
            caption,
            other_image,
            other_caption,
            is_original,
            direction,
            choice,
            score,
            is_positive,
            is_positive_strict,
            confidence,
            answer_count,
            label_method,
        ) = row
        record = {
            "pair_id": pair_id,
            "kind": kind,
            "image": image,
            "caption": caption,
            "is_original": bool(is_original),
            "stage": direction,
            "provenance": [
                {
                    "annotator": name,
                    "annotator_kind": annotator_kind,
                    "run": run,
                    "direction": src_direction,
                    "rank": rank,
                    "score": src_score,
                }
                for _, name, annotator_kind, run, src_direction, rank, src_score in sources.take(pair_id)
            ],
            "label": {
                "method": label_method,
                "choice": choice or None,
                "score": score,
                "is_positive": bool(is_positive),
                "is_positive_strict": bool(is_positive_strict),
                "confidence": confidence,
                "answer_count": answer_count,
            },
            "answers": [
                {
                    "worker": pseudonym,
                    "choice": a_choice or None,
                    "score": a_score,
                    "shortcomings": _json_list(shortcomings),
                    "wrong_aspects": _json_list(wrong_aspects),
                    "comment": comment,
                    "seconds_spent": seconds,
                }
                for _, pseudonym, a_choice, a_score, shortcomings, wrong_aspects, comment, seconds, _ in answers.take(
                    pair_id
                )
            ],
        }
        if other_image is not None:
            record["other_image"] = other_image
        if other_caption is not None:
            record["other_caption"] = other_caption
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def _cxc_header(campaign_direction: str) -> list[str]:
    if campaign_direction == CampaignDirection.T2T:
        return ["caption1", "caption2", "agg_score", "sampling_method"]
    if campaign_direction == CampaignDirection.I2I:
        return ["image1", "image2", "agg_score", "sampling_method"]
    return ["caption", "image", "agg_score", "sampling_method"]


def write_cxc_csv(
    *, out: IO[str], campaign_id: int, method: str, variant: str = "", merge_original: bool = False
) -> int:
    """Crisscrossed Captions CSV: the pair's two ids, the aggregated 0-5 score, how the pair was sampled.

    sampling_method is `original` for a dataset pair, else `<stage>:<annotator>+<annotator>` (the models
    that proposed it).
    """
    campaign_direction = Campaign.objects.values_list("direction", flat=True).get(pk=campaign_id)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_cxc_header(campaign_direction))
    sources = _Follower(_sources_stream(campaign_id))
    count = 0
    for row in _stream(_pair_sql(), [campaign_id, method]):
        pair_id, kind, image, caption, other_image, other_caption, is_original, direction = row[:8]
        score = row[9]
        annotators = sorted({source[1] for source in sources.take(pair_id)})
        if is_original:
            sampling = "original"
        else:
            sampling = f"{direction or 'pool'}:{'+'.join(annotators) or 'none'}"
        if kind == "caption_caption":
            first, second = caption, other_caption
        elif kind == "image_image":
            first, second = image, other_image
        else:
            first, second = caption, image
        writer.writerow([first, second, "" if score is None else f"{score:.4g}", sampling])
        count += 1
    return count


WRITERS = {
    ExportFormat.ECCV_JSON: (write_eccv_json, "text"),
    ExportFormat.ECCV_SPLIT: (write_eccv_split, "binary"),
    ExportFormat.JSONL: (write_jsonl, "text"),
    ExportFormat.CXC_CSV: (write_cxc_csv, "text"),
}


def _tune_reads() -> None:
    """PostgreSQL, this transaction only: no JIT. An export's queries are planned as expensive, so JIT
    would compile them (seconds of fixed cost) for plans that are a few hash joins and a sort."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = off")


def labels_write(
    *, out: IO[bytes], campaign_id: int, format: str, method: str, variant: str, merge_original: bool
) -> int:
    """Write one export into the binary stream `out`; returns rows (lines or query keys) written.

    Reads inside one transaction so the parts of a file (i2t, t2i, answers) come from one moment.
    """
    writer, mode = WRITERS[format]
    options = {"campaign_id": campaign_id, "method": method, "variant": variant, "merge_original": merge_original}
    with transaction.atomic():
        _tune_reads()
        if mode == "binary":
            return writer(out=out, **options)
        text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=False)
        try:
            return writer(out=text, **options)
        finally:
            text.flush()
            text.detach()


def _check_options(*, campaign: Campaign, format: str, variant: str) -> None:
    if format not in ExportFormat.values:
        raise ApplicationError(f"Unknown export format {format!r}.", extra={"allowed": list(ExportFormat.values)})
    if variant not in ExportVariant.values:
        raise ApplicationError(f"Unknown variant {variant!r}.", extra={"allowed": list(ExportVariant.values)})
    if format == ExportFormat.CXC_CSV and campaign.scale != Scale.SIMILARITY:
        raise ApplicationError("The Crisscrossed CSV is for similarity (0-5) campaigns; this one uses four choices.")


def export_create(
    *,
    campaign: Campaign,
    user,
    format: str,
    variant: str = ExportVariant.LENIENT,
    method: str | None = None,
    merge_original: bool = False,
) -> ExportJob:
    """Record an export job and enqueue its task after commit. The caller checked that `user` may read the campaign.

    Not idempotent by design: each call is a new file (labels change as answers are approved).
    """
    _check_options(campaign=campaign, format=format, variant=variant)
    method = label_method_resolve(campaign=campaign, method=method)
    with transaction.atomic():
        job = ExportJob(
            campaign=campaign,
            created_by=user,
            format=format,
            variant=variant,
            method=method,
            merge_original=merge_original,
        )
        job.full_clean()
        job.save()
        enqueue_on_commit(EXPORT_TASK, job.pk)
    return job


def export_run(*, export_id: int) -> ExportJob:
    """Write the export's file to storage. Idempotent: a succeeded job is returned untouched.

    Takes SELECT ... FOR UPDATE on the ExportJob row only to move its status; the (long) write happens
    outside that lock. A redelivered task for a job left running starts the file again from scratch.
    """
    with transaction.atomic():
        job = ExportJob.objects.select_for_update().get(pk=export_id)
        if job.status in (ExportStatus.SUCCEEDED, ExportStatus.FAILED):
            return job  # done, or failed for a reason a new export has to address
        check_transition(transitions=EXPORT_TRANSITIONS, current=job.status, target=ExportStatus.RUNNING, what="export")
        job.status = ExportStatus.RUNNING
        job.started_at = timezone.now()
        job.error = ""
        job.save(update_fields=["status", "started_at", "error"])
    try:
        with tempfile.TemporaryFile() as spool:
            rows = labels_write(
                out=spool,
                campaign_id=job.campaign_id,
                format=job.format,
                method=job.method,
                variant=job.variant,
                merge_original=job.merge_original,
            )
            size = spool.tell()
            spool.seek(0)
            suffix = FILE_SUFFIX[job.format]
            name = f"exports/campaign-{job.campaign_id}/export-{job.pk}-{job.format}-{job.variant}.{suffix}"
            job.file.save(name, File(spool), save=False)
    except Exception as error:  # recorded on the job for the person, logged for the operator
        logger.exception("Export %s failed", job.pk)
        job.status = ExportStatus.FAILED
        job.error = f"The export failed: {error}"[:2000]
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        return job
    job.status = ExportStatus.SUCCEEDED
    job.rows = rows
    job.size_bytes = size
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "rows", "size_bytes", "file", "finished_at"])
    return job


# --- PostgreSQL: COPY into a researcher's own database ---------------------------------------------------

PG_COLUMNS = [
    ("campaign_id", "bigint NOT NULL"),
    ("pair_id", "bigint NOT NULL"),
    ("method", "text NOT NULL"),
    ("kind", "text NOT NULL"),
    ("image_source_id", "text"),
    ("caption_source_id", "text"),
    ("other_image_source_id", "text"),
    ("other_caption_source_id", "text"),
    ("is_original", "boolean NOT NULL"),
    ("stage", "text NOT NULL"),
    ("choice", "text"),
    ("score", "double precision"),
    ("is_positive", "boolean NOT NULL"),
    ("is_positive_strict", "boolean NOT NULL"),
    ("confidence", "double precision NOT NULL"),
    ("answer_count", "integer NOT NULL"),
    ("label_updated_at", "timestamptz"),
]
PG_KEY = ("campaign_id", "pair_id", "method")
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?")


def _pg_select_sql() -> str:
    return (
        "SELECT p.campaign_id, p.id, l.method, p.kind, i.source_id, c.source_id, oi.source_id, oc.source_id, "
        "p.is_original, p.direction, NULLIF(l.choice, ''), l.score, l.is_positive, l.is_positive_strict, "
        "l.confidence, l.answer_count, l.updated_at "
        f"FROM {_t(Label)} l JOIN {_t(Pair)} p ON p.id = l.pair_id "
        f"LEFT JOIN {_t(Image)} i ON i.id = p.image_id LEFT JOIN {_t(Caption)} c ON c.id = p.caption_id "
        f"LEFT JOIN {_t(Image)} oi ON oi.id = p.other_image_id "
        f"LEFT JOIN {_t(Caption)} oc ON oc.id = p.other_caption_id "
        f"WHERE p.campaign_id = %s AND l.method = %s AND {_pair_kept('p')}"
    )


def _copy_text(value) -> str:
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    text = str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


_ABORT = b"\x00abort"  # sentinel object (compared by identity): the producer failed, roll the COPY back


class _ChunkReader(io.RawIOBase):
    """A file-like reader over byte chunks from a queue (None ends it), for COPY FROM STDIN."""

    def __init__(self, chunks: queue.Queue):
        self._chunks = chunks
        self._buffer = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._done and (size < 0 or len(self._buffer) < size):
            chunk = self._chunks.get()
            if chunk is None:
                self._done = True
                break
            if chunk is _ABORT:
                raise OSError("Reading the labels failed; nothing was written.")
            self._buffer += chunk
        if size < 0:
            data, self._buffer = self._buffer, b""
        else:
            data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


class _ChunkWriter:
    """A file-like writer that gathers what COPY TO STDOUT writes (a row per call) into ~256 KiB chunks for a
    bounded queue: memory stays at most the queue's 32 chunks, and the two threads hand over rarely."""

    CHUNK_BYTES = 1 << 18

    def __init__(self, chunks: queue.Queue, failed: threading.Event):
        self._chunks = chunks
        self._failed = failed
        self._pending = bytearray()

    def write(self, data) -> int:
        self._pending += data.encode() if isinstance(data, str) else data
        if len(self._pending) >= self.CHUNK_BYTES:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self._failed.is_set():
            raise OSError("The target database stopped reading.")
        if self._pending:
            self._chunks.put(bytes(self._pending))
            self._pending = bytearray()


def _produce_copy_rows(chunks: queue.Queue, failed: threading.Event, *, campaign_id: int, method: str) -> int:
    """Feed the label rows as COPY text into `chunks`; on PostgreSQL straight from COPY TO STDOUT."""
    writer = _ChunkWriter(chunks, failed)
    if connection.vendor == "postgresql":
        _tune_reads()
        with connection.cursor() as cursor:
            select = cursor.cursor.mogrify(_pg_select_sql(), [campaign_id, method]).decode()
            cursor.cursor.copy_expert(f"COPY ({select}) TO STDOUT", writer, size=1 << 18)
            writer.flush()
            return cursor.cursor.rowcount
    count, lines = 0, []
    for row in _stream(_pg_select_sql(), [campaign_id, method]):
        lines.append("\t".join(map(_copy_text, row)))
        count += 1
        if len(lines) >= 5000:
            writer.write("\n".join(lines) + "\n")
            lines = []
    if lines:
        writer.write("\n".join(lines) + "\n")
    writer.flush()
    return count


def labels_export_postgres(*, campaign: Campaign, method: str | None, dsn: str, table: str) -> dict:
    """Write the campaign's labels into `table` of the database at `dsn`, creating it if needed.

    The first export of a campaign's labels is a plain COPY into the table. Later ones COPY into a temporary
    table and upsert from it: an UPDATE of the rows whose values changed (unchanged rows are not rewritten),
    an INSERT of the new keys (campaign_id, pair_id, method) and a DELETE of this campaign's rows whose labels
    are gone or whose caption was removed since (a confirmed CleanupProposal), all in one transaction of the
    target: re-running updates rather than duplicates, and a failed
    run leaves the table as it was. Takes LOCK TABLE ... IN SHARE ROW EXCLUSIVE MODE on the target table
    (concurrent exports into one table run one after the other, and UPDATE-then-INSERT cannot race). Rows
    stream through a bounded queue between the two connections, so memory does not grow with the labels.
    """
    import psycopg2
    from psycopg2 import sql as pgsql

    if not _TABLE_NAME.fullmatch(table):
        raise ApplicationError("A table name is letters, digits and underscores, optionally schema.table.")
    method = label_method_resolve(campaign=campaign, method=method)
    try:
        target = psycopg2.connect(dsn)
    except psycopg2.Error as error:
        raise ApplicationError(f"Cannot connect to the target database: {str(error).strip()}") from None
    identifier = pgsql.Identifier(*table.split("."))
    columns = pgsql.SQL(", ").join(pgsql.Identifier(name) for name, _ in PG_COLUMNS)
    key = pgsql.SQL(", ").join(pgsql.Identifier(name) for name in PG_KEY)
    chunks: queue.Queue = queue.Queue(maxsize=32)
    failed = threading.Event()
    outcome: dict = {}

    def consume():
        try:
            with target.cursor() as cursor:
                cursor.execute(
                    pgsql.SQL("CREATE TABLE IF NOT EXISTS {} ({}, PRIMARY KEY ({}))").format(
                        identifier,
                        pgsql.SQL(", ").join(
                            pgsql.SQL("{} {}").format(pgsql.Identifier(name), pgsql.SQL(kind))
                            for name, kind in PG_COLUMNS
                        ),
                        key,
                    )
                )
                # One export into a table at a time (a second waits), so the empty check below stays true.
                cursor.execute(pgsql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(identifier))
                cursor.execute(
                    pgsql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE campaign_id = %s AND method = %s)").format(
                        identifier
                    ),
                    [campaign.pk, method],
                )
                if not cursor.fetchone()[0]:
                    # First export of these labels: a plain COPY straight into the table.
                    cursor.copy_expert(
                        pgsql.SQL("COPY {} ({}) FROM STDIN").format(identifier, columns).as_string(target),
                        _ChunkReader(chunks),
                        size=1 << 18,
                    )
                    outcome["inserted"], outcome["updated"], outcome["deleted"] = cursor.rowcount, 0, 0
                    target.commit()
                    return
                cursor.execute(
                    pgsql.SQL("CREATE TEMP TABLE vericap_labels_in ({}) ON COMMIT DROP").format(
                        pgsql.SQL(", ").join(
                            pgsql.SQL("{} {}").format(pgsql.Identifier(name), pgsql.SQL(kind))
                            for name, kind in PG_COLUMNS
                        )
                    )
                )
                cursor.copy_expert("COPY vericap_labels_in FROM STDIN", _ChunkReader(chunks), size=1 << 18)
                # Set-at-a-time joins of the whole campaign: hash joins in memory, never a nested loop (the
                # target's statistics may be stale, having just been filled, and a nested loop would go
                # quadratic). The table lock makes UPDATE-then-INSERT an upsert without races.
                cursor.execute("SET LOCAL work_mem = '256MB'")
                cursor.execute("SET LOCAL enable_nestloop = off")
                cursor.execute("ANALYZE vericap_labels_in")
                same_key = pgsql.SQL(" AND ").join(
                    pgsql.SQL("t.{0} = n.{0}").format(pgsql.Identifier(name)) for name in PG_KEY
                )
                incoming = pgsql.SQL(", ").join(pgsql.SQL("n.{}").format(pgsql.Identifier(n)) for n, _ in PG_COLUMNS)
                cursor.execute(
                    pgsql.SQL(
                        "UPDATE {t} t SET {sets} FROM vericap_labels_in n WHERE {same_key} "
                        "AND ({tc}) IS DISTINCT FROM ({nc})"  # unchanged rows are not rewritten
                    ).format(
                        t=identifier,
                        same_key=same_key,
                        sets=pgsql.SQL(", ").join(
                            pgsql.SQL("{0} = n.{0}").format(pgsql.Identifier(n))
                            for n, _ in PG_COLUMNS
                            if n not in PG_KEY
                        ),
                        tc=pgsql.SQL(", ").join(pgsql.SQL("t.{}").format(pgsql.Identifier(n)) for n, _ in PG_COLUMNS),
                        nc=incoming,
                    )
                )
                outcome["updated"] = cursor.rowcount
                cursor.execute(
                    pgsql.SQL(
                        "INSERT INTO {t} ({c}) SELECT {nc} FROM vericap_labels_in n "
                        "WHERE NOT EXISTS (SELECT 1 FROM {t} t WHERE {same_key})"
                    ).format(
                        t=identifier,
                        c=columns,
                        same_key=same_key,
                        nc=incoming,
                    )
                )
                outcome["inserted"] = cursor.rowcount
                cursor.execute(
                    pgsql.SQL(
                        "DELETE FROM {t} t WHERE t.campaign_id = %s AND t.method = %s AND NOT EXISTS "
                        "(SELECT 1 FROM vericap_labels_in n WHERE n.pair_id = t.pair_id)"
                    ).format(t=identifier),
                    [campaign.pk, method],
                )
                outcome["deleted"] = cursor.rowcount
            target.commit()
        except BaseException as error:  # handed to the main thread, which raises it
            failed.set()
            outcome["error"] = error
            target.rollback()
            while True:  # unblock the producer
                try:
                    chunks.get_nowait()
                except queue.Empty:
                    break

    thread = threading.Thread(target=consume, name="vericap-pg-export", daemon=True)
    thread.start()
    produced, complete = 0, False
    try:
        with transaction.atomic():
            produced = _produce_copy_rows(chunks, failed, campaign_id=campaign.pk, method=method)
        complete = True
    except Exception:
        if not failed.is_set():
            raise  # reading our own labels failed: the consumer is told to roll back below
    finally:
        if not failed.is_set():
            chunks.put(None if complete else _ABORT)
        thread.join()
        target.close()
    error = outcome.get("error")
    if error is not None:
        if isinstance(error, psycopg2.Error):
            raise ApplicationError(f"The target database refused the labels: {str(error).strip()}") from None
        raise error
    return {
        "table": table,
        "method": method,
        "rows": produced,
        **{change: outcome.get(change, 0) for change in ("inserted", "updated", "deleted")},
    }


def export_file_name(job: ExportJob) -> str:
    """The name a download is saved under."""
    return os.path.basename(job.file.name) if job.file else f"export-{job.pk}.{FILE_SUFFIX[job.format]}"
