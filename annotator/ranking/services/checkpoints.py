"""What each kind expects on disk, checked before anything is queued (no torch here: files and JSON only).

A missing or wrong checkpoint is refused when the annotator is registered, with a message that names what
is expected, so the page and the API answer 400 and `manage.py rank` a command error instead of a run
that fails later on a gpu worker. The worker checks again when it loads (workers/ranking/dual.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from annotator.core.errors import ApplicationError

# The kinds' values (annotator.models.AnnotatorKind), spelled here so a gpu worker's loaders import this
# module without Django (bench/annotator_throughput.py runs them bare).
CLIP, OPEN_CLIP, HF_DUAL, CROSS_ENCODER, VLM_JUDGE = "clip", "open_clip", "hf_dual", "cross_encoder", "vlm_judge"

WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)
OPEN_CLIP_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
OPEN_CLIP_CONFIG = "open_clip_config.json"
# The matching heads a cross_encoder annotator loads, by the model_type of their config.json.
CROSS_ENCODER_TYPES = {"vilt": "ViltForImageAndTextRetrieval", "blip": "BlipForImageTextRetrieval"}
TOKENIZER_FILES = (("vocab.json", "merges.txt"), ("tokenizer.json",))
# OpenCLIP's ViT models (open_clip/model_configs/*.json): what the weights' shapes cannot tell, the text
# tower's heads, the vision tower's head width and the activation (the -quickgelu names use QuickGELU).
OPEN_CLIP_MODELS = {
    "ViT-B-32": {"text_heads": 8, "vision_head_width": 64},
    "ViT-B-16": {"text_heads": 8, "vision_head_width": 64},
    "ViT-L-14": {"text_heads": 12, "vision_head_width": 64},
    "ViT-L-14-336": {"text_heads": 12, "vision_head_width": 64},
    "ViT-H-14": {"text_heads": 16, "vision_head_width": 80},
    "ViT-g-14": {"text_heads": 16, "vision_head_width": 88},
    "ViT-bigG-14": {"text_heads": 20, "vision_head_width": 104},
}


def open_clip_model_names() -> list[str]:
    return sorted([*OPEN_CLIP_MODELS, *(f"{name}-quickgelu" for name in OPEN_CLIP_MODELS)])


def open_clip_architecture(*, model: str, checkpoint: Path) -> dict:
    """{"text_heads", "vision_head_width", "quick_gelu"} for `model`, or from the `open_clip_config.json`
    beside the checkpoint (the file OpenCLIP's hub repositories ship; its `model_cfg` wins)."""
    config_file = checkpoint.parent / OPEN_CLIP_CONFIG
    if config_file.is_file():
        try:
            cfg = json.loads(config_file.read_text())["model_cfg"]
            return {
                "text_heads": int(cfg["text_cfg"].get("heads", 8)),
                "vision_head_width": int(cfg["vision_cfg"].get("head_width", 64)),
                "quick_gelu": bool(cfg.get("quick_gelu", False)),
            }
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ApplicationError(
                f"{config_file} is not an OpenCLIP config: it needs model_cfg with text_cfg and vision_cfg ({error})."
            ) from None
    base = model.removesuffix("-quickgelu")
    if base not in OPEN_CLIP_MODELS:
        raise ApplicationError(
            f"Unknown OpenCLIP model {model!r}: give one of {', '.join(open_clip_model_names())} as the model "
            f"name, or put an {OPEN_CLIP_CONFIG} (with model_cfg) beside {checkpoint.name}."
        )
    return {**OPEN_CLIP_MODELS[base], "quick_gelu": model.endswith("-quickgelu")}


def _tokenizer_present(directory: Path) -> bool:
    return any(all((directory / name).is_file() for name in names) for names in TOKENIZER_FILES)


def check_open_clip(path: str, config: dict) -> None:
    checkpoint = Path(path)
    if checkpoint.is_dir():
        raise ApplicationError(
            f"{checkpoint} is a directory; an open_clip annotator needs the checkpoint file itself "
            f"(e.g. open_clip_pytorch_model.bin or open_clip_model.safetensors)."
        )
    if not checkpoint.is_file():
        raise ApplicationError(f"No OpenCLIP checkpoint file at {checkpoint} (a {'/'.join(OPEN_CLIP_SUFFIXES)} file).")
    if checkpoint.suffix not in OPEN_CLIP_SUFFIXES:
        raise ApplicationError(
            f"{checkpoint.name} is not an OpenCLIP checkpoint: expected a {', '.join(OPEN_CLIP_SUFFIXES)} file."
        )
    open_clip_architecture(model=str(config.get("model", "")), checkpoint=checkpoint)
    if not _tokenizer_present(checkpoint.parent):
        raise ApplicationError(
            f"No tokenizer beside {checkpoint.name}: an open_clip annotator reads vocab.json and merges.txt "
            f"(or tokenizer.json) from {checkpoint.parent}, as OpenCLIP's hub repositories ship them."
        )


def check_hf_directory(path: str, *, kind: str) -> None:
    """A Hugging Face checkpoint directory: config.json, weights, a tokenizer; `clip` also model_type clip."""
    directory = Path(path)
    what = {CLIP: "CLIP", CROSS_ENCODER: "cross-encoder", VLM_JUDGE: "vision-language model"}.get(
        kind, "Hugging Face dual-encoder"
    )
    if not directory.is_dir():
        raise ApplicationError(f"No {what} checkpoint directory at {directory}.")
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise ApplicationError(f"No {what} checkpoint (config.json) in {directory}.")
    try:
        model_type = json.loads(config_file.read_text()).get("model_type", "")
    except (ValueError, AttributeError):
        raise ApplicationError(f"{config_file} is not a JSON object.") from None
    if kind == CROSS_ENCODER and model_type not in CROSS_ENCODER_TYPES:
        raise ApplicationError(
            f"{directory} holds a {model_type or 'unknown'} model; a cross_encoder annotator expects a matching "
            f"head: {', '.join(CROSS_ENCODER_TYPES.values())}."
        )
    if kind == CLIP and model_type != "clip":
        raise ApplicationError(
            f"{directory} holds a {model_type or 'unknown'} model; a clip annotator expects a CLIPModel "
            f"(model_type clip). Register it as hf_dual if it has get_text_features and get_image_features."
        )
    if not any((directory / name).is_file() for name in WEIGHT_FILES):
        raise ApplicationError(f"No weights in {directory}: expected one of {', '.join(WEIGHT_FILES)}.")


def checkpoint_check(*, kind: str, path: str, config: dict) -> None:
    """Raise an ApplicationError (400) naming what is missing when `path` cannot hold a `kind` checkpoint."""
    if kind == OPEN_CLIP:
        check_open_clip(path, config)
    elif kind in (CLIP, HF_DUAL, CROSS_ENCODER, VLM_JUDGE):
        check_hf_directory(path, kind=kind)
    elif path and not Path(path).exists():
        raise ApplicationError(f"Nothing at {path}: the {kind} plugin was given a checkpoint that does not exist.")
