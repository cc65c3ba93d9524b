"""Which kinds a ranking run can execute: the built-in ones and those of installed plugin packages.

A plugin is a Python package that declares an annotator class under the entry-point group
`vericap.annotators` (standard `importlib.metadata` entry points); the entry point's name is the kind. The
web process only reads the names (no class is imported here, so no torch); a gpu worker loads the class
(workers/ranking/plugins.py). docs/ranking.md shows a plugin.
"""

from __future__ import annotations

import functools
import re
from importlib.metadata import entry_points

from annotator.ranking.models.ranking import AnnotatorKind

ENTRY_POINT_GROUP = "vericap.annotators"
# Kinds a ranking run can execute (`external`, `uploaded` and `enlargement` are imported, not computed).
BUILT_IN_KINDS = (
    AnnotatorKind.CLIP,
    AnnotatorKind.OPEN_CLIP,
    AnnotatorKind.HF_DUAL,
    AnnotatorKind.MINILM_PIVOT,
    AnnotatorKind.TFIDF_PIVOT,
    AnnotatorKind.VISUAL,
)
# Kinds that score (image, caption) pairs jointly: they cannot embed a gallery, so they re-rank a finished
# run's top K (annotator.ranking.services.reranking) instead of ranking a dataset.
RERANKING_KINDS = (AnnotatorKind.CROSS_ENCODER, AnnotatorKind.VLM_JUDGE)
# Kinds that load weights the caller names (a directory or a file); the others bring their own.
CHECKPOINT_KINDS = (
    AnnotatorKind.CLIP,
    AnnotatorKind.OPEN_CLIP,
    AnnotatorKind.HF_DUAL,
    AnnotatorKind.CROSS_ENCODER,
    AnnotatorKind.VLM_JUDGE,
)
PLUGIN_NAME = re.compile(r"^[a-z][a-z0-9_]{1,31}$")


@functools.cache
def plugin_kinds() -> dict[str, str]:
    """{kind: "module:Class"} of the installed plugins, in name order; a name that would shadow a built-in
    kind or is not a short lower-case identifier is left out (the built-in kind wins). Read once per process:
    a package installed later appears when the process restarts."""
    reserved = set(AnnotatorKind.values)
    found = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in reserved or not PLUGIN_NAME.match(point.name):
            continue
        found.setdefault(point.name, point.value)
    return dict(sorted(found.items()))


def rankable_kinds() -> tuple[str, ...]:
    return tuple(str(kind) for kind in BUILT_IN_KINDS) + tuple(plugin_kinds())


def registrable_kinds() -> tuple[str, ...]:
    """Kinds an annotator may be registered as: those that rank and those that re-rank."""
    return rankable_kinds() + tuple(str(kind) for kind in RERANKING_KINDS)


def kind_choices() -> list[tuple[str, str]]:
    """(kind, label) of every kind a run can execute, built-in first, for the page, the API and the command."""
    built_in = [(str(kind), kind.label) for kind in (*BUILT_IN_KINDS, *RERANKING_KINDS)]
    return built_in + [(name, f"Plugin {target}") for name, target in plugin_kinds().items()]
