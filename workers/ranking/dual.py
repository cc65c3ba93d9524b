"""Dual encoders beyond CLIP: any Hugging Face model with `get_text_features` and `get_image_features`
(`hf_dual`: SigLIP's SiglipModel, ALIGN, ...) from a local directory, and OpenCLIP checkpoints
(`open_clip`: a checkpoint file and its model name, ViT-B-32 to ViT-bigG-14).

An OpenCLIP checkpoint is read as the state dict it is (OpenCLIP's `CLIP` module: `visual.*` vision tower,
`transformer.*` text tower, `text_projection`, `visual.proj`) and copied tensor by tensor into transformers'
`CLIPModel`, which computes the same function: the same pre-norm residual blocks, OpenCLIP's text pooling
at the highest token id (the end-of-text token; `eos_token_id` 2 selects that pooling in transformers), the
class token through `ln_post` and the projection. The open-clip-torch package itself is not needed at run
time (it needs torchvision, whose PyPI build does not load against the CPU torch wheel used here). Nothing
is downloaded: a missing file is an error that names what is expected.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
from pathlib import Path

import torch
import torch.nn.functional as F

from annotator.ranking.services.checkpoints import (
    OPEN_CLIP_CONFIG,
    OPEN_CLIP_SUFFIXES,
    open_clip_architecture,
)
from workers.ranking.annotators import Annotator, register, weights_digest

OPEN_CLIP_SIDE_FILES = (OPEN_CLIP_CONFIG, "vocab.json", "merges.txt", "tokenizer.json")
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


def _features(output) -> torch.Tensor:
    # transformers 5 returns a model output whose pooler_output is the projected feature; 4.x a tensor.
    return output if isinstance(output, torch.Tensor) else output.pooler_output


def _accepted(method, batch: dict) -> dict:
    """The entries of a tokenizer's or processor's output that `method` takes (token_type_ids, masks...)."""
    names = set(inspect.signature(method).parameters)
    return {key: value for key, value in batch.items() if key in names}


class HFEncoderMixin:
    """encode_texts / encode_images over `self.model`, `self.tokenizer`, `self.image_processor`."""

    padding: bool | str = True
    text_ignores: tuple[str, ...] = ()  # tokenizer outputs the model was trained without

    @torch.inference_mode()
    def encode_texts(self, texts: list[str]) -> torch.Tensor:
        batch = self.tokenizer(
            list(texts), padding=self.padding, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        accepted = _accepted(self.model.get_text_features, batch)
        inputs = {key: value.to(self.device) for key, value in accepted.items() if key not in self.text_ignores}
        features = _features(self.model.get_text_features(**inputs))
        return F.normalize(features.float(), dim=1).cpu()

    @torch.inference_mode()
    def encode_images(self, images: list) -> torch.Tensor:
        pixels = self.image_processor(images=[image.convert("RGB") for image in images], return_tensors="pt")
        inputs = _accepted(self.model.get_image_features, pixels)
        inputs = {
            key: value.to(self.device, self.dtype) if value.is_floating_point() else value.to(self.device)
            for key, value in inputs.items()
        }
        features = _features(self.model.get_image_features(**inputs))
        return F.normalize(features.float(), dim=1).cpu()


def _dtype(device: str) -> torch.dtype:
    return torch.float16 if device.startswith("cuda") else torch.float32


@register("hf_dual")
class HFDualAnnotator(HFEncoderMixin, Annotator):
    """Any Hugging Face dual encoder (`AutoModel` with get_text_features and get_image_features) from a local
    directory with its tokenizer and image processor. SigLIP pads every text to the full length it was
    trained with (config `padding`, default "max_length" for SigLIP and True otherwise), without a mask."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

        path = Path(self.checkpoint_path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"No Hugging Face dual-encoder checkpoint (config.json) in {path}.")
        self.dtype = _dtype(self.device)
        model = AutoModel.from_pretrained(str(path), dtype=self.dtype, local_files_only=True)
        if not (
            callable(getattr(model, "get_text_features", None)) and callable(getattr(model, "get_image_features", None))
        ):
            raise ValueError(
                f"{type(model).__name__} in {path} is not a dual encoder: an hf_dual annotator needs a model with "
                f"get_text_features and get_image_features (CLIPModel, SiglipModel, AlignModel, ...)."
            )
        self.model = model.to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.image_processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True)
        model_type = str(getattr(model.config, "model_type", ""))
        siglip = model_type.startswith("siglip")
        self.padding = self.config.get("padding", "max_length" if siglip else True)
        # SigLIP reads every padded text whole (trained without an attention mask, as its own processor calls it).
        self.text_ignores = ("attention_mask",) if siglip else ()
        text_config = getattr(model.config, "text_config", model.config)
        max_positions = int(getattr(text_config, "max_position_embeddings", 512))
        self.max_length = min(
            int(getattr(self.tokenizer, "model_max_length", max_positions) or max_positions), max_positions
        )
        self._hash = None

    def weights_hash(self) -> str:
        if self._hash is None:
            self._hash = weights_digest(Path(self.checkpoint_path), extra="hf_dual")
        return self._hash


# -- OpenCLIP ---------------------------------------------------------------------------------------------

BLOCK = {
    "ln_1": "layer_norm1",
    "ln_2": "layer_norm2",
    "attn.out_proj": "self_attn.out_proj",
    "mlp.c_fc": "mlp.fc1",
    "mlp.c_proj": "mlp.fc2",
}
TOWERS = {
    "transformer.resblocks.": "text_model.encoder.layers.",
    "visual.transformer.resblocks.": "vision_model.encoder.layers.",
}
RENAMES = {
    "token_embedding.weight": "text_model.embeddings.token_embedding.weight",
    "positional_embedding": "text_model.embeddings.position_embedding.weight",
    "ln_final.weight": "text_model.final_layer_norm.weight",
    "ln_final.bias": "text_model.final_layer_norm.bias",
    "visual.class_embedding": "vision_model.embeddings.class_embedding",
    "visual.positional_embedding": "vision_model.embeddings.position_embedding.weight",
    "visual.conv1.weight": "vision_model.embeddings.patch_embedding.weight",
    "visual.ln_pre.weight": "vision_model.pre_layrnorm.weight",
    "visual.ln_pre.bias": "vision_model.pre_layrnorm.bias",
    "visual.ln_post.weight": "vision_model.post_layernorm.weight",
    "visual.ln_post.bias": "vision_model.post_layernorm.bias",
    "logit_scale": "logit_scale",
}
REQUIRED = ("token_embedding.weight", "positional_embedding", "text_projection", "visual.conv1.weight", "visual.proj")


def open_clip_state(path: Path) -> dict[str, torch.Tensor]:
    """The state dict of an OpenCLIP checkpoint file (safetensors, or a torch file, possibly a training
    checkpoint with `state_dict` and DistributedDataParallel's `module.` prefix)."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise ValueError(f"{path} holds no state dict.")
    return {key.removeprefix("module."): value for key, value in state.items()}


def _blocks(state: dict, prefix: str) -> int:
    found = {int(m.group(1)) for key in state if (m := re.match(re.escape(prefix) + r"(\d+)\.", key))}
    return max(found) + 1 if found else 0


def open_clip_to_hf(state: dict[str, torch.Tensor], architecture: dict):
    """(CLIPConfig, CLIPModel state dict) for an OpenCLIP ViT state dict; ValueError naming what does not fit."""
    from transformers import CLIPConfig

    missing = [key for key in REQUIRED if key not in state]
    if missing:
        trunk = any(key.startswith("visual.trunk.") for key in state)
        hint = " (a timm vision tower: register the model's Hugging Face version as hf_dual)" if trunk else ""
        raise ValueError(f"Not an OpenCLIP ViT checkpoint: it lacks {', '.join(missing)}{hint}.")
    converted, used = {}, set()
    for key, target in RENAMES.items():
        if key in state:
            converted[target], _ = state[key], used.add(key)
    converted["text_projection.weight"] = state["text_projection"].t().contiguous()
    converted["visual_projection.weight"] = state["visual.proj"].t().contiguous()
    used.update({"text_projection", "visual.proj"})
    for source_prefix, target_prefix in TOWERS.items():
        for index in range(_blocks(state, source_prefix)):
            source, target = f"{source_prefix}{index}.", f"{target_prefix}{index}."
            for part in ("weight", "bias"):
                q, k, v = state[f"{source}attn.in_proj_{part}"].chunk(3, dim=0)
                for name, tensor in (("q_proj", q), ("k_proj", k), ("v_proj", v)):
                    converted[f"{target}self_attn.{name}.{part}"] = tensor.contiguous()
                used.add(f"{source}attn.in_proj_{part}")
                for old, new in BLOCK.items():
                    converted[f"{target}{new}.{part}"] = state[f"{source}{old}.{part}"]
                    used.add(f"{source}{old}.{part}")
    left = sorted(key for key in state if key not in used and key != "attn_mask")
    if left:
        raise ValueError(
            f"OpenCLIP weights this loader cannot place (layer scale, a custom tower?): {', '.join(left[:6])}."
        )
    text_width = state["token_embedding.weight"].shape[1]
    vision_width, _channels, patch, _ = state["visual.conv1.weight"].shape
    grid = math.isqrt(state["visual.positional_embedding"].shape[0] - 1)
    act = "quick_gelu" if architecture["quick_gelu"] else "gelu"
    config = CLIPConfig(
        text_config={
            "vocab_size": state["token_embedding.weight"].shape[0],
            "hidden_size": text_width,
            "intermediate_size": state["transformer.resblocks.0.mlp.c_fc.weight"].shape[0],
            "num_hidden_layers": _blocks(state, "transformer.resblocks."),
            "num_attention_heads": architecture["text_heads"],
            "max_position_embeddings": state["positional_embedding"].shape[0],
            "hidden_act": act,
            "eos_token_id": 2,  # pool at the highest token id, as OpenCLIP does (text.argmax(dim=-1))
        },
        vision_config={
            "hidden_size": vision_width,
            "intermediate_size": state["visual.transformer.resblocks.0.mlp.c_fc.weight"].shape[0],
            "num_hidden_layers": _blocks(state, "visual.transformer.resblocks."),
            "num_attention_heads": vision_width // architecture["vision_head_width"],
            "image_size": grid * patch,
            "patch_size": patch,
            "hidden_act": act,
        },
        projection_dim=state["text_projection"].shape[1],
    )
    return config, converted


@register("open_clip")
class OpenClipAnnotator(HFEncoderMixin, Annotator):
    """An OpenCLIP checkpoint file and its model name (config `model`, e.g. ViT-B-32, or the
    open_clip_config.json beside the file); the tokenizer files (vocab.json and merges.txt, or
    tokenizer.json) are read from the same directory, as OpenCLIP's hub repositories ship them."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        from transformers import AutoTokenizer, CLIPImageProcessor, CLIPModel, CLIPTokenizer

        path = Path(self.checkpoint_path)
        if not path.is_file() or path.suffix not in OPEN_CLIP_SUFFIXES:
            raise FileNotFoundError(f"No OpenCLIP checkpoint file at {path} (a {'/'.join(OPEN_CLIP_SUFFIXES)} file).")
        architecture = open_clip_architecture(model=str(self.config.get("model", "")), checkpoint=path)
        config, state = open_clip_to_hf(open_clip_state(path), architecture)
        self.dtype = _dtype(self.device)
        model = CLIPModel(config)
        missing, unexpected = model.load_state_dict(state, strict=False)
        missing = [key for key in missing if not key.endswith("position_ids")]
        if missing or unexpected:
            raise ValueError(
                f"The OpenCLIP weights in {path} do not fit: missing {missing[:4]}, unexpected {unexpected[:4]}."
            )
        self.model = model.to(self.device, self.dtype).eval()
        directory = path.parent
        if (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
            self.tokenizer = CLIPTokenizer(vocab=str(directory / "vocab.json"), merges=str(directory / "merges.txt"))
        elif (directory / "tokenizer.json").is_file():
            self.tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
        else:
            raise FileNotFoundError(
                f"No tokenizer beside {path.name}: expected vocab.json and merges.txt, or tokenizer.json."
            )
        self.max_length = config.text_config.max_position_embeddings
        preprocess = self._preprocess(directory)
        side = config.vision_config.image_size
        self.image_processor = CLIPImageProcessor(
            size={"shortest_edge": side},
            crop_size={"height": side, "width": side},
            image_mean=list(preprocess.get("mean", OPENAI_MEAN)),
            image_std=list(preprocess.get("std", OPENAI_STD)),
        )
        self._hash = None

    @staticmethod
    def _preprocess(directory: Path) -> dict:
        import json

        config_file = directory / OPEN_CLIP_CONFIG
        if not config_file.is_file():
            return {}
        return dict(json.loads(config_file.read_text()).get("preprocess_cfg") or {})

    def weights_hash(self) -> str:
        if self._hash is None:
            path = Path(self.checkpoint_path)
            digest = hashlib.sha256(f"open_clip:{self.config.get('model', '')}".encode())
            for part in (path, *(path.parent / name for name in OPEN_CLIP_SIDE_FILES)):
                if part.is_file():
                    digest.update(part.name.encode() + b"\0")
                    with open(part, "rb") as handle:
                        for block in iter(lambda: handle.read(1 << 20), b""):
                            digest.update(block)
            self._hash = digest.hexdigest()
        return self._hash
