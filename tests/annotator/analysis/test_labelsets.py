"""The pure label-set math: algebra, Table 2/3 measures, overlap, judged@k, annotator contributions."""

import pytest

from annotator.analysis.labelsets import (
    SetView,
    annotator_bias,
    annotator_contributions,
    combine,
    judged_at_k,
    multiplicity,
    overlap,
    positives_map,
    precision_recall,
    summary,
)

IC = "image_caption"


def view(i2t=(), t2i=(), pairs=None):
    return SetView(queries={"i2t": set(i2t), "t2i": set(t2i)}, pairs=dict(pairs or {}))


# Images 1, 2; captions 10, 11 (of image 1), 20 (of image 2).
CROWD = view(i2t=[1], t2i=[20], pairs={(IC, 1, 10): True, (IC, 1, 20): True, (IC, 1, 11): False, (IC, 2, 20): True})
ORIGINAL = view(i2t=[1, 2], t2i=[10, 11, 20], pairs={(IC, 1, 10): True, (IC, 1, 11): True, (IC, 2, 20): True})


def test_a_pair_answers_for_both_its_queries_and_unjudged_queries_are_absent():
    assert positives_map(CROWD, "i2t") == {1: {10, 20}}
    assert positives_map(CROWD, "t2i") == {20: {1, 2}}  # caption 10 is no t2i query of CROWD: unknown
    assert summary(CROWD)["i2t"] == {"queries": 1, "queries_with_positives": 1, "positives": 2, "judged": 3}


def test_union_on_the_first_sets_queries_is_eccv_captions_recipe():
    union = combine([CROWD, ORIGINAL], operation="union", query_rule="first")
    assert union.queries["i2t"] == {1} and union.queries["t2i"] == {20}
    # (1, 11): the crowd said no, the dataset pairs it: positive in the union.
    assert positives_map(union, "i2t") == {1: {10, 11, 20}}
    assert positives_map(union, "t2i") == {20: {1, 2}}


def test_union_defaults_to_every_query():
    union = combine([CROWD, ORIGINAL], operation="union")
    assert union.queries["t2i"] == {10, 11, 20}


def test_intersection_counts_a_judged_querys_unlisted_target_as_a_negative():
    both = combine([CROWD, ORIGINAL], operation="intersection")
    assert both.queries == {"i2t": {1}, "t2i": {20}, "t2t": set(), "i2i": set()}
    # (1, 20): the crowd says yes, ORIGINAL judged image 1 and does not list caption 20: negative.
    assert positives_map(both, "i2t") == {1: {10}}
    assert both.pairs[(IC, 1, 20)] is False


def test_difference_keeps_the_first_sets_positives_no_other_set_has():
    new = combine([CROWD, ORIGINAL], operation="difference")
    assert positives_map(new, "i2t") == {1: {20}}
    assert positives_map(new, "t2i") == {20: {1}}  # image 2 is caption 20's original: taken out


def test_combine_refuses_one_set_and_unknown_operations():
    with pytest.raises(ValueError):
        combine([CROWD], operation="union")
    with pytest.raises(ValueError):
        combine([CROWD, ORIGINAL], operation="xor")


def test_multiplicity_over_another_sets_queries():
    assert multiplicity(ORIGINAL, "i2t", queries=[1]) == {
        "queries": 1,
        "queries_judged": 1,
        "positives": 2,
        "mean": 2.0,
        "max": 2,
        "histogram": {2: 1},
    }
    # Queries the set did not judge add nothing.
    assert multiplicity(CROWD, "t2i", queries=[10, 20])["queries_judged"] == 1


def test_precision_and_recall_as_eccv_table_2():
    # Against the crowd: image 1's originals {10, 11} vs crowd {10, 20}: prec 1/2, recall 1/2.
    assert precision_recall(ORIGINAL, CROWD, "i2t") == {
        "queries": 1,
        "precision": 0.5,
        "recall": 0.5,
        "precision_queries": 1,
        "recall_queries": 1,
    }
    # Caption 20: originals {2} vs crowd {1, 2}.
    assert precision_recall(ORIGINAL, CROWD, "t2i")["precision"] == 1.0
    assert precision_recall(ORIGINAL, CROWD, "t2i")["recall"] == 0.5


def test_overlap_of_positives_on_common_queries():
    assert overlap(CROWD, ORIGINAL, "i2t") == {
        "queries": 1,
        "both": 1,
        "only_first": 1,
        "only_second": 1,
        "jaccard": 1 / 3,
    }


def test_judged_at_k_counts_labelled_items_and_lists_the_rest():
    outcome = judged_at_k(CROWD, {1: [10, 12, 11, 20], 2: [20]}, "i2t", k=3)
    assert outcome["judged_at_k"] == pytest.approx(2 / 3)
    assert outcome["unjudged"] == [(1, 12, 2)]
    assert outcome["queries_ranked"] == 1  # image 2 is no i2t query of CROWD


def test_annotator_contributions_and_leave_one_out_recall():
    proposals = {(IC, 1, 10): {"a": 1, "b": 3}, (IC, 1, 20): {"a": 2}, (IC, 1, 11): {"b": 1}, (IC, 2, 20): {"b": 2}}
    labels = {(IC, 1, 10): True, (IC, 1, 20): True, (IC, 1, 11): False, (IC, 2, 20): True}
    result = annotator_contributions(proposals, labels, k=1)
    assert result["a"] == {
        "proposed": 2,
        "judged": 2,
        "positives": 2,
        "alone": 1,
        "alone_share": 1 / 3,
        "precision_at_k": 1.0,
        "recall": 2 / 3,
        "loo_recall": 2 / 3,
    }
    assert result["b"]["precision_at_k"] == 0.0  # its rank-1 proposal (1, 11) is a negative
    assert result["b"]["alone"] == 1 and result["b"]["loo_recall"] == 2 / 3


def test_bias_of_single_annotator_sets():
    """Two annotators, one query: "a" ranks its own proposal first, "b" its own. On the set built from
    a's proposals only, a scores R@1 = 1 and b 0; on the full set both score 1: B_{a} = (0 + 1) / 2."""
    proposals = {(IC, 1, 10): {"a": 1}, (IC, 1, 11): {"b": 1}}
    labels = {(IC, 1, 10): True, (IC, 1, 11): True}
    rankings = {"a": {"i2t": {1: [10, 11]}}, "b": {"i2t": {1: [11, 10]}}}
    result = annotator_bias(proposals=proposals, labels=labels, queries={"i2t": {1}}, rankings=rankings, metrics=["r1"])
    only_a = next(entry for entry in result["subsets"] if entry["annotators"] == ["a"])
    assert only_a["r1"] == {"bias": 0.5, "self": 0.0, "non_self": 1.0}
    assert result["by_size"][1]["r1"]["bias"] == 0.5
    with pytest.raises(ValueError):
        annotator_bias(proposals=proposals, labels=labels, queries={"i2t": {1}}, rankings={"a": rankings["a"]})
