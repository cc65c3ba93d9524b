"""The `scene_facts` proposal generator: a template generator for the synthetic scenes, registered in the
generator registry of annotator/analysis/refinement.py when the app starts (annotator/apps.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from annotator.analysis.refinement import (
    CaptionInput,
    Proposal,
    ProposalGenerator,
    norm_word,
    register_generator,
    words_of,
)
from annotator.scenarios import synthetic as vocab


@dataclass
class _Mention:
    kind: str
    noun_index: int  # index of the noun in the caption's words
    group: object


def _mentions(words: list[str], scene, vocab) -> list[_Mention]:
    normed = [norm_word(w) for w in words]
    found = []
    for group in scene.groups:
        names = {group.kind, vocab.PLURALS[group.kind]}
        for index, word in enumerate(normed):
            if word in names:
                found.append(_Mention(kind=group.kind, noun_index=index, group=group))
                break
    return found


def _stated(words: list[str], text: str, scene, vocab) -> tuple[set, list[_Mention]]:
    """The facts a caption of `scene` states, read back from its words (a caption states only true facts)."""
    normed = [norm_word(w) for w in words]
    lowered = " ".join(normed)
    mentions = _mentions(words, scene, vocab)
    facts: set = set()
    for mention in mentions:
        group = mention.group
        facts.add(("count", group.kind, group.count))
        before = normed[max(0, mention.noun_index - 3) : mention.noun_index]
        if group.color in before:
            facts.add(("color", group.kind, group.color))
        if any(word in before for word in vocab.SIZE_WORDS[group.size]):
            facts.add(("size", group.kind, group.size))
        after = " ".join(normed[mention.noun_index + 1 : mention.noun_index + 5])
        if any(after.startswith(phrase) for phrase in vocab.THIRD_PHRASES[group.third]):
            facts.add(("pos", group.kind, group.third))
    if any(phrase in lowered for phrase in vocab.BACKGROUNDS[scene.background][1]):
        facts.add(("bg", scene.background))
    return facts, mentions


def _article(words: list[str], at: int) -> list[str]:
    """ "a" or "an" before the word now at `at`, as it starts (keeping the article's capital)."""
    if at > 0 and words[at - 1].lower() in ("a", "an"):
        article = "an" if words[at][:1].lower() in "aeiou" else "a"
        words[at - 1] = article.capitalize() if words[at - 1][0].isupper() else article
    return words


def _insert(words: list[str], fact, mentions: list[_Mention], vocab) -> list[str]:
    words = list(words)
    if fact[0] == "bg":
        phrase = vocab.BACKGROUNDS[fact[1]][1][0]
        last = words[-1]
        tail = last[len(last.rstrip(".!?")) :]
        words[-1] = last[: len(last) - len(tail)] if tail else last
        return words + phrase.split()[:-1] + [phrase.split()[-1] + tail]
    mention = next(m for m in mentions if m.kind == fact[1])
    noun = mention.noun_index
    if fact[0] == "color":
        return _article(words[:noun] + [fact[2]] + words[noun:], noun)
    if fact[0] == "size":
        at = noun
        if noun > 0 and norm_word(words[noun - 1]) in vocab.COLORS:
            at = noun - 1
        return _article(words[:at] + [vocab.SIZE_WORDS[fact[2]][0]] + words[at:], at)
    # pos: after the noun, keeping the noun's punctuation after the phrase
    last = words[noun]
    tail = last[len(last.rstrip(".,;!?")) :]
    phrase = vocab.THIRD_PHRASES[fact[2]][0].split()
    return (
        words[:noun]
        + [last[: len(last) - len(tail)] if tail else last]
        + phrase[:-1]
        + [phrase[-1] + tail]
        + words[noun + 1 :]
    )


@register_generator("scene_facts")
class SceneFactsGenerator(ProposalGenerator):
    """A template generator for the synthetic scenes (no captioning model): it knows each image's scene, reads
    which of its facts a caption already states, and adds the one missing fact that leaves the fewest other
    images matching (an attribute of an object the caption names, or the background). What it writes is
    therefore always true of the image; it is a stand-in for a captioning model, not one.

    Context: `scenes`, a mapping image source id -> scene (the `scenes.json` the generator writes).
    With `gold_every` = n > 0, every n-th caption also yields a known-wrong gold proposal (a colour the
    object does not have), and the one after it a known-right gold proposal.
    """

    description = "Adds the most distinguishing missing fact of the image's synthetic scene (template, no model)."
    needs = ("scenes",)

    def propose(self, captions: list[CaptionInput], context: Mapping) -> list[Proposal]:
        scenes = {str(key): _scene_from(value, vocab) for key, value in context["scenes"].items()}
        index = vocab.FactIndex(list(scenes.values()))
        gold_every = int(context.get("gold_every") or 0)
        proposals: list[Proposal] = []
        for number, caption in enumerate(captions):
            scene = scenes.get(str(caption.image_source_id))
            if scene is None:
                continue
            words = words_of(caption.text)
            if not words:
                continue
            stated, mentions = _stated(words, caption.text, scene, vocab)
            named = {m.kind for m in mentions}
            missing = [
                fact
                for fact in sorted(scene.facts(), key=repr)
                if fact not in stated and fact[0] != "count" and (fact[0] == "bg" or fact[1] in named)
            ]
            if not missing:
                continue
            best = min(missing, key=lambda fact: (len(index.matches(stated | {fact})), repr(fact)))
            text = " ".join(_insert(words, best, mentions, vocab))
            if gold_every and number % gold_every == 0 and mentions:
                mention = mentions[0]
                wrong = next(c for c in sorted(vocab.COLORS) if c != mention.group.color)
                if ("color", mention.kind, mention.group.color) in stated:
                    wrong_words = words_of(caption.text)
                    wrong_words[mention.noun_index - 1] = wrong
                    wrong_text = " ".join(wrong_words)
                else:
                    wrong_text = " ".join(_insert(words, ("color", mention.kind, wrong), mentions, vocab))
                proposals.append(Proposal(caption.caption_id, wrong_text, gold="fix", gold_wrong_words=[wrong]))
            elif gold_every and number % gold_every == 1:
                proposals.append(Proposal(caption.caption_id, text, gold="accept"))
            proposals.append(Proposal(caption_id=caption.caption_id, text=text))
        return proposals


def _scene_from(value, vocab):
    if isinstance(value, vocab.Scene):
        return value
    groups = tuple(vocab.Group(**group) for group in value["groups"])
    return vocab.Scene(image_id=int(value["image_id"]), background=value["background"], groups=groups)


def scene_correct(text: str, scene) -> str:
    """What a careful worker who sees the scene writes: every colour or size word in front of an object the
    caption names is made true of the image (the fewest edits: one word each), everything else is kept."""
    scene = _scene_from(scene, vocab)
    words = words_of(text)
    for mention in _mentions(words, scene, vocab):
        group = mention.group
        for index in range(max(0, mention.noun_index - 3), mention.noun_index):
            word = norm_word(words[index])
            if word in vocab.COLORS and word != group.color:
                words[index] = group.color
            elif word in ("big", "large", "small", "little") and word not in vocab.SIZE_WORDS[group.size]:
                words[index] = vocab.SIZE_WORDS[group.size][0]
    return " ".join(words)
