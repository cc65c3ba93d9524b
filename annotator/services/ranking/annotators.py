"""Machine annotators: register a model (CLIP, MiniLM or TF-IDF with a pivot) a ranking run can execute."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotator.errors import ApplicationError
from annotator.models import AnnotatorKind, MachineAnnotator

# Kinds a ranking run can execute (`external` label sets are imported, not computed).
RANKABLE_KINDS = (AnnotatorKind.CLIP, AnnotatorKind.MINILM_PIVOT, AnnotatorKind.TFIDF_PIVOT, AnnotatorKind.VISUAL)


def annotator_register(
    *, name: str, kind: str, checkpoint_path: str = "", config: dict | None = None
) -> MachineAnnotator:
    """Create the MachineAnnotator `name`, or return it when it already exists with the same kind and checkpoint.

    Idempotent by name; an existing annotator with a different kind or checkpoint is refused (409) rather
    than silently changed, because its past runs were computed with the old model. Takes no lock beyond the
    unique constraint on `name` (a concurrent duplicate insert is caught and the winner returned).
    `weights_hash` is filled in by the worker when it first loads the weights.
    """
    name = (name or "").strip()
    checkpoint_path = (checkpoint_path or "").strip()
    if not name:
        raise ApplicationError("Give the annotator a name.")
    if len(name) > 100:
        raise ApplicationError("An annotator name has at most 100 characters.")
    if kind not in RANKABLE_KINDS:
        choices = ", ".join(RANKABLE_KINDS)
        raise ApplicationError(f"Unknown annotator kind {kind!r}; choose one of: {choices}.")
    if kind == AnnotatorKind.CLIP and not checkpoint_path:
        raise ApplicationError("A clip annotator needs the directory of a Hugging Face CLIP checkpoint.")
    if kind != AnnotatorKind.CLIP and checkpoint_path:
        raise ApplicationError(f"A {kind} annotator uses bundled weights; leave the checkpoint empty.")
    if config is not None and not isinstance(config, dict):
        raise ApplicationError("The annotator config must be a JSON object.")
    existing = MachineAnnotator.objects.filter(name=name).first()
    if existing is None:
        annotator = MachineAnnotator(name=name, kind=kind, checkpoint_path=checkpoint_path, config=config or {})
        annotator.full_clean()
        try:
            with transaction.atomic():
                annotator.save()
            return annotator
        except IntegrityError:  # a concurrent registration of the same name won the race
            existing = MachineAnnotator.objects.filter(name=name).first()
            if existing is None:
                raise
    if existing.kind != kind or existing.checkpoint_path != checkpoint_path:
        raise ApplicationError(
            f"An annotator named {name!r} already exists as {existing.kind}"
            + (f" from {existing.checkpoint_path}" if existing.checkpoint_path else "")
            + "; pick another name.",
            status=409,
        )
    return existing
