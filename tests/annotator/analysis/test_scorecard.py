"""The scorecard's protocols together, and the leaderboard as plain data (sorting, tau, stability, chart)."""

import numpy as np
import pytest

from annotator.analysis.cider import CiderCorpus
from annotator.analysis.leaderboard import board, chart, stability
from annotator.analysis.retrieval import fold_table, judged_table
from annotator.analysis.scorecard import Gallery, Settings, scorecard

CAPTIONS = [("c1", "i1"), ("c2", "i1"), ("c3", "i2"), ("c4", "i2"), ("c5", "i3"), ("c6", "i3")]
TEXTS = {
    "c1": "a dog on grass",
    "c2": "a brown dog",
    "c3": "a red car",
    "c4": "a car on a road",
    "c5": "a dog",
    "c6": "two dogs",
}


def test_caption_to_caption_and_image_to_image_sets_get_the_label_metrics_only():
    """CxC-style t2t / i2i judgements: the query leaves its own ranking; no dataset-wide protocol."""
    judgements = {"t2t": {"c1": ["c2", "c5"]}, "i2i": {"i1": ["i3"]}}
    rankings = {"t2t": {"c1": ["c1", "c5", "c3", "c2"]}, "i2i": {"i1": ["i1", "i3"]}}
    card = scorecard(rankings, judgements, settings=Settings(resamples=0))
    assert set(card["metrics"]) == {"t2t", "i2i"}
    t2t = card["metrics"]["t2t"]
    assert t2t["r1"]["value"] == 1.0 and t2t["ir_r5"]["value"] == 1.0  # c1 itself is not a hit
    assert t2t["map_at_r"]["value"] == pytest.approx((1 + 0) / 2)  # c5 at 1, c3 at 2
    assert "coco5k_r1" not in t2t and card["metrics"]["i2i"]["median_rank"]["value"] == 1


def test_every_protocol_over_a_tiny_test_set():
    images = ["i1", "i2", "i3"]
    captions = [caption for caption, _ in CAPTIONS]
    references = [[TEXTS[c] for c, image in CAPTIONS if image == i] for i in images]
    relevance = CiderCorpus(references).matrix([TEXTS[c] for c in captions])
    test_set = Gallery(
        caption_image=CAPTIONS,
        image_classes={"i1": frozenset({"dog"}), "i2": frozenset({"car"}), "i3": frozenset({"dog"})},
        relevance=relevance,
        images=images,
        captions=captions,
    )
    rankings = {
        "i2t": {"i1": ["c5", "c1", "c3"], "i2": ["c3", "c1"], "i3": ["c6", "c5"]},
        "t2i": {"c1": ["i3", "i1"], "c3": ["i2"]},
    }
    judgements = {"i2t": {"i1": {"c1": 1.0, "c5": 0.5}}}
    card = scorecard(rankings, judgements, test_set=test_set, settings=Settings(resamples=50, folds=1))
    i2t, t2i = card["metrics"]["i2t"], card["metrics"]["t2i"]
    assert i2t["graded_r1"]["value"] == 0.5 and i2t["r1"]["value"] == 1.0
    assert i2t["coco5k_r1"]["value"] == pytest.approx(2 / 3)  # i2 and i3 find their own captions first
    assert t2i["coco5k_r1"]["value"] == pytest.approx(1 / 6)  # only c3 of six captions; four have no ranking
    assert card["protocols"]["t2i"]["coco5k"]["missing_rankings"] == 4
    # PMRP, i1: plausible images {i1, i3} -> captions {c1, c2, c5, c6}; R = 4; ranked c5, c1, c3 -> 2 of 3.
    pm = {"i1": 2 / 3, "i2": 1 / 2, "i3": 1.0}
    assert i2t["pmrp"]["value"] == pytest.approx(np.mean(list(pm.values())))
    assert 0 <= i2t["ncs5"]["value"] <= 1 and "sr_r1" in t2i
    assert "labels" not in card["protocols"]["t2i"]  # the judgements have no t2i queries
    folds = fold_table(
        rankings["i2t"], test_set.original()["i2t"], [({"i1", "i2", "i3"}, set(captions))], direction="i2t"
    )
    assert i2t["coco1k_r1"]["value"] == folds.summary()["r1"]


def entry(identifier, name, **values):
    return {
        "id": identifier,
        "name": name,
        "biased": name == "b",
        "metrics": {
            key: {
                "value": value,
                "low": None if value is None else value - 0.1,
                "high": None if value is None else value + 0.1,
            }
            for key, value in values.items()
        },
    }


def test_board_sorts_best_first_puts_missing_last_and_orients_ranks():
    entries = [
        entry(1, "a", map_at_r=0.2, r1=0.9, median_rank=3.0),
        entry(2, "b", map_at_r=0.5, r1=0.6, median_rank=1.0),
        entry(3, "c", map_at_r=None, r1=0.1, median_rank=9.0),
        entry(4, "d", map_at_r=0.4, r1=0.3, median_rank=2.0),
    ]
    result = board(entries)
    assert result["sort"] == "map_at_r" and [row["name"] for row in result["rows"]] == ["b", "d", "a", "c"]
    by_rank = board(entries, sort="median_rank")
    assert not by_rank["descending"] and [row["name"] for row in by_rank["rows"]] == ["b", "d", "a", "c"]
    tau = {
        row["key"]: dict(zip([c["key"] for c in result["columns"]], row["values"], strict=True))
        for row in result["tau"]
    }
    assert tau["map_at_r"]["median_rank"] == pytest.approx(1.0)  # same order once ranks are negated
    assert tau["r1"]["map_at_r"] == pytest.approx(-1 / 3)  # over a, b, d only
    assert [column["key"] for column in result["columns"]] == ["r1", "map_at_r", "median_rank"]


def test_stability_across_label_sets_and_the_chart_geometry():
    result = stability(
        {"crowd": {"a": 0.1, "b": 0.5, "c": 0.9}, "cxc": {"a": 0.2, "b": 0.1, "c": 0.3}, "x": {"a": 1.0}}
    )
    assert result["tau"][0][0] == pytest.approx(1.0) and result["tau"][0][1] == pytest.approx(1 / 3)
    assert result["tau"][0][2] is None  # one common model: no order to compare
    rows = board([entry(1, "a", map_at_r=0.5), entry(2, "b", map_at_r=0.25)])["rows"]
    drawn = chart(rows, "map_at_r", width=400, label=100)
    first, second = drawn["bars"]
    assert drawn["axis_max"] == 1.0 and first["width"] == pytest.approx(240 * 0.5) and second["y"] > first["y"]
    assert first["low_x"] == pytest.approx(100 + 240 * 0.4) and first["high_x"] == pytest.approx(100 + 240 * 0.6)
    assert drawn["bars"][1]["biased"]


def test_judged_table_is_the_labels_protocol():
    rankings = {"q": ["a", "b"]}
    assert (
        scorecard({"i2t": rankings}, {"i2t": {"q": ["b"]}}, settings=Settings(resamples=0))["metrics"]["i2t"][
            "map_at_r"
        ]["value"]
        == judged_table(rankings, {"q": ["b"]}).summary()["map_at_r"]
    )
