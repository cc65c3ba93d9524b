"""`labels_write`: the one entry that writes an export file, whatever its format."""

from __future__ import annotations

import io
from typing import IO

from django.db import transaction

from annotator.labels.models.exports import ExportFormat
from annotator.labels.services.exports.cxc import write_cxc_csv
from annotator.labels.services.exports.eccv import write_eccv_json, write_eccv_split
from annotator.labels.services.exports.jsonl import write_jsonl
from annotator.labels.services.exports.labels_csv import write_labels_csv
from annotator.labels.services.exports.rows import tune_reads

WRITERS = {
    ExportFormat.ECCV_JSON: (write_eccv_json, "text"),
    ExportFormat.ECCV_SPLIT: (write_eccv_split, "binary"),
    ExportFormat.JSONL: (write_jsonl, "text"),
    ExportFormat.CXC_CSV: (write_cxc_csv, "text"),
    ExportFormat.CSV: (write_labels_csv, "text"),
}


def labels_write(
    *, out: IO[bytes], campaign_id: int, format: str, method: str, variant: str, merge_original: bool
) -> int:
    """Write one export into the binary stream `out`; returns rows (lines or query keys) written.

    Reads inside one transaction so the parts of a file (i2t, t2i, answers) come from one moment.
    """
    writer, mode = WRITERS[format]
    options = {"campaign_id": campaign_id, "method": method, "variant": variant, "merge_original": merge_original}
    with transaction.atomic():
        tune_reads()
        if mode == "binary":
            return writer(out=out, **options)
        text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=False)
        try:
            return writer(out=text, **options)
        finally:
            text.flush()
            text.detach()
