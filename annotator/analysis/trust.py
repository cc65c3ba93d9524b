"""Pure worker-trust statistics: gold accuracy with an interval, approval rate, the soft-block rule.

Wilson score interval (Wilson 1927), as used for binomial rates with few observations: with 3 of 4 gold
answers right the point estimate 0.75 says little; the interval (0.30, 0.95) says how little.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import exp, log, sqrt


def wilson_interval(successes: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion; (0, 1) when there is no evidence."""
    if total <= 0:
        return 0.0, 1.0
    p = successes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class TrustPolicy:
    """Thresholds of the automatic soft block and of "trusted" (see docs/quality.md for the env names)."""

    min_gold: int = 6  # gold answers needed before gold evidence may block (one qualification test)
    gold_accuracy: float = 0.8  # block when even the Wilson interval's upper end is below this
    min_decided: int = 10  # approved + rejected assignments needed before the approval rate may block
    approval_rate: float = 0.5  # block when the approval-rate interval's upper end is below this
    # The two-type model of spammer_posterior: careful workers vs workers answering gold at chance level.
    careful_accuracy: float = 0.9  # a careful crowd worker misses about one gold item in ten
    chance_accuracy: float = 0.5  # four choices, two of them right for a gold item (lenient scoring)
    spammer_prior: float = 0.2
    soft_block_posterior: float = 0.95  # block when P(guessing | gold record) is at least this
    trusted_min_gold: int = 6
    trusted_max_posterior: float = 0.05  # trusted when P(guessing | gold record) is at most this


@dataclass(frozen=True)
class Trust:
    """A worker's record with one requester. The gold counts include the qualification tests' answers
    (`test_correct` of `test_total`): a failed test is evidence against a worker, but a passed one is not
    evidence of their accuracy at work (people try harder on a test), so "trusted" reads the work alone."""

    gold_correct: int
    gold_total: int
    approved: int
    rejected: int
    hits_done: int  # submitted, approved or rejected assignments
    test_correct: int = 0
    test_total: int = 0

    @property
    def work_gold(self) -> tuple[int, int]:
        """(right, total) gold answers given at work: HITs and the shared reputation, not the tests."""
        return self.gold_correct - self.test_correct, self.gold_total - self.test_total

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_correct / self.gold_total if self.gold_total else None

    @property
    def gold_interval(self) -> tuple[float, float]:
        return wilson_interval(self.gold_correct, self.gold_total)

    @property
    def approval_rate(self) -> float | None:
        decided = self.approved + self.rejected
        return self.approved / decided if decided else None

    @property
    def approval_interval(self) -> tuple[float, float]:
        return wilson_interval(self.approved, self.approved + self.rejected)


def spammer_posterior(correct: int, total: int, policy: TrustPolicy) -> float:
    """P(the worker answers gold at chance level | their gold record), against a careful worker.

    Bayes with two worker types (a sequential probability ratio test in Wald's sense): each gold answer
    is right with `careful_accuracy` for a careful worker and `chance_accuracy` for a guesser; the prior
    share of guessers is `spammer_prior`. One miss in eight is likely from a careful worker (posterior
    0.02 with the defaults); one in two is not yet telling (0.41); two in six are (0.98).
    """
    wrong = total - correct
    log_ratio = correct * log(policy.chance_accuracy / policy.careful_accuracy) + wrong * log(
        (1 - policy.chance_accuracy) / (1 - policy.careful_accuracy)
    )
    log_odds = log(policy.spammer_prior / (1 - policy.spammer_prior)) + log_ratio
    if log_odds > 700:
        return 1.0
    odds = exp(log_odds)
    return odds / (1 + odds)


def soft_block_reason(trust: Trust, policy: TrustPolicy) -> str:
    """Why the worker should be soft-blocked, or "" when the evidence does not say so (yet)."""
    if trust.gold_total >= policy.min_gold:
        posterior = spammer_posterior(trust.gold_correct, trust.gold_total, policy)
        if posterior >= policy.soft_block_posterior:
            return (
                f"gold answers {trust.gold_correct}/{trust.gold_total}: the probability that they are guesses "
                f"is {posterior:.2f} (at least {policy.soft_block_posterior:.2f})"
            )
    if trust.gold_total >= policy.min_gold and trust.gold_interval[1] < policy.gold_accuracy:
        return (
            f"gold accuracy {trust.gold_correct}/{trust.gold_total}: even the upper end of its 95% interval "
            f"({trust.gold_interval[1]:.2f}) is below {policy.gold_accuracy:.2f}"
        )
    decided = trust.approved + trust.rejected
    if decided >= policy.min_decided and trust.approval_interval[1] < policy.approval_rate:
        return (
            f"approval rate {trust.approved}/{decided}: even the upper end of its 95% interval "
            f"({trust.approval_interval[1]:.2f}) is below {policy.approval_rate:.2f}"
        )
    return ""


def is_trusted(trust: Trust, policy: TrustPolicy) -> bool:
    """An established record at work: enough gold answers in HITs, and they are very unlikely to be guesses.
    A qualification test passed, however cleanly, does not count (Trust's docstring)."""
    correct, total = trust.work_gold
    guessing = spammer_posterior(correct, total, policy)
    return total >= policy.trusted_min_gold and guessing <= policy.trusted_max_posterior
