"""Gold exposure: how many workers saw a gold pair, and whether it became easier for those who had seen it.

Pure Python over plain tuples (no ORM). A gold item is worth something only while workers cannot tell it
apart or remember its answer; both signals below retire it (annotator.quality.services.gold_rotation).
"""

from __future__ import annotations

from dataclasses import dataclass

# A gold pair is "learned" when workers who had seen it before answer it right this much more often than
# first-time viewers, each group with at least LEARNED_MIN_ANSWERS answers.
LEARNED_MIN_ANSWERS = 3
LEARNED_MIN_RISE = 0.3


@dataclass(frozen=True)
class GoldAnswer:
    worker_id: int
    right: bool
    seen_before: bool  # the worker had been shown this pair earlier (another HIT, the qualification)


@dataclass(frozen=True)
class LearnedSignal:
    first_accuracy: float
    repeat_accuracy: float
    first_answers: int
    repeat_answers: int


def learned_signal(answers: list[GoldAnswer]) -> LearnedSignal | None:
    """The accuracy rise for repeat viewers, when there is enough evidence and it exceeds LEARNED_MIN_RISE."""
    first = [a.right for a in answers if not a.seen_before]
    repeat = [a.right for a in answers if a.seen_before]
    if len(first) < LEARNED_MIN_ANSWERS or len(repeat) < LEARNED_MIN_ANSWERS:
        return None
    first_accuracy = sum(first) / len(first)
    repeat_accuracy = sum(repeat) / len(repeat)
    if repeat_accuracy - first_accuracy < LEARNED_MIN_RISE:
        return None
    return LearnedSignal(first_accuracy, repeat_accuracy, len(first), len(repeat))


def per_worker_exposure(views: list[tuple[int, int]]) -> dict[int, dict]:
    """From (worker id, gold pair id) views: per worker, distinct gold pairs seen and the most views of one."""
    counts: dict[int, dict[int, int]] = {}
    for worker_id, pair_id in views:
        seen = counts.setdefault(worker_id, {})
        seen[pair_id] = seen.get(pair_id, 0) + 1
    return {
        worker_id: {"gold_pairs": len(seen), "views": sum(seen.values()), "most_views_of_one": max(seen.values())}
        for worker_id, seen in counts.items()
    }
