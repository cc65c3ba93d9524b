"""Annotator classes from installed plugin packages (entry-point group `vericap.annotators`).

The entry point's name is the kind and its object an `Annotator` subclass (workers/ranking/annotators.py):
constructed with `checkpoint_path`, `config` and `device`, it offers `encode_texts`, `encode_images`,
`weights_hash` and the `directions` it ranks. A built-in kind is never replaced by a plugin of that name.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from annotator.ranking.services.kinds import ENTRY_POINT_GROUP, plugin_kinds


class PluginError(Exception):
    """A plugin's entry point cannot be loaded or does not name an annotator class."""


def plugin_class(kind: str):
    """The class the installed plugin of `kind` declares; PluginError when it is missing or not an Annotator."""
    from workers.ranking.annotators import Annotator

    if kind not in plugin_kinds():
        raise PluginError(
            f"No installed plugin declares the annotator kind {kind!r} (entry-point group {ENTRY_POINT_GROUP})."
        )
    (point,) = [p for p in entry_points(group=ENTRY_POINT_GROUP) if p.name == kind][:1]
    try:
        cls = point.load()
    except Exception as error:  # an import error inside the plugin package: say which plugin
        raise PluginError(
            f"The {kind} plugin ({point.value}) does not load: {type(error).__name__}: {error}"
        ) from error
    if not (isinstance(cls, type) and issubclass(cls, Annotator)):
        raise PluginError(
            f"The {kind} plugin's entry point {point.value} is not a subclass of workers.ranking.annotators.Annotator."
        )
    unknown = set(cls.directions) - {"i2t", "t2i", "t2t", "i2i"}
    if not cls.directions or unknown:
        raise PluginError(f"The {kind} plugin declares unknown directions {sorted(unknown)}; use i2t, t2i, t2t, i2i.")
    return cls
