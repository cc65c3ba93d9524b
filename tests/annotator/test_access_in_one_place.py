"""Roles and flags are read in annotator/core/selectors/access.py only: each step's scoping (its selectors/access.py),
its views and selectors and the API ask it, and never read the staff or superuser flags or compare roles themselves
(where such checks were spread out they drifted apart, and a researcher could open pages the API refused)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Every step's pages and reads (annotator/<step>/views, annotator/<step>/selectors), and the API; access itself
# is the one module allowed to read roles and flags.
SCANNED = ("annotator/*/views", "annotator/*/selectors", "api")
ACCESS = "annotator/core/selectors/access.py"
FORBIDDEN = {
    "the staff flag": re.compile(r"\bis_staff\b"),
    "the superuser flag": re.compile(r"\bis_superuser\b"),
    "the profile's role": re.compile(r"profile(\.|__)role\b"),
    # A user's role (Role.X, not ItemRole.X) compared or looked up in a tuple, or user_role() compared.
    "a role comparison": re.compile(
        r"(==|!=)\s*Role\.|(?<![\w.])Role\.\w+\s*(==|!=)|\bin\s*[(\[{]\s*Role\.|user_role\([^)]*\)\s*(==|!=|in\b|not\b)"
    ),
}


def offenders(text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for what, pattern in FORBIDDEN.items():
            if pattern.search(code):
                found.append(f"{number}: {what}: {line.strip()}")
    return found


def test_no_view_selector_or_viewset_decides_access_itself():
    found = []
    scanned = [path for pattern in SCANNED for folder in ROOT.glob(pattern) for path in sorted(folder.rglob("*.py"))]
    assert len(scanned) > 80, "the scan must see every step's views and selectors"
    for path in scanned:
        if path.relative_to(ROOT).as_posix() != ACCESS:
            found += [f"{path.relative_to(ROOT)}:{hit}" for hit in offenders(path.read_text())]
    assert not found, "ask annotator.core.selectors.access instead:\n" + "\n".join(found)


def test_the_check_catches_each_kind_of_check():
    """The patterns find what they are for, and leave item roles and role declarations alone."""
    planted = [
        "if request.user.is_staff:",
        "everyone = user.is_superuser",
        "Campaign.objects.filter(owner__profile__role='requester')",
        "if user_role(user) == Role.RESEARCHER:",
        "if role not in (Role.REQUESTER, Role.RESEARCHER):",
        "return user_role(user) in READERS",
    ]
    for line in planted:
        assert offenders(line), line
    for line in ["if item.role == ItemRole.CANDIDATE:", "@role_required(Role.REQUESTER)", "roles = READERS"]:
        assert not offenders(line), line
