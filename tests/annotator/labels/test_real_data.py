"""Label sets on the real released data: ECCV Caption's two files, the CxC SITS ratings, the COCO pairs.

One COCO 5K test dataset (real ids, placeholder pictures) and its sets are made once for the module; each
test then runs in its own rolled-back transaction. The reference for every number is the PyPI package
eccv-caption==0.1.0 (its graphs and its `Metrics` code).
"""

import numpy as np
import pytest
from eccv_caption import Metrics
from eccv_caption._metrics import compute_eccv_metrics, compute_r_at_k

from annotator.labels.selectors.labelsets import labelset_label_maps, labelset_view
from annotator.labels.services.labelsets.builds import labelset_derive, labelset_from_original
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Dataset, LabelSet, LabelSetPair
from annotator.research.selectors.labelset_analyses import labelset_compare
from annotator.research.services.labelset_evaluation import evaluate
from tests.labelset_support import (
    EXTRA_ECCV_CAPTIONS,
    make_coco_test_dataset,
    package_file,
    package_graph,
    random_rankings,
    sits_csv_gz,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def coco(django_db_setup, django_db_blocker):
    """The dataset and its ECCV (split files), CxC (SITS CSV) and original sets, committed for the module."""
    with django_db_blocker.unblock():
        Dataset.objects.filter(name="coco-5k-test").delete()
        dataset = make_coco_test_dataset()
        eccv = labelset_import(
            dataset=dataset,
            name="eccv",
            fmt="eccv_split",
            files=[
                ("eccv_image_to_caption.json", package_file("eccv_image_to_caption.json")),
                ("eccv_caption_to_image.json", package_file("eccv_caption_to_image.json")),
            ],
            annotators=["PVSE", "VSRN", "PCME", "ViLT", "CLIP"],
        )
        cxc = labelset_import(dataset=dataset, name="cxc", fmt="cxc_sits", files=[("sits_test.csv.gz", sits_csv_gz())])
        original = labelset_import(
            dataset=dataset,
            name="coco",
            fmt="eccv_split",
            files=[
                ("original_image_to_caption.json", package_file("original_image_to_caption.json")),
                ("original_caption_to_image.json", package_file("original_caption_to_image.json")),
            ],
        )
        yield {"dataset": dataset, "eccv": eccv, "cxc": cxc, "original": original}
        LabelSet.objects.filter(dataset=dataset).order_by("-pk").delete()
        dataset.delete()


def _as_int_rankings(rankings):
    return {
        direction: {int(q): [int(t) for t in items] for q, items in section.items()}
        for direction, section in rankings.items()
    }


def test_released_split_eccv_files_import_with_all_their_queries(coco):
    """The two released ECCV files import as they are: 1,261 i2t and 1,332 t2i queries, every positive."""
    eccv = coco["eccv"]
    assert eccv.stats["i2t"]["queries"] == 1261
    assert eccv.stats["t2i"]["queries"] == 1332
    assert eccv.stats["i2t"]["positives"] == 22550
    assert eccv.stats["t2i"]["positives"] == 11279
    assert eccv.report["unknown_ids"] == {"image": 0, "caption": 0}
    assert eccv.report["direction_conflicts"] == 0
    maps = labelset_label_maps(label_set=eccv)
    reference = package_graph("eccv")
    for direction in ("i2t", "t2i"):
        assert {q: sorted(t) for q, t in reference[direction].items()} == maps[direction]


def test_cxc_import_matches_the_package_graph_and_keeps_negatives(coco):
    """The SITS CSV at CxC's threshold (>= 3) gives exactly the package's CxC graph; rated pairs below the
    threshold are kept as judged negatives."""
    cxc = coco["cxc"]
    maps = labelset_label_maps(label_set=cxc)
    reference = package_graph("cxc")
    for direction in ("i2t", "t2i"):
        with_positives = {q: t for q, t in maps[direction].items() if t}
        assert with_positives == {q: sorted(t) for q, t in reference[direction].items()}
    assert cxc.stats["pairs"] == 44833
    assert cxc.stats["positive_pairs"] == 35585
    assert cxc.stats["t2i"]["queries"] == 25000
    assert cxc.report["queries"]["t2i"] == {
        "in_file": 25000,
        "matched": 25000,
        "coverage_of_file": 1.0,
        "coverage_of_dataset": 0.9999,
    }


def test_importing_cxc_after_eccv_leaves_every_eccv_label_unchanged(coco):
    eccv = coco["eccv"]
    before = sorted(LabelSetPair.objects.filter(label_set=eccv).values_list("image_id", "caption_id", "is_positive"))
    labelset_import(
        dataset=coco["dataset"], name="cxc-again", fmt="cxc_sits", files=[("sits_test.csv.gz", sits_csv_gz())]
    )
    after = sorted(LabelSetPair.objects.filter(label_set=eccv).values_list("image_id", "caption_id", "is_positive"))
    assert before == after
    assert labelset_view(label_set=eccv).queries["i2t"] == labelset_view(label_set=coco["eccv"]).queries["i2t"]


def test_original_set_of_the_dataset_is_the_coco_graph_plus_its_extra_captions(coco):
    """The dataset's own pairing as a set: the package's COCO graph, and the two captions ECCV lists beyond
    COCO's five per image (this dataset attaches them to their images)."""
    own = labelset_from_original(dataset=coco["dataset"], name="dataset-pairs")
    maps = labelset_label_maps(label_set=own)
    expected = {d: {q: sorted(t) for q, t in package_graph("original")[d].items()} for d in ("i2t", "t2i")}
    for caption, image in EXTRA_ECCV_CAPTIONS.items():
        expected["i2t"][image] = sorted([*expected["i2t"][image], caption])
        expected["t2i"][caption] = [image]
    assert maps == expected
    assert own.kind == "original" and own.stats["pairs"] == 25002


def test_table_3_positives_per_query_reproduced_exactly(coco):
    """ECCV Caption Table 3 on the ECCV queries: 1,332 / 6,305 (original), 1,895 / 8,906 (CxC),
    11,279 / 22,550 (ECCV)."""
    result = labelset_compare(label_sets=[coco["original"], coco["cxc"], coco["eccv"]], queries_of=coco["eccv"])
    rows = {row["label_set"]: (row["t2i"]["positives"], row["i2t"]["positives"]) for row in result["multiplicity"]}
    assert rows == {"coco@1": (1332, 6305), "cxc@1": (1895, 8906), "eccv@1": (11279, 22550)}
    ratios = {row["label_set"]: (row["t2i"]["ratio"], row["i2t"]["ratio"]) for row in result["multiplicity"]}
    assert ratios["cxc@1"] == (1.42, 1.41)
    assert ratios["eccv@1"] == (8.47, 3.58)
    assert len(result["precision_recall"]) == 6  # every ordered pair of the three sets


def test_eccv_recipe_union_of_cxc_and_original_on_eccv_queries_contains_them(coco):
    """Union with the first set's queries: the ECCV queries keep their own positives and gain CxC's and
    COCO's (ECCV Caption already holds them: the union adds nothing new to it)."""
    union = labelset_derive(
        operands=[coco["eccv"], coco["cxc"], coco["original"]], operation="union", query_rule="first", name="eccv-union"
    )
    assert union.stats["i2t"]["queries"] == 1261 and union.stats["t2i"]["queries"] == 1332
    eccv_maps, union_maps = labelset_label_maps(label_set=coco["eccv"]), labelset_label_maps(label_set=union)
    cxc_maps = labelset_label_maps(label_set=coco["cxc"])
    for direction in ("i2t", "t2i"):
        for query, positives in union_maps[direction].items():
            assert set(eccv_maps[direction][query]) <= set(positives)
            assert set(cxc_maps[direction].get(query, [])) <= set(positives)


@pytest.mark.parametrize("which", ["eccv", "cxc", "original"])
def test_evaluation_equals_eccv_caption_metrics(coco, which):
    """R@1/5/10, R-Precision and mAP@R against each imported set equal the package's reference code over
    all the set's queries (max abs difference < 1e-9)."""
    metrics = Metrics()
    graphs = {"eccv": metrics.eccv_gts, "cxc": metrics.cxc_gts, "original": metrics.coco_gts}
    dataset_ids = {
        "image": [str(i) for i in metrics.coco_gts["i2t"]],
        "caption": [str(c) for c in metrics.coco_gts["t2i"]],
    }
    reference_graph = {d: {str(q): [str(t) for t in ts] for q, ts in graphs[which][d].items()} for d in ("i2t", "t2i")}
    rankings = random_rankings(graphs=[reference_graph], dataset_ids=dataset_ids, seed=7)
    ours = evaluate(label_set=coco[which], rankings=rankings, model_name="random-model")
    as_int = _as_int_rankings(rankings)
    for direction in ("i2t", "t2i"):
        reference = compute_eccv_metrics(as_int[direction], graphs[which][direction])
        expected = {
            "r1": reference["eccv_r1"],
            "r_precision": reference["eccv_rprecision"],
            "map_at_r": reference["eccv_map_at_r"],
            "r5": compute_r_at_k(as_int[direction], graphs[which][direction], K=5),
            "r10": compute_r_at_k(as_int[direction], graphs[which][direction], K=10),
        }
        for name, value in expected.items():
            assert abs(ours["scores"][direction][name] - float(value)) < 1e-9, (which, direction, name)
        assert ours["counts"][direction]["scored"] == len(graphs[which][direction])
    assert ours["warnings"] == []


def test_eccv_evaluation_through_the_package_metrics_object(coco):
    """The package's own public API (Metrics.eccv_metrics, eccv_recalls) agrees with evaluate on ECCV."""
    metrics = Metrics()
    dataset_ids = {
        "image": [str(i) for i in metrics.coco_gts["i2t"]],
        "caption": [str(c) for c in metrics.coco_gts["t2i"]],
    }
    rankings = random_rankings(graphs=[package_graph("eccv"), package_graph("cxc")], dataset_ids=dataset_ids, seed=3)
    ours = evaluate(label_set=coco["eccv"], rankings=rankings)["scores"]
    as_int = _as_int_rankings(rankings)
    reference = metrics.eccv_metrics(as_int, "all")
    for direction in ("i2t", "t2i"):
        assert abs(ours[direction]["map_at_r"] - reference["eccv_map_at_r"][direction]) < 1e-9
        assert abs(ours[direction]["r_precision"] - reference["eccv_rprecision"][direction]) < 1e-9
        assert abs(ours[direction]["r1"] - reference["eccv_r1"][direction]) < 1e-9
        assert abs(ours[direction]["r5"] - metrics.eccv_recalls(as_int, direction, K=5)[direction]) < 1e-9
    assert np.isfinite(ours["i2t"]["r1"])


def test_evaluating_an_annotator_of_the_set_warns(coco):
    rankings = {"i2t": {"42201": ["560256"]}}
    outcome = evaluate(label_set=coco["eccv"], rankings=rankings, model_name="clip")
    assert any("CLIP proposed the candidates" in warning for warning in outcome["warnings"])
    assert any("cover 1 of the 1,261" in warning for warning in outcome["warnings"])


def test_rankings_with_foreign_ids_warn_and_score_zero(coco):
    outcome = evaluate(label_set=coco["eccv"], rankings={"i2t": {"nope": ["x"]}, "t2i": {}})
    assert outcome["scores"]["i2t"]["r1"] == 0.0
    assert any("none of the rankings' 1 query ids" in warning for warning in outcome["warnings"])
    assert any("1 ranked ids are not in dataset" in warning for warning in outcome["warnings"])
