"""Cross-encoders: a Hugging Face matching head that scores (image, caption) pairs jointly.

`ViltForImageAndTextRetrieval` (ViLT: one transformer over word and patch tokens; its score is the
retrieval logit) and `BlipForImageTextRetrieval` (BLIP's image-text matching head; its score is the log-odds
of "match" against "no match"), loaded from a local directory with its tokenizer and image processor.
Nothing is downloaded. Loaded once per worker process, like the annotators.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import torch

from annotator.ranking.services.checkpoints import CROSS_ENCODER, CROSS_ENCODER_TYPES, VLM_JUDGE
from workers.ranking.annotators import resolve_device, weights_digest


class CrossEncoder:
    def __init__(self, *, checkpoint_path: str, config: dict | None = None, device: str = "cpu"):
        from transformers import (
            AutoImageProcessor,
            AutoTokenizer,
            BlipForImageTextRetrieval,
            ViltForImageAndTextRetrieval,
        )

        self.checkpoint_path, self.config, self.device = checkpoint_path, dict(config or {}), device
        path = Path(checkpoint_path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"No cross-encoder checkpoint (config.json) in {path}.")
        self.model_type = json.loads((path / "config.json").read_text()).get("model_type", "")
        classes = {"vilt": ViltForImageAndTextRetrieval, "blip": BlipForImageTextRetrieval}
        if self.model_type not in classes:
            raise ValueError(
                f"{path} holds a {self.model_type or 'unknown'} model; a cross-encoder is one of "
                f"{', '.join(CROSS_ENCODER_TYPES.values())}."
            )
        self.dtype = torch.float16 if device.startswith("cuda") else torch.float32
        model = classes[self.model_type].from_pretrained(str(path), dtype=self.dtype, local_files_only=True)
        self.model = model.to(device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.image_processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True)
        text_config = getattr(self.model.config, "text_config", self.model.config)
        self.max_length = min(
            int(getattr(text_config, "max_position_embeddings", 40)),
            int(getattr(self.tokenizer, "model_max_length", 10**6) or 10**6),
        )
        self._hash = None

    def weights_hash(self) -> str:
        if self._hash is None:
            self._hash = weights_digest(Path(self.checkpoint_path), extra=f"cross_encoder:{self.model_type}")
        return self._hash

    @torch.inference_mode()
    def score(self, texts: list[str], images: list) -> torch.Tensor:
        """One score per (texts[i], images[i]) pair, higher = a better match; float32 on the CPU."""
        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        pixels = self.image_processor(images=[image.convert("RGB") for image in images], return_tensors="pt")
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        inputs["pixel_values"] = pixels["pixel_values"].to(self.dtype)
        if self.model_type == "vilt":
            if "token_type_ids" in batch:
                inputs["token_type_ids"] = batch["token_type_ids"]
            if "pixel_mask" in pixels:
                inputs["pixel_mask"] = pixels["pixel_mask"]
            inputs = {key: value.to(self.device) for key, value in inputs.items()}
            return self.model(**inputs).logits[:, 0].float().cpu()
        inputs = {key: value.to(self.device) for key, value in inputs.items()}
        logits = self.model(**inputs, use_itm_head=True).itm_score.float()
        return (logits[:, 1] - logits[:, 0]).cpu()


@functools.lru_cache(maxsize=2)
def _load(kind: str, checkpoint_path: str, config_json: str, device: str):
    if kind == VLM_JUDGE:
        from workers.ranking.judge import VLMJudge

        return VLMJudge(checkpoint_path=checkpoint_path, config=json.loads(config_json), device=device)
    return CrossEncoder(checkpoint_path=checkpoint_path, config=json.loads(config_json), device=device)


def load_cross_encoder(*, checkpoint_path: str, config: dict | None = None, device: str = "auto") -> CrossEncoder:
    """The cross-encoder of this checkpoint, loaded once per process and reused afterwards."""
    return load_pair_scorer(kind=CROSS_ENCODER, checkpoint_path=checkpoint_path, config=config, device=device)


def load_pair_scorer(*, kind: str, checkpoint_path: str, config: dict | None = None, device: str = "auto"):
    """What scores pairs for a re-ranking or judge run of `kind` (cross_encoder, vlm_judge): `.score(texts,
    images)` and `.weights_hash()`; loaded once per process."""
    return _load(kind, checkpoint_path, json.dumps(config or {}, sort_keys=True), resolve_device(device))
