"""Statuses are explicit state machines: each TextChoices has a table of allowed transitions."""

from annotator.core.errors import ApplicationError


def check_transition(*, transitions: dict, current: str, target: str, what: str) -> None:
    """Raise ApplicationError (409) unless `current -> target` is in `transitions`."""
    if target not in transitions.get(current, ()):
        raise ApplicationError(f"A {what} that is {current} cannot become {target}.", status=409)
