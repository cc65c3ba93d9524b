"""ECCV Caption's retrieval metrics on hand-made rankings (paper Sec. 4.1 / App. D.1, released eval code)."""

import pytest

from annotator.analysis.metrics import (
    evaluate,
    evaluate_direction,
    parse_direction_file,
    precision_at,
    query_scores,
)

POSITIVES = {f"p{i}" for i in range(8)}
NEGATIVES = [f"n{i}" for i in range(8)]


def ranking(pattern: str) -> list[str]:
    """'+' a fresh positive, '-' a fresh negative, in rank order."""
    pos, neg = iter(sorted(POSITIVES)), iter(NEGATIVES)
    return [next(pos) if mark == "+" else next(neg) for mark in pattern]


@pytest.mark.parametrize(
    ("pattern", "r1", "r5", "map_at_r"),
    [
        ("-+++++++", 0, 1, 0.660),  # (A) only top-1 wrong: 66.0 mAP@R in the paper
        ("+-------", 1, 1, 0.125),  # (B) only top-1 correct: 12.5
        ("-----+++", 0, 0, 0.103),  # (C) top-1 to 5 wrong: 10.3
        ("----+---", 0, 1, 0.025),  # (D) only top-5 correct: 2.5
        ("--------", 0, 0, 0.0),  # (E) all wrong
    ],
)
def test_paper_user_study_rankings_give_the_papers_numbers(pattern, r1, r5, map_at_r):
    """The five rankings of App. D.1 with 8 positives give the R@k and mAP@R the paper prints."""
    scores = query_scores(ranking(pattern), POSITIVES)
    assert scores["r1"] == r1
    assert scores["r5"] == r5
    assert scores["map_at_r"] == pytest.approx(map_at_r, abs=5e-4)


def test_r_precision_is_precision_at_r():
    """R-Precision counts positives among the first R items: 3 of the first 4 here."""
    scores = query_scores(["a", "x", "b", "c", "d"], {"a", "b", "c", "d"})
    assert scores["r_precision"] == pytest.approx(3 / 4)
    # mAP@R: ranks 1, 3, 4 are positives with precisions 1/1, 2/3, 3/4; rank 2 contributes 0.
    assert scores["map_at_r"] == pytest.approx((1 + 2 / 3 + 3 / 4) / 4)


def test_precision_is_over_distinct_retrieved_items():
    """A repeated item counts once in the precision denominator, as in ECCV's released rprecision()."""
    assert precision_at(["a", "a", "x"], {"a", "b", "c"}, 3) == pytest.approx(1 / 2)
    # Repeating a positive: top-3 = {a, b}, both positive -> precision 1, and each positive position counts.
    scores = query_scores(["a", "a", "b"], {"a", "b", "c"})
    assert scores["r_precision"] == pytest.approx(1.0)
    assert scores["map_at_r"] == pytest.approx((1 + 1 + 1) / 3)
    # Repeating a negative: top-3 = {x, a}, precision at 3 is 1/2 rather than 1/3.
    scores = query_scores(["x", "x", "a"], {"a", "b", "c"})
    assert scores["r_precision"] == pytest.approx(1 / 2)
    assert scores["map_at_r"] == pytest.approx((0 + 0 + 1 / 2) / 3)


def test_short_and_missing_rankings_count_as_misses():
    """A ranking shorter than R, or no ranking at all, scores its missing positions as misses."""
    scores = query_scores(["a"], {"a", "b"})
    assert scores["map_at_r"] == pytest.approx(0.5)
    assert scores["r_precision"] == pytest.approx(1.0)  # over the distinct items retrieved
    means, counts = evaluate_direction({}, {"q": ["a"]})
    assert means["r1"] == 0.0 and means["map_at_r"] == 0.0
    assert counts == {"queries": 1, "skipped_without_positives": 0, "missing_rankings": 1}


def test_dataset_score_is_the_mean_over_label_queries_with_ids_as_strings():
    """Queries are the label map's keys; integer and string ids agree; extra ranked queries are ignored."""
    labels = {"i2t": {"1": [10, 11], "2": [20]}, "t2i": {"10": [1]}}
    rankings = {"i2t": {"1": ["10", "99"], "2": ["99", "20"], "3": ["10"]}, "t2i": {10: [2, 1]}}
    results, counts = evaluate(rankings, labels)
    assert results["i2t"]["r1"] == pytest.approx(0.5)
    assert results["i2t"]["r5"] == pytest.approx(1.0)
    assert results["i2t"]["map_at_r"] == pytest.approx((0.5 + 0.0) / 2)
    assert results["t2i"]["r1"] == 0.0 and results["t2i"]["r5"] == 1.0
    assert counts["i2t"]["queries"] == 2


def test_queries_without_positives_are_skipped_and_empty_direction_is_none():
    means, counts = evaluate_direction({"q": ["a"]}, {"q": []})
    assert means["r1"] is None
    assert counts["skipped_without_positives"] == 1


@pytest.mark.parametrize(
    "bad",
    [[], {"x2y": {}}, {}, {"i2t": []}, {"i2t": {"1": "2"}}, {"i2t": {"1": [1.5]}}, {"i2t": {"1": [True]}}],
)
def test_malformed_files_are_refused_with_a_message(bad):
    with pytest.raises(ValueError, match="rankings"):
        parse_direction_file(bad, what="rankings file")
