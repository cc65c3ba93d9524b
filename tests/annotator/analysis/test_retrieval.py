"""Retrieval metrics: hand-computed examples, brute-force references on random data, and eccv_caption's
Metrics on the real ECCV Caption, CxC and COCO graphs that the package ships."""

import random
import warnings

import numpy as np
import pytest

from annotator.analysis.retrieval import (
    coco_folds,
    fold_table,
    judged_table,
    plausible_labels,
    pmrp_table,
    query_metrics,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # eccv_caption warns that ujson is missing
    from eccv_caption import Metrics
    from eccv_caption._metrics import compute_rprecision


# Hand-computed -------------------------------------------------------------------------------------------


def test_every_metric_of_one_query_by_hand():
    """Ranking a x b y c against a=1, b=0.5 ("Partially YES"), c=1, d=1 (R = 4)."""
    values = query_metrics(["a", "x", "b", "y", "c"], {"a": 1.0, "b": 0.5, "c": 1.0, "d": 1.0})
    assert values["r1"] == 1.0 and values["r5"] == 1.0
    assert values["ir_r1"] == 0.25  # 1 of 4 positives in the top 1
    assert values["ir_r5"] == 0.75 and values["ir_r10"] == 0.75  # a, b, c of 4
    assert values["r_precision"] == 0.5  # a, b among the first 4
    assert values["map_at_r"] == pytest.approx((1 + 2 / 3) / 4)
    assert values["graded_r1"] == 1.0
    assert values["graded_r_precision"] == pytest.approx((1 + 0 + 0.5 + 0) / 4)
    assert values["rank"] == 1


def test_graded_metrics_weigh_partially_yes_half():
    values = query_metrics(["b", "a"], {"a": 1.0, "b": 0.5})
    assert values["graded_r1"] == 0.5 and values["r1"] == 1.0
    assert values["graded_r_precision"] == pytest.approx(0.75)
    # A repeated item counts once: "b b" is b then nothing new.
    assert query_metrics(["b", "b"], {"a": 1.0, "b": 0.5})["graded_r_precision"] == pytest.approx(0.25)


def test_median_and_mean_rank_and_queries_past_the_end():
    table = judged_table(
        {"q1": ["a"], "q2": ["x", "y"], "q3": ["x", "x", "c"]}, {"q1": ["a"], "q2": ["p"], "q3": ["c"]}
    )
    assert table.column("rank").tolist() == [1.0, 3.0, 2.0]  # q2: just past its 2 items; q3: repeats dropped
    summary = table.summary()
    assert summary["median_rank"] == 2.0 and summary["mean_rank"] == 2.0
    assert table.counts["past_end"] == 1


def test_queries_are_the_judgements_keys_missing_rankings_are_misses():
    table = judged_table({"1": ["10"], "9": ["10"]}, {"1": ["10"], "2": ["20"], "3": []})
    assert table.queries == ["1", "2"]
    assert table.counts == {"queries": 2, "skipped_without_positives": 1, "missing_rankings": 1, "past_end": 1}
    assert table.summary()["r1"] == 0.5


def test_caption_to_caption_retrieval_leaves_the_query_out_of_its_own_ranking():
    """t2t / i2i: a caption retrieving itself first is no hit and takes no place."""
    table = judged_table({"c1": ["c1", "c2", "c3"]}, {"c1": ["c1", "c3"]}, exclude_self=True)
    values = dict(zip(table.columns, table.values[0], strict=True))
    assert values["r1"] == 0.0 and values["r5"] == 1.0 and values["rank"] == 2.0


def test_coco_1k_folds_rank_within_the_fold_only():
    """Two folds; query image 1 ranks caption 30 (fold 2) first: inside fold 1 its first item is 11."""
    caption_images = [("11", "1"), ("21", "2"), ("30", "3"), ("40", "4")]
    folds = coco_folds(caption_images, folds=2)
    assert folds == [({"1", "2"}, {"11", "21"}), ({"3", "4"}, {"30", "40"})]
    labels = {"1": ["11"], "2": ["21"], "3": ["30"], "4": ["40"]}
    rankings = {"1": ["30", "11"], "2": ["11", "21"], "3": ["30"], "4": ["11", "30"]}
    table = fold_table(rankings, labels, folds, direction="i2t", ks=(1,))
    assert dict(zip(table.queries, table.column("r1"), strict=True)) == {"1": 1.0, "2": 0.0, "3": 1.0, "4": 0.0}


def test_pmrp_by_hand():
    """Classes A={dog}, B={dog}, C={cat}, D={dog, cat}; captions a1 a2 (A), b1 (B), c1 (C), d1 (D)."""
    classes = {"A": {"dog"}, "B": {"dog"}, "C": {"cat"}, "D": {"dog", "cat"}}
    caption_image = {"a1": "A", "a2": "A", "b1": "B", "c1": "C", "d1": "D"}
    zero = plausible_labels(classes, caption_image, zeta=0)
    one = plausible_labels(classes, caption_image, zeta=1)
    assert zero["i2t"]["A"] == {"a1", "a2", "b1"} and zero["t2i"]["c1"] == {"C"}
    assert one["i2t"]["A"] == {"a1", "a2", "b1", "d1"} and one["t2i"]["d1"] == {"A", "B", "C", "D"}
    rankings = {"A": ["b1", "c1", "a1"]}
    assert pmrp_table(rankings, {0: {"A": zero["i2t"]["A"]}}).column("pmrp")[0] == pytest.approx(2 / 3)
    assert pmrp_table(rankings, {0: {"A": zero["i2t"]["A"]}}, cap=2).column("pmrp")[0] == 0.5
    # Averaged over zeta in {0, 1}: R = 3 then 4, both 2 of 3 distinct retrieved items.
    both = pmrp_table(rankings, {0: {"A": zero["i2t"]["A"]}, 1: {"A": one["i2t"]["A"]}})
    assert both.column("pmrp")[0] == pytest.approx(2 / 3)


# Brute-force references on random data -----------------------------------------------------------------


def random_case(rng: random.Random, queries=60, gallery=40):
    items = [f"t{i}" for i in range(gallery)]
    rankings, judgements = {}, {}
    for q in range(queries):
        rankings[f"q{q}"] = [rng.choice(items) for _ in range(rng.randint(0, 30))]  # repeats on purpose
        chosen = rng.sample(items, rng.randint(0, 8))
        judgements[f"q{q}"] = {item: rng.choice((1.0, 0.5)) for item in chosen}
    return rankings, judgements


@pytest.mark.parametrize("seed", range(5))
def test_ir_recall_graded_and_ranks_equal_brute_force(seed):
    rng = random.Random(seed)
    rankings, judgements = random_case(rng)
    table = judged_table(rankings, judgements)
    expected_queries = [q for q, grades in judgements.items() if grades]
    assert table.queries == expected_queries
    for row, query in enumerate(table.queries):
        ranked, grades = rankings[query], judgements[query]
        got = dict(zip(table.columns, table.values[row], strict=True))
        unique = list(dict.fromkeys(ranked))
        for k in (1, 5, 10):
            assert got[f"ir_r{k}"] == pytest.approx(len(set(ranked[:k]) & set(grades)) / len(grades))
            assert got[f"r{k}"] == (1.0 if set(ranked[:k]) & set(grades) else 0.0)
        m = [grades.get(item, 0.0) for item in unique]
        assert got["graded_r1"] == (m[0] if m else 0.0)
        assert got["graded_r_precision"] == pytest.approx(sum(m[: len(grades)]) / len(grades))
        hits = [i + 1 for i, item in enumerate(unique) if item in grades]
        assert got["rank"] == (hits[0] if hits else len(unique) + 1)
    ranks = sorted(table.column("rank"))
    assert table.summary()["median_rank"] == pytest.approx(float(np.median(ranks)))


@pytest.mark.parametrize(("seed", "zeta", "cap"), [(0, 0, 50), (1, 1, None), (2, 2, 3), (3, 0, None)])
def test_pmrp_equals_brute_force(seed, zeta, cap):
    rng = random.Random(seed)
    classes = {f"i{n}": set(rng.sample(range(6), rng.randint(0, 3))) for n in range(40)}
    caption_image = {f"c{n}": f"i{rng.randrange(40)}" for n in range(150)}
    rankings = {
        "i2t": {image: rng.sample(sorted(caption_image), 20) for image in classes},
        "t2i": {caption: [rng.choice(sorted(classes)) for _ in range(15)] for caption in caption_image},
    }
    plausible = plausible_labels(classes, caption_image, zeta=zeta)
    for direction in ("i2t", "t2i"):
        table = pmrp_table(rankings[direction], {zeta: plausible[direction]}, cap=cap)
        scored = dict(zip(table.queries, table.column("pmrp"), strict=True))
        for query in rankings[direction]:
            if direction == "i2t":
                near = {other for other in classes if len(classes[query] ^ classes[other]) <= zeta}
                pm = {caption for caption, image in caption_image.items() if image in near}
            else:
                own = classes[caption_image[query]]
                pm = {other for other in classes if len(own ^ classes[other]) <= zeta}
            if not pm:  # an image none of whose plausible images has a caption cannot be scored
                assert query not in scored
                continue
            r = len(pm) if cap is None else min(len(pm), cap)
            top = set(rankings[direction][query][:r])
            assert scored[query] == pytest.approx(len(top & pm) / len(top))


# eccv_caption on the real graphs ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def eccv():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metrics = Metrics()
    rng = np.random.default_rng(0)
    captions = np.array(sorted(metrics.coco_gts["t2i"]))
    images = np.array(sorted(metrics.coco_gts["i2t"]))

    def rank(queries, gallery, positives, length):
        result = {}
        for query in queries:
            items = [int(x) for x in gallery[rng.integers(0, len(gallery), size=length)]]
            for positive in positives.get(query, []):
                if rng.random() < 0.5:
                    items.insert(int(rng.integers(0, 20)), positive)
            result[int(query)] = list(dict.fromkeys(items))
        return result

    rankings = {
        "i2t": rank(images, captions, metrics.eccv_gts["i2t"], 120),
        "t2i": rank(captions, images, metrics.eccv_gts["t2i"], 60),
    }
    return metrics, rankings


def test_recall_r_precision_map_at_r_equal_eccv_caption_on_the_real_graphs(eccv):
    metrics, rankings = eccv
    reference = metrics.compute_all_metrics(
        rankings["i2t"],
        rankings["t2i"],
        target_metrics=("coco_5k_recalls", "cxc_recalls", "eccv_r1", "eccv_map_at_r", "eccv_rprecision"),
        Ks=(1, 5, 10),
        verbose=False,
    )
    for direction in ("i2t", "t2i"):
        ours = judged_table(rankings[direction], metrics.eccv_gts[direction]).summary()
        assert ours["r1"] == pytest.approx(reference["eccv_r1"][direction], abs=1e-14)
        assert ours["r_precision"] == pytest.approx(reference["eccv_rprecision"][direction], abs=1e-14)
        assert ours["map_at_r"] == pytest.approx(reference["eccv_map_at_r"][direction], abs=1e-14)
        assert ours["map_at_r"] > 0.05  # the rankings hold positives: a real comparison, not 0 == 0
        for graph, prefix in ((metrics.coco_gts, "coco_5k"), (metrics.cxc_gts, "cxc")):
            ours = judged_table(rankings[direction], graph[direction]).summary()
            for k in (1, 5, 10):
                assert ours[f"r{k}"] == pytest.approx(reference[f"{prefix}_r{k}"][direction], abs=1e-14)


def test_coco_1k_equals_eccv_captions_five_folds(eccv):
    metrics, rankings = eccv
    folds = coco_folds([(int(c), metrics.coco_gts["t2i"][int(c)][0]) for c in metrics.coco_ids])
    for k in (1, 5, 10):
        reference = metrics.coco_1k_recalls(rankings, "all", K=k)
        for direction in ("i2t", "t2i"):
            table = fold_table(rankings[direction], metrics.coco_gts[direction], folds, direction=direction, ks=(k,))
            assert table.summary()[f"r{k}"] == pytest.approx(reference[direction], abs=1e-14)


def test_uncapped_pmrp_equals_eccv_captions_r_precision_over_the_same_plausible_matches(eccv):
    """eccv_caption's pmrp() is compute_rprecision over PM labels; with R uncapped ours is the same."""
    metrics, rankings = eccv
    rng = random.Random(4)
    image_classes = {image: set(rng.sample(range(12), rng.randint(1, 3))) for image in metrics.coco_gts["i2t"]}
    caption_image = {caption: images[0] for caption, images in metrics.coco_gts["t2i"].items()}
    plausible = plausible_labels(
        {str(k): v for k, v in image_classes.items()}, {str(k): str(v) for k, v in caption_image.items()}
    )
    i2t_pm = {int(query): [int(x) for x in targets] for query, targets in list(plausible["i2t"].items())[:300]}
    reference = compute_rprecision(rankings["i2t"], i2t_pm)
    ours = pmrp_table(rankings["i2t"], {0: {str(q): {str(x) for x in t} for q, t in i2t_pm.items()}}, cap=None)
    assert ours.summary()["pmrp"] == pytest.approx(reference, abs=1e-14)
