"""Caption refinement as plain data: the word diff a correction HIT shows, the edit distance it records,
and the proposal generators (a registry of plugins, like the ranking annotators).

No ORM here. A generator takes `CaptionInput`s and returns proposals; the services store them.
"""

from __future__ import annotations

import difflib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

WORD = re.compile(r"\S+")


def words_of(text: str) -> list[str]:
    return WORD.findall(text or "")


def norm_word(word: str) -> str:
    return word.lower().strip(".,;:!?\"'()")


def word_diff(original: str, proposal: str) -> list[dict]:
    """The proposal as segments `{"text", "added"}`: words it adds to the original are marked `added`.

    Words are compared case- and punctuation-insensitively, so "ball." and "ball" are the same word. Words the
    proposal drops are not shown (the worker edits the proposal, not the original); they are counted in the
    last segment's `removed` list for the requester's view.
    """
    old, new = words_of(original), words_of(proposal)
    matcher = difflib.SequenceMatcher(a=[norm_word(w) for w in old], b=[norm_word(w) for w in new], autojunk=False)
    segments: list[dict] = []
    removed: list[str] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(old[a0:a1])
        if b1 > b0:
            added = tag in ("replace", "insert")
            text = " ".join(new[b0:b1])
            if segments and segments[-1]["added"] == added:
                segments[-1]["text"] += " " + text
            else:
                segments.append({"text": text, "added": added})
    if segments:
        segments[-1]["removed"] = removed
    return segments


def added_words(original: str, proposal: str) -> list[str]:
    return [word for segment in word_diff(original, proposal) if segment["added"] for word in segment["text"].split()]


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance in characters (insertions, deletions and substitutions each cost 1)."""
    if a == b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


# Generators --------------------------------------------------------------------------------------------


@dataclass
class CaptionInput:
    caption_id: int  # the caption's primary key
    image_source_id: str
    text: str  # the caption's current text


@dataclass
class Proposal:
    caption_id: int
    text: str
    gold: str = ""  # "", "accept" (a right proposal) or "fix" (a known-wrong one)
    gold_wrong_words: list[str] = field(default_factory=list)


class ProposalGenerator(ABC):
    """The plugin interface: `propose(captions, context)` returns at most one Proposal per caption.

    `context` carries what the generator was given besides the captions (for `scene_facts`: the scenes).
    A generator that wraps a captioning model registers itself from the worker side (where torch may be
    imported) under its own name; the services only see this interface.
    """

    name = ""
    description = ""
    needs: tuple[str, ...] = ()  # context keys the generator requires

    @abstractmethod
    def propose(self, captions: list[CaptionInput], context: Mapping) -> list[Proposal]: ...


GENERATORS: dict[str, type[ProposalGenerator]] = {}


def register_generator(name: str) -> Callable:
    def decorator(cls):
        cls.name = name
        GENERATORS[name] = cls
        return cls

    return decorator


def generator_get(name: str) -> ProposalGenerator:
    cls = GENERATORS.get(name)
    if cls is None:
        raise KeyError(f"No proposal generator {name!r}; known: {', '.join(sorted(GENERATORS)) or 'none'}.")
    return cls()


def proposals_parse(rows: Iterable[Mapping], *, known: Mapping[str, int]) -> tuple[list[Proposal], list[dict]]:
    """Rows of an uploaded proposals file -> Proposals and the offending rows (line, message).

    A row has `caption_id` (the caption's source id) and `proposal`; optional `gold` ("accept" or "fix") and
    `wrong_words` (space-separated, for a "fix" gold). `known`: caption source id -> primary key.
    """
    proposals, errors = [], []
    seen = set()
    for line, row in enumerate(rows, start=1):
        source_id = str(row.get("caption_id", "") or "").strip()
        text = " ".join(str(row.get("proposal", "") or "").split())
        gold = str(row.get("gold", "") or "").strip().lower()
        if not source_id:
            errors.append({"line": line, "message": "caption_id is missing."})
            continue
        if source_id not in known:
            errors.append({"line": line, "message": f"caption {source_id!r} is not in this dataset."})
            continue
        if not text:
            errors.append({"line": line, "message": "proposal is empty."})
            continue
        if len(text) > 1000:
            errors.append({"line": line, "message": "proposal is longer than 1000 characters."})
            continue
        if gold not in ("", "accept", "fix"):
            errors.append({"line": line, "message": f"gold must be empty, accept or fix, not {gold!r}."})
            continue
        if (source_id, gold) in seen:
            errors.append({"line": line, "message": f"caption {source_id!r} has a second proposal."})
            continue
        seen.add((source_id, gold))
        wrong = str(row.get("wrong_words", "") or "").split()
        proposals.append(Proposal(known[source_id], text, gold=gold, gold_wrong_words=wrong if gold == "fix" else []))
    return proposals, errors


def gold_check(*, expect: str, proposal: str, submitted: str, wrong_words: list[str]) -> bool:
    """Did a worker get a gold correction HIT right? A right proposal is accepted unchanged; a wrong one is
    changed so that none of its known-wrong words is left."""
    if expect == "accept":
        return words_of(submitted) == words_of(proposal)
    left = {norm_word(word) for word in words_of(submitted)}
    return submitted.strip() != proposal.strip() and not any(norm_word(word) in left for word in wrong_words)
