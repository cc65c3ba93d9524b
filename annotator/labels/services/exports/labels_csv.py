"""CSV: one row per labelled pair with its ids, the label, P(positive) and its 90% interval.

The flat form of the JSONL export without the answers and provenance, for spreadsheets and data frames. Every
labelled pair is a row, so the verified negatives are there beside the positives (`verified`). The interval
columns are empty where the method gives none (majority, gold-weighted and the crowd-kit models have a
probability or a confidence but no interval; 0-5 campaigns have the mean's interval in score_low/score_high).
"""

from __future__ import annotations

from typing import IO

from annotator.core.csvsafe import csv_writer
from annotator.labels.export_columns import csv_cells, csv_columns
from annotator.labels.services.exports.rows import labelled_pairs


def write_labels_csv(
    *, out: IO[str], campaign_id: int, method: str, variant: str = "", merge_original: bool = False
) -> int:
    """The campaign's `method` labels, a row per pair (the CSV columns of `LABEL_COLUMNS`); returns the rows."""
    cells = csv_cells()
    writer = csv_writer(out, lineterminator="\n")
    writer.writerow([column.name for column in csv_columns()])
    count = 0
    for pair in labelled_pairs(campaign_id, method):
        writer.writerow(cells(pair))
        count += 1
    return count
