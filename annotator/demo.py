"""What `manage.py demo_setup` does, step by step; each step is idempotent so `make demo` can run again."""

from django.core.management.base import OutputWrapper


def demo_setup(*, out: OutputWrapper) -> None:
    for step in (demo_users, demo_dataset, demo_ranking, demo_campaign):
        step(out=out)


def demo_users(*, out: OutputWrapper) -> None:
    """Owned by the foundation: requester, researcher and worker logins, printed."""


def demo_dataset(*, out: OutputWrapper) -> None:
    """Owned by the foundation issue: import fixtures/demo into the dataset `demo`."""


def demo_ranking(*, out: OutputWrapper) -> None:
    """Owned by the machine-annotator issue: run minilm_pivot and tfidf_pivot over `demo`."""


def demo_campaign(*, out: OutputWrapper) -> None:
    """Owned by the campaign issue: build and launch a campaign on `demo`."""
