"""The qualification pass rule and the pool warning (annotator.analysis.gold): pure, stated once."""

from annotator.analysis.gold import qualification_passed, qualification_pool_warning, qualification_score


def test_balanced_accuracy_fails_same_answers_and_passes_one_slip_in_six():
    always_yes = qualification_score(right_by_role={"gold_positive": (3, 3), "gold_negative": (0, 3)})
    always_no = qualification_score(right_by_role={"gold_positive": (0, 3), "gold_negative": (3, 3)})
    one_slip = qualification_score(right_by_role={"gold_positive": (3, 3), "gold_negative": (2, 3)})
    assert always_yes == always_no == 0.5
    assert not qualification_passed(score=always_yes, pass_mark=0.8)
    assert qualification_passed(score=one_slip, pass_mark=0.8) and round(one_slip, 3) == 0.833
    # Plain accuracy would give "always no" 5/6 on a test of one positive and five negatives; balanced, 0.5.
    assert qualification_score(right_by_role={"gold_positive": (0, 1), "gold_negative": (5, 5)}) == 0.5


def test_the_pool_warning_names_the_counts():
    def warn(positives, negatives, test_items=6):
        return qualification_pool_warning(
            positives=positives, negatives=negatives, test_items=test_items, min_share=0.3, max_share=0.7
        )

    assert "one-sided (40 pairs: 0 positive, 40 negative)" in warn(0, 40)
    assert "one-sided" in warn(16, 0)
    assert "unbalanced (40 pairs: 4 positive, 36 negative)" in warn(4, 36)
    assert "small (6 pairs: 3 positive, 3 negative)" in warn(3, 3)
    assert "empty" in warn(0, 0)
    assert warn(20, 20) == "" and warn(0, 0, test_items=0) == ""
