"""Machine annotators: register a model (a built-in kind or an installed plugin's) a ranking run can execute."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotator.core.errors import ApplicationError
from annotator.ranking.models.ranking import AnnotatorKind, MachineAnnotator
from annotator.ranking.services.checkpoints import checkpoint_check
from annotator.ranking.services.kinds import BUILT_IN_KINDS, CHECKPOINT_KINDS, registrable_kinds

# The built-in kinds a ranking run can execute; rankable_kinds() adds the installed plugins'.
RANKABLE_KINDS = BUILT_IN_KINDS


CHECKPOINT_HELP = {
    AnnotatorKind.CLIP: "the directory of a Hugging Face CLIP checkpoint",
    AnnotatorKind.OPEN_CLIP: "an OpenCLIP checkpoint file, with the model name (e.g. ViT-B-32) in config",
    AnnotatorKind.HF_DUAL: "the directory of a Hugging Face model with get_text_features and get_image_features",
    AnnotatorKind.CROSS_ENCODER: "the directory of a Hugging Face ViltForImageAndTextRetrieval or "
    "BlipForImageTextRetrieval checkpoint",
    AnnotatorKind.VLM_JUDGE: "the directory of a Hugging Face image-text-to-text model (LLaVA, Qwen2-VL, ...) "
    "with its processor",
}


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
    kinds = registrable_kinds()
    if kind not in kinds:
        raise ApplicationError(f"Unknown annotator kind {kind!r}; choose one of: {', '.join(kinds)}.")
    if kind in CHECKPOINT_KINDS and not checkpoint_path:
        raise ApplicationError(f"A {kind} annotator needs {CHECKPOINT_HELP[kind]}.")
    if kind in BUILT_IN_KINDS and kind not in CHECKPOINT_KINDS and checkpoint_path:
        raise ApplicationError(f"A {kind} annotator uses bundled weights; leave the checkpoint empty.")
    if config is not None and not isinstance(config, dict):
        raise ApplicationError("The annotator config must be a JSON object.")
    checkpoint_check(kind=kind, path=checkpoint_path, config=config or {})
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
