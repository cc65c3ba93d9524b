"""Who may see and change what: the one place that reads roles and the staff and superuser flags. Pages,
selectors and the API ask here; none of them compares roles or flags itself (a test reads the code to keep it so).

The rules:
- Operators (staff and superusers) act as requesters and see and manage everything.
- A requester manages their own datasets (and unowned ones, imported from the command line), the ranking
  runs on those, and their own campaigns with everything in them (HITs, assignments, reviews, exports).
- A researcher sees what a requester shared with them: the shared campaigns' labels, exports, evaluations
  and label sets, and the dataset behind each shared campaign with its ranking runs; besides that, only
  public label sets and what they made themselves (uploaded runs, their own label sets and evaluations).
  Nothing else: another requester's dataset names and run history stay out of sight.
- A worker sees only their own work; anonymous visitors see nothing here.

Out-of-scope objects are answered as missing (404), the same as ids that do not exist.

This module holds the roles; core knows no step. Each step scopes its own objects by them in its
`selectors/access.py` (`annotator/datasets/selectors/access.py`, `ranking/`, `campaigns/`, `crowd/`, `labels/`,
`research/`, `finegrained/`), importing only the steps before it. The one rule that runs backwards, a researcher
seeing the dataset behind a shared campaign, is registered by the campaigns step with the datasets step
(`annotator.datasets.selectors.access.datasets_shared_register`).
"""

from __future__ import annotations

from annotator.core.models.accounts import Role

READER_ROLES = frozenset({Role.REQUESTER, Role.RESEARCHER})


def user_role(user) -> str | None:
    """The user's role; operators act as requesters. None for anonymous users and users without a profile."""
    if user is None or not user.is_authenticated:
        return None
    if is_operator(user):
        return Role.REQUESTER
    profile = getattr(user, "profile", None)
    return profile.role if profile else None


def is_operator(user) -> bool:
    """Staff and superusers: they run the platform and see every tenant's work."""
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.is_superuser))


def has_role(user, *roles: str) -> bool:
    return user_role(user) in roles


def is_requester(user) -> bool:
    return user_role(user) == Role.REQUESTER


def is_researcher(user) -> bool:
    return user_role(user) == Role.RESEARCHER


def is_worker(user) -> bool:
    return user_role(user) == Role.WORKER


def is_reader(user) -> bool:
    """Requesters and researchers: the roles that read labels, exports, label sets and leaderboards."""
    return user_role(user) in READER_ROLES


def template_context(request) -> dict:
    """Context processor: `user_role` for templates (the nav), from the same rule as everything here.

    Lazy, so a page that never shows the nav does not load the user for it."""
    from django.utils.functional import SimpleLazyObject

    user = getattr(request, "user", None)
    return {
        "user_role": SimpleLazyObject(lambda: user_role(user) or ""),
        "user_is_operator": SimpleLazyObject(lambda: is_operator(user)),
    }
