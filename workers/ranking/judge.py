"""A vision-language judge: a local generative VLM asked the HIT's own question about each (image, caption) pair.

Any `AutoModelForImageTextToText` checkpoint with its processor (LLaVA, Qwen2-VL, PaliGemma and the like) from
a local directory. The prompt is the caption and the question the crowd answers ("Is the image correctly
described?", annotator.crowd.scales.FOUR_CHOICE_QUESTION; config `question` overrides it), through the processor's
chat template when it has one (LLaVA-1.5's "USER: <image> ... ASSISTANT:" otherwise). The score is the
probability of "yes" against "no" at the first answer token: softmax over the log-sum-exp of the logits of
the tokens that start "yes" and "no" (any case, with or without a leading space). Nothing is generated and
nothing is downloaded.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import torch

from workers.ranking.annotators import weights_digest

QUESTION = "Is the image correctly described?"  # annotator.crowd.scales.FOUR_CHOICE_QUESTION (no Django here)
LLAVA_FORMAT = "USER: <image>\n{text} ASSISTANT:"


def _first_tokens(tokenizer, words: tuple[str, ...]) -> list[int]:
    ids = set()
    for word in words:
        for variant in (word, " " + word):
            encoded = tokenizer.encode(variant, add_special_tokens=False)
            if encoded and encoded[0] != tokenizer.unk_token_id:
                ids.add(encoded[0])
    return sorted(ids)


class VLMJudge:
    def __init__(self, *, checkpoint_path: str, config: dict | None = None, device: str = "cpu"):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.checkpoint_path, self.config, self.device = checkpoint_path, dict(config or {}), device
        path = Path(checkpoint_path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"No vision-language model (config.json) in {path}.")
        self.dtype = torch.float16 if device.startswith("cuda") else torch.float32
        model = AutoModelForImageTextToText.from_pretrained(str(path), dtype=self.dtype, local_files_only=True)
        self.model = model.to(device).eval()
        self.processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)
        self.tokenizer = self.processor.tokenizer
        self.tokenizer.padding_side = "left"  # the answer's first token is the last position of every row
        self.question = str(self.config.get("question") or QUESTION)
        self.yes = _first_tokens(self.tokenizer, ("yes", "Yes", "YES"))
        self.no = _first_tokens(self.tokenizer, ("no", "No", "NO"))
        if not self.yes or not self.no:
            raise ValueError(f"The tokenizer in {path} has no token for 'yes' or 'no'; a judge cannot be scored.")
        self._hash = None

    def weights_hash(self) -> str:
        if self._hash is None:
            spec = json.dumps({"question": self.question}, sort_keys=True)
            self._hash = weights_digest(Path(self.checkpoint_path), extra=f"vlm_judge:{spec}")
        return self._hash

    def prompt(self, caption: str) -> str:
        text = f"{caption}\n{self.question} Answer yes or no."
        if getattr(self.processor, "chat_template", None):
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
            return self.processor.apply_chat_template(messages, add_generation_prompt=True)
        return LLAVA_FORMAT.format(text=text)

    @torch.inference_mode()
    def score(self, texts: list[str], images: list) -> torch.Tensor:
        """P(yes) for each (texts[i], images[i]) pair, in [0, 1]; float32 on the CPU."""
        inputs = self.processor(
            images=[image.convert("RGB") for image in images],
            text=[self.prompt(text) for text in texts],
            return_tensors="pt",
            padding=True,
        )
        inputs = {
            key: value.to(self.device, self.dtype) if value.is_floating_point() else value.to(self.device)
            for key, value in inputs.items()
        }
        # Only the last position's logits: the language model head over a 150k vocabulary at every position
        # would cost more than the rest of the forward pass.
        keep = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(self.model.forward).parameters else {}
        last = self.model(**inputs, **keep).logits[:, -1, :].float()
        yes = torch.logsumexp(last[:, self.yes], dim=1)
        no = torch.logsumexp(last[:, self.no], dim=1)
        return torch.sigmoid(yes - no).cpu()
