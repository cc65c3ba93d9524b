"""CSV: one row per labelled pair with its ids, the label, P(positive) and its 90% interval.

The flat form of the JSONL export without the answers and provenance, for spreadsheets and data frames. Every
labelled pair is a row, so the verified negatives are there beside the positives (`verified`). The interval
columns are empty where the method gives none (majority, gold-weighted and the crowd-kit models have a
probability or a confidence but no interval; 0-5 campaigns have the mean's interval in score_low/score_high).
"""

from __future__ import annotations

from typing import IO

from annotator.csvsafe import csv_writer
from annotator.services.exports.rows import labelled_pairs

CSV_COLUMNS = [
    "pair_id",
    "kind",
    "image",
    "caption",
    "other_image",
    "other_caption",
    "is_original",
    "stage",
    "method",
    "verified",
    "choice",
    "score",
    "is_positive",
    "is_positive_strict",
    "confidence",
    "answer_count",
    "probability",
    "probability_low",
    "probability_high",
    "score_low",
    "score_high",
]


def _cell(value) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    return value


def write_labels_csv(
    *, out: IO[str], campaign_id: int, method: str, variant: str = "", merge_original: bool = False
) -> int:
    """The campaign's `method` labels, a row per pair (CSV_COLUMNS); returns the rows written."""
    writer = csv_writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    count = 0
    for pair in labelled_pairs(campaign_id, method):
        values = [
            pair.pair_id,
            pair.kind,
            pair.image,
            pair.caption,
            pair.other_image,
            pair.other_caption,
            bool(pair.is_original),
            pair.direction,
            pair.method,
            "positive" if pair.is_positive else "negative",
            pair.choice,
            pair.score,
            bool(pair.is_positive),
            bool(pair.is_positive_strict),
            pair.confidence,
            pair.answer_count,
            pair.probability,
            pair.probability_low,
            pair.probability_high,
            pair.score_low,
            pair.score_high,
        ]
        writer.writerow([_cell(value) for value in values])
        count += 1
    return count
