"""Crisscrossed Captions' Table 5: how well a model's similarity scores rank CxC's rated pairs as people did.

For each task (STS caption-caption, SIS image-image, SITS caption-image) the model scores every rated pair
of the released test file; the number is CxC's sampled bootstrap Spearman's r (Sec. 4,
annotator.analysis.cxc_analysis.bootstrap_spearman): 1,000 samples of half of the queries and one rated
pair of each, r averaged. A query is the pair's first column (`caption1`, `image1`, `caption`), the item
CxC's files group ratings by. Pure Python over ids as CxC spells them; no ORM.

A model's scores file is CSV: the two id columns of its task, as the released file names them, and a
`score` column (any real number; only its order matters), one line per pair, e.g.
`caption1,caption2,score`. The released file with a `score` column added is such a file.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence

from annotator.analysis.cxc_analysis import bootstrap_spearman

# How a stored evaluation says it is Table 5 (its settings' `protocol`), for the services, selectors and board.
PROTOCOL = "cxc_table5"
TASK_COLUMNS = {"sts": ("caption1", "caption2"), "sis": ("image1", "image2"), "sits": ("caption", "image")}
TASK_TITLES = {"sts": "STS", "sis": "SIS", "sits": "SITS"}
# Where a task's number sits on a leaderboard (one direction per task: its queries' side).
TASK_DIRECTION = {"sts": "t2t", "sis": "i2i", "sits": "t2i"}
KIND_TASK = {"caption_caption": "sts", "image_image": "sis", "image_caption": "sits"}
SYMMETRIC = ("sts", "sis")
MAX_ERRORS = 10

Pair = tuple[str, str]


def _task_of(columns: set[str]) -> str | None:
    for task, (first, second) in TASK_COLUMNS.items():
        if first in columns and second in columns:
            return task
    return None


def _rows(text: str, *, what: str, value_column: str) -> tuple[str, list[tuple[str, str, float]]]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    columns = {name.strip() for name in (reader.fieldnames or []) if name}
    task = _task_of(columns)
    if task is None or value_column not in columns:
        wanted = " or ".join(f"{a},{b},{value_column}" for a, b in TASK_COLUMNS.values())
        raise ValueError(f"The {what} needs the columns {wanted}; it has {','.join(sorted(columns)) or 'none'}.")
    first, second = TASK_COLUMNS[task]
    rows, errors = [], []
    for line, row in enumerate(reader, start=2):
        row = {key.strip(): (value or "").strip() for key, value in row.items() if key}
        try:
            value = float(row[value_column])
        except ValueError:
            errors.append(f"line {line}: {value_column} {row[value_column][:20]!r} is not a number")
        else:
            if not math.isfinite(value):
                errors.append(f"line {line}: {value_column} is not finite")
            elif not row[first] or not row[second]:
                errors.append(f"line {line}: an empty id")
            else:
                rows.append((row[first], row[second], value))
        if len(errors) >= MAX_ERRORS:
            break
    if errors:
        raise ValueError(f"The {what} has lines that cannot be read: " + "; ".join(errors))
    if not rows:
        raise ValueError(f"The {what} has no pairs.")
    return task, rows


def ratings_csv_read(text: str) -> tuple[str, list[tuple[str, str, float]]]:
    """A released CxC test file: its task and its (first id, second id, agg_score) rows, in file order."""
    return _rows(text, what="CxC ratings file", value_column="agg_score")


def scores_csv_read(text: str) -> tuple[str, dict[Pair, float]]:
    """A model's scores file: its task and {(first id, second id): score}. Raises ValueError naming the
    problem (columns, a line that is not a number, a pair scored twice with two values)."""
    task, rows = _rows(text, what="scores file", value_column="score")
    scores: dict[Pair, float] = {}
    for first, second, value in rows:
        if scores.get((first, second), value) != value:
            raise ValueError(f"The scores file scores the pair {first},{second} twice with different values.")
        scores[(first, second)] = value
    return task, scores


def _lookup(scores: Mapping[Pair, float], task: str, first: str, second: str) -> float | None:
    value = scores.get((first, second))
    if value is None and task in SYMMETRIC:
        value = scores.get((second, first))
    return value


def table5(
    ratings: Mapping[str, Sequence[tuple[str, str, float]]],
    scores: Mapping[str, Mapping[Pair, float]],
    *,
    samples: int = 1000,
    seed: int = 0,
) -> dict:
    """Per task with both ratings and scores: the bootstrap Spearman's r (`spearman`, and x100 as Table 5
    prints it), its spread (`sd`, 95% `low`/`high` of the samples), the pairs rated, scored and missing a
    score (left out of r), and a `note` when there is no r (a constant model). `notes` names the tasks that
    have ratings and no scores, or scores and no ratings."""
    result: dict = {"tasks": {}, "notes": [], "samples": samples, "seed": seed}
    for task in TASK_COLUMNS:
        if task not in ratings and task not in scores:
            continue
        if task not in scores:
            result["notes"].append(f"{TASK_TITLES[task]}: no scores were given; not scored.")
            continue
        if task not in ratings:
            result["notes"].append(f"{TASK_TITLES[task]}: scores were given but no ratings to score them against.")
            continue
        rows, missing = [], 0
        for first, second, human in ratings[task]:
            model = _lookup(scores[task], task, first, second)
            if model is None:
                missing += 1
                continue
            rows.append((first, human, model))
        boot = bootstrap_spearman(rows, samples=samples, seed=seed)
        entry = {
            "task": TASK_TITLES[task],
            "direction": TASK_DIRECTION[task],
            "spearman": boot["spearman"],
            "spearman_x100": None if boot["spearman"] is None else round(boot["spearman"] * 100, 1),
            "sd": boot["sd"],
            "low": boot["low"],
            "high": boot["high"],
            "samples": boot["samples"],
            "queries": boot["queries"],
            "pairs_rated": len(ratings[task]),
            "pairs_scored": boot["pairs"],
            "pairs_missing_score": missing,
        }
        if boot["spearman"] is None:
            entry["note"] = (
                f"{TASK_TITLES[task]}: no sample has a Spearman's r (the model gives every pair the same score, "
                "or too few pairs are scored)."
            )
        if missing:
            result["notes"].append(
                f"{TASK_TITLES[task]}: {missing:,} of {len(ratings[task]):,} rated pairs have no score and are left "
                "out; Table 5 scores every pair."
            )
        result["tasks"][task] = entry
    return result
