"""Pure rules for judging one answer against a gold item, and for spotting careless work.

ECCV Caption (Chun et al., ECCV 2022, Sec. 3.2): a gold positive is answered right with "100% YES" or "Partially YES";
a gold negative with "100% NO" or "Mostly NO". The strict option accepts only the extremes. For the
Crisscrossed Captions 0-5 similarity scale a gold positive must score >= threshold, a negative < threshold.
"""

from statistics import median

LENIENT_RIGHT = {
    "gold_positive": {"yes", "partially_yes"},
    "gold_negative": {"no", "mostly_no"},
}
STRICT_RIGHT = {
    "gold_positive": {"yes"},
    "gold_negative": {"no"},
}


def gold_choice_right(*, role: str, choice: str, strict: bool = False) -> bool:
    """Whether a four-choice answer to a gold item is right; an empty choice is wrong."""
    table = STRICT_RIGHT if strict else LENIENT_RIGHT
    return choice in table[role]


def gold_score_right(*, role: str, score: float | None, threshold: float) -> bool:
    """Whether a 0-5 similarity answer to a gold item is on the right side of `threshold`."""
    if score is None:
        return False
    if role == "gold_positive":
        return score >= threshold
    return score < threshold


# The qualification pass rule. The score is balanced accuracy: the mean of the accuracy on matching items and
# the accuracy on non-matching items. Answering the same to everything scores exactly 0.5 on a test holding
# both, so a pass mark must be above 0.5 (annotator.campaigns.services.options checks it).
QUALIFICATION_PASS_MARK_ABOVE = 0.5


def qualification_score(*, right_by_role: dict[str, tuple[int, int]]) -> float:
    """Balanced accuracy of a qualification attempt: `right_by_role` maps a role to (right, asked); roles not
    asked do not count. 1.0 when nothing was counted (every item left the pool since the attempt began)."""
    rates = [right / asked for right, asked in right_by_role.values() if asked]
    return sum(rates) / len(rates) if rates else 1.0


def qualification_passed(*, score: float, pass_mark: float) -> bool:
    """Whether a qualification score passes the campaign's mark."""
    return score >= pass_mark


def qualification_pool_warning(
    *, positives: int, negatives: int, test_items: int, min_share: float, max_share: float
) -> str:
    """What the requester should hear before launch about a qualification pool, or "" when it is fine.

    One-sided (no matching or no non-matching pairs): answering the same to everything passes. Unbalanced:
    the matching share is outside [min_share, max_share]. Too small: fewer pairs than two tests need (a
    retake would show items again)."""
    size = positives + negatives
    counts = f"{size} pairs: {positives} positive, {negatives} negative"
    if test_items <= 0:
        return ""
    if size == 0:
        return "The qualification pool is empty, so workers take no test before their first HIT."
    if not positives or not negatives:
        return f"The qualification pool is one-sided ({counts}): a worker who answers the same to everything passes."
    if not min_share - 1e-9 <= positives / size <= max_share + 1e-9:
        return (
            f"The qualification pool is unbalanced ({counts}): keep matching pairs between "
            f"{min_share:.0%} and {max_share:.0%}."
        )
    if size < 2 * test_items:
        return f"The qualification pool is small ({counts}) for tests of {test_items} items: retakes repeat items."
    return ""


def too_fast(*, seconds: list[float], min_seconds_per_item: float) -> bool:
    """Implausibly fast: the median time per item is below the campaign's minimum."""
    if not seconds or min_seconds_per_item <= 0:
        return False
    return median(seconds) < min_seconds_per_item


def same_answer_throughout(*, values: list, min_items: int = 4) -> bool:
    """The same answer to every item of a HIT (gold items included, so it cannot be honest work)."""
    present = [value for value in values if value not in ("", None)]
    return len(present) >= min_items and len(present) == len(values) and len(set(present)) == 1


def peer_agreement(*, own: dict, peers: dict) -> tuple[int, int]:
    """How many of a worker's positive/negative verdicts agree with the other workers' majority.

    `own` maps pair -> bool (positive), `peers` maps pair -> list of the other workers' bools. Pairs
    without peers, or where the peers are split evenly, are not compared. Returns (agreeing, compared).
    """
    agreeing = compared = 0
    for pair, verdict in own.items():
        votes = peers.get(pair) or []
        positive = sum(1 for vote in votes if vote)
        negative = len(votes) - positive
        if positive == negative:
            continue
        compared += 1
        agreeing += int(verdict == (positive > negative))
    return agreeing, compared
