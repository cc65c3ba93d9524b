"""Which captions are not descriptions of an image (ECCV Caption App. C.1): heuristics on the text alone.

"I am unable to see an image above", "There is no image here": captions written by people who saw no picture
or did not describe it. `annotator.labels.services.cleanup.cleanup_detect` proposes them for removal.
"""

from __future__ import annotations

import re

# Phrases of captions written by people who saw no picture or did not describe it (ECCV App. C.1 list).
NOT_DESCRIPTION_PATTERNS = [
    (re.compile(r"\b(no|not an?|any)\s+(image|picture|photo)s?\b", re.I), "says there is no image"),
    (
        re.compile(r"\b(unable|can ?not|can'?t|cant|could ?n[o']?t)\s+(to\s+)?(see|view|load|tell)\b", re.I),
        "says it cannot see",
    ),
    (
        re.compile(
            r"\b(blank|empty)\s+(image|picture|page|screen)|\bis\s+(a\s+)?blank\b|\ba blank(\s+every|\s*[.!?]|\s*$)",
            re.I,
        ),
        "mentions a blank image",
    ),
    (re.compile(r"^\s*(why|what|how|where|who)\b.*\b(i|my|me|you)\b", re.I), "a question to someone"),
    (re.compile(r"\b(this|the)\s+(hit|task|page)\b", re.I), "talks about the task"),
    (re.compile(r"\b(i|my|me)\b\s", re.I), "first person"),
    (re.compile(r"\?\s*$"), "a question"),
    (re.compile(r"\b(i\s+don'?t\s+know|no\s+idea)\b", re.I), "does not know"),
]
MIN_WORDS = 3


def caption_not_description_reasons(text: str) -> list[str]:
    """Why a caption looks like it is not a description of an image ([] when it looks fine)."""
    reasons = [reason for pattern, reason in NOT_DESCRIPTION_PATTERNS if pattern.search(text or "")]
    if len((text or "").split()) < MIN_WORDS:
        reasons.append(f"fewer than {MIN_WORDS} words")
    # First person alone is weak evidence ("I see two dogs" is still a description): needs company.
    if reasons == ["first person"]:
        return []
    return reasons
