"""How well a captioning metric agrees with people (seed 002's Table 1, ECCV Caption's App. D.1): Kendall's
tau-b and Spearman's r between a metric's score of each judged image-caption pair and the human judgement of
it (a 0-5 rating, or a verified label as 1 / 0.5 / 0), with 95% bootstrap intervals.

The pairs of one image are not independent (the same references score them all), so the bootstrap resamples
images with replacement and keeps each drawn image's pairs together. Pure numpy and scipy over
(image, metric score, human score) rows; no ORM.

Any metric's or model's scores can stand in for the captioning metric: `pair_scores_read` reads a file of
(image id, caption id) -> score, CSV with the columns `image,caption,score` or JSONL with those keys.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Iterable

import numpy as np
from scipy.stats import kendalltau, spearmanr


def _correlations(metric: np.ndarray, human: np.ndarray) -> tuple[float | None, float | None]:
    if len(metric) < 3 or np.all(metric == metric[0]) or np.all(human == human[0]):
        return None, None
    tau = float(kendalltau(metric, human).statistic)  # tau-b: ties on either side are counted
    rho = float(spearmanr(metric, human).statistic)
    return (tau if np.isfinite(tau) else None), (rho if np.isfinite(rho) else None)


def metric_human_correlation(
    rows: Iterable[tuple[object, float, float]], *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict:
    """{"kendall": {"value", "low", "high"}, "spearman": {...}, "pairs", "images", "resamples"} of
    (image, metric score, human score) rows. A value is None when it cannot be computed (fewer than 3
    pairs, or every metric or every human score equal). The same rows and seed give the same numbers."""
    by_image: dict[object, list[tuple[float, float]]] = defaultdict(list)
    for image, metric, human in rows:
        by_image[image].append((float(metric), float(human)))
    images = sorted(by_image, key=str)
    groups = [np.asarray(by_image[image], dtype=np.float64) for image in images]
    flat = np.concatenate(groups) if groups else np.zeros((0, 2))
    tau, rho = _correlations(flat[:, 0], flat[:, 1]) if len(flat) else (None, None)
    taus, rhos = [], []
    rng = np.random.default_rng(seed)
    for _ in range(resamples if len(images) >= 2 and tau is not None else 0):
        drawn = np.concatenate([groups[i] for i in rng.integers(len(images), size=len(images))])
        t, r = _correlations(drawn[:, 0], drawn[:, 1])
        if t is not None and r is not None:
            taus.append(t)
            rhos.append(r)
    tail = (1.0 - confidence) / 2 * 100

    def cell(value, samples):
        if value is None or not samples:
            return {"value": value, "low": None, "high": None}
        return {
            "value": value,
            "low": float(np.percentile(samples, tail)),
            "high": float(np.percentile(samples, 100 - tail)),
        }

    return {
        "kendall": cell(tau, taus),
        "spearman": cell(rho, rhos),
        "pairs": int(len(flat)),
        "images": len(images),
        "resamples": len(taus),
    }


SCORE_COLUMNS = ("image", "caption", "score")
MAX_ERRORS = 10


def _id(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError("an id is a string or an integer")
    text = str(value).strip()
    if not text:
        raise ValueError("an empty id")
    return text


def _score(value) -> float:
    if isinstance(value, bool):
        raise ValueError(f"score {value!r} is not a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"score {str(value)[:20]!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError("score is not finite")
    return number


def _csv_records(text: str):
    reader = csv.DictReader(io.StringIO(text))
    columns = {name.strip() for name in (reader.fieldnames or []) if name}
    missing = [name for name in SCORE_COLUMNS if name not in columns]
    if missing:
        raise ValueError(
            f"The scores file needs the columns {','.join(SCORE_COLUMNS)} (a CSV header) or JSONL lines with those "
            f"keys; it has {','.join(sorted(columns)) or 'none'}."
        )
    for line, row in enumerate(reader, start=2):
        row = {key.strip(): value for key, value in row.items() if key}
        yield line, row


def _jsonl_records(text: str):
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            yield line, ValueError("not JSON")
            continue
        if not isinstance(record, dict):
            yield line, ValueError("not a JSON object")
            continue
        missing = [key for key in SCORE_COLUMNS if key not in record]
        yield line, (ValueError(f"no {', '.join(missing)}") if missing else record)


def pair_scores_read(text: str) -> dict[tuple[str, str], float]:
    """{(image id, caption id): score} of a scores file: CSV with a header naming `image`, `caption` and
    `score` (other columns are ignored, in any order: CxC's SITS `caption,image,score` is such a file), or
    JSONL, one {"image": ..., "caption": ..., "score": ...} per line. Only the order of the scores matters.
    Raises ValueError naming the problem: the columns, up to MAX_ERRORS lines that cannot be read (with their
    line numbers), a pair scored twice with two values, no pair at all."""
    text = text.lstrip("\ufeff")
    records = _jsonl_records(text) if text.lstrip().startswith("{") else _csv_records(text)
    scores: dict[tuple[str, str], float] = {}
    errors: list[str] = []
    for line, record in records:
        try:
            if isinstance(record, Exception):
                raise record
            pair = (_id(record["image"]), _id(record["caption"]))
            value = _score(record["score"])
        except ValueError as error:
            errors.append(f"line {line}: {error}")
            if len(errors) >= MAX_ERRORS:
                break
            continue
        if scores.get(pair, value) != value:
            raise ValueError(
                f"The scores file scores the pair image {pair[0]}, caption {pair[1]} twice with different values."
            )
        scores[pair] = value
    if errors:
        raise ValueError("The scores file has lines that cannot be read: " + "; ".join(errors))
    if not scores:
        raise ValueError("The scores file has no scored pair.")
    return scores
