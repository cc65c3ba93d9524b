"""Tiny random-weight checkpoints, saved to a directory exactly as the real ones are laid out on disk.

`tiny_clip_dir` is a Hugging Face CLIP directory (config, safetensors, a WordPiece tokenizer, an image
processor); the builders of the other kinds live beside it so every test loads through the real path.
"""

from pathlib import Path

import torch

VOCAB = "[PAD] [UNK] [CLS] [SEP] [MASK] a the dog cat bus red blue green on in of with and".split()
TEXT_CONFIG = {
    "vocab_size": len(VOCAB),
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "max_position_embeddings": 16,
    "pad_token_id": 0,
    "bos_token_id": 2,
    "eos_token_id": 3,  # [SEP] closes every text: CLIP pools the text at that token
}
VISION_CONFIG = {
    "image_size": 32,
    "patch_size": 8,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
}


def save_wordpiece_tokenizer(directory: Path) -> None:
    from transformers import BertTokenizerFast

    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    BertTokenizerFast(vocab_file=str(directory / "vocab.txt"), model_max_length=16).save_pretrained(directory)


def tiny_clip_dir(directory: Path) -> Path:
    """A randomly initialised CLIP with a tiny WordPiece tokenizer, saved like a real checkpoint directory."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    directory.mkdir(parents=True, exist_ok=True)
    save_wordpiece_tokenizer(directory)
    config = CLIPConfig(text_config=TEXT_CONFIG, vision_config=VISION_CONFIG, projection_dim=16)
    torch.manual_seed(0)
    CLIPModel(config).save_pretrained(directory)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(directory)
    return directory


def tiny_siglip_dir(directory: Path) -> Path:
    """A randomly initialised SigLIP (transformers' SiglipModel) with a tiny WordPiece tokenizer."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    directory.mkdir(parents=True, exist_ok=True)
    save_wordpiece_tokenizer(directory)
    text = {key: value for key, value in TEXT_CONFIG.items() if key not in ("bos_token_id", "eos_token_id")}
    vision = {**VISION_CONFIG}
    torch.manual_seed(1)
    SiglipModel(SiglipConfig(text_config=text, vision_config=vision)).save_pretrained(directory)
    SiglipImageProcessor(size={"height": 32, "width": 32}).save_pretrained(directory)
    return directory


def tiny_bert_dir(directory: Path) -> Path:
    """A text-only model (BertModel): a Hugging Face checkpoint that is not a dual encoder."""
    from transformers import BertConfig, BertModel

    directory.mkdir(parents=True, exist_ok=True)
    save_wordpiece_tokenizer(directory)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    BertModel(config).save_pretrained(directory)
    return directory


# -- OpenCLIP: the state dict of open_clip's CLIP module (ViT towers), and a reference forward ----------------

OPEN_CLIP_WORDS = "a the dog cat bus red blue green on in of with and wall".split()
OPEN_CLIP_CFG = {
    "embed_dim": 16,
    "quick_gelu": False,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 16, "vocab_size": 0, "width": 32, "heads": 2, "layers": 2},
}


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte-to-character map, which CLIP's byte-level BPE vocabulary is written in."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = printable[:], 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars), strict=True))


def save_clip_bpe_tokenizer(directory: Path, words=OPEN_CLIP_WORDS) -> int:
    """vocab.json and merges.txt of a tiny CLIP BPE tokenizer (the format of OpenCLIP's hub repositories)
    that knows `words` whole; returns the vocabulary size."""
    import json

    base = list(bytes_to_unicode().values())
    vocab = base + [c + "</w>" for c in base]
    merges = []
    for word in words:
        parts = list(word[:-1]) + [word[-1] + "</w>"]
        while len(parts) > 1:
            merged = parts[0] + parts[1]
            if (parts[0], parts[1]) not in merges:
                merges.append((parts[0], parts[1]))
                vocab.append(merged)
            parts = [merged, *parts[2:]]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    (directory / "vocab.json").write_text(json.dumps({token: index for index, token in enumerate(vocab)}))
    (directory / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return len(vocab)


def _open_clip_tower(state: dict, prefix: str, *, width: int, layers: int, generator) -> None:
    def normal(*shape):
        return torch.randn(*shape, generator=generator) * 0.05

    for index in range(layers):
        block = f"{prefix}transformer.resblocks.{index}."
        state[block + "ln_1.weight"], state[block + "ln_1.bias"] = 1 + normal(width), normal(width)
        state[block + "attn.in_proj_weight"], state[block + "attn.in_proj_bias"] = (
            normal(3 * width, width),
            normal(3 * width),
        )
        state[block + "attn.out_proj.weight"], state[block + "attn.out_proj.bias"] = normal(width, width), normal(width)
        state[block + "ln_2.weight"], state[block + "ln_2.bias"] = 1 + normal(width), normal(width)
        state[block + "mlp.c_fc.weight"], state[block + "mlp.c_fc.bias"] = normal(4 * width, width), normal(4 * width)
        state[block + "mlp.c_proj.weight"], state[block + "mlp.c_proj.bias"] = normal(width, 4 * width), normal(width)


def tiny_open_clip_state(vocab_size: int, cfg: dict = OPEN_CLIP_CFG, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights under the names and shapes of open_clip's `CLIP` module (ViT vision tower)."""
    generator = torch.Generator().manual_seed(seed)
    text, vision, embed = cfg["text_cfg"], cfg["vision_cfg"], cfg["embed_dim"]
    tw, vw, patch = text["width"], vision["width"], vision["patch_size"]
    grid = vision["image_size"] // patch

    def normal(*shape):
        return torch.randn(*shape, generator=generator) * 0.05

    state = {
        "positional_embedding": normal(text["context_length"], tw),
        "text_projection": normal(tw, embed),
        "logit_scale": torch.tensor(4.6052),
        "token_embedding.weight": normal(vocab_size, tw),
        "ln_final.weight": 1 + normal(tw),
        "ln_final.bias": normal(tw),
        "visual.class_embedding": normal(vw),
        "visual.positional_embedding": normal(grid * grid + 1, vw),
        "visual.proj": normal(vw, embed),
        "visual.conv1.weight": normal(vw, 3, patch, patch),
        "visual.ln_pre.weight": 1 + normal(vw),
        "visual.ln_pre.bias": normal(vw),
        "visual.ln_post.weight": 1 + normal(vw),
        "visual.ln_post.bias": normal(vw),
    }
    _open_clip_tower(state, "", width=tw, layers=text["layers"], generator=generator)
    _open_clip_tower(state, "visual.", width=vw, layers=vision["layers"], generator=generator)
    return state


def tiny_open_clip_file(directory: Path, *, suffix: str = ".bin") -> Path:
    """open_clip_pytorch_model.bin (or .safetensors), open_clip_config.json and the BPE tokenizer files."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    vocab_size = save_clip_bpe_tokenizer(directory)
    cfg = {**OPEN_CLIP_CFG, "text_cfg": {**OPEN_CLIP_CFG["text_cfg"], "vocab_size": vocab_size}}
    (directory / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg, "preprocess_cfg": {}}))
    state = tiny_open_clip_state(vocab_size, cfg)
    path = directory / f"open_clip_pytorch_model{suffix}"
    if suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(state, str(path))
    else:
        torch.save(state, path)
    return path


def _reference_blocks(x, state, prefix, *, layers, heads, mask=None):
    """open_clip's ResidualAttentionBlock, written out: x + attn(ln_1(x)); x + mlp(ln_2(x)), GELU."""
    import torch.nn.functional as F

    width = x.shape[-1]
    for index in range(layers):
        block = f"{prefix}transformer.resblocks.{index}."
        attention = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        attention.load_state_dict(
            {
                "in_proj_weight": state[block + "attn.in_proj_weight"],
                "in_proj_bias": state[block + "attn.in_proj_bias"],
                "out_proj.weight": state[block + "attn.out_proj.weight"],
                "out_proj.bias": state[block + "attn.out_proj.bias"],
            }
        )
        h = F.layer_norm(x, (width,), state[block + "ln_1.weight"], state[block + "ln_1.bias"])
        x = x + attention(h, h, h, attn_mask=mask, need_weights=False)[0]
        h = F.layer_norm(x, (width,), state[block + "ln_2.weight"], state[block + "ln_2.bias"])
        h = F.gelu(F.linear(h, state[block + "mlp.c_fc.weight"], state[block + "mlp.c_fc.bias"]))
        x = x + F.linear(h, state[block + "mlp.c_proj.weight"], state[block + "mlp.c_proj.bias"])
    return x


@torch.no_grad()
def reference_open_clip_text(state, ids: torch.Tensor, cfg: dict = OPEN_CLIP_CFG) -> torch.Tensor:
    """open_clip's CLIP.encode_text: token + position embeddings, causal blocks, ln_final, pooled at argmax."""
    import torch.nn.functional as F

    n = ids.shape[1]
    x = state["token_embedding.weight"][ids] + state["positional_embedding"][:n]
    mask = torch.full((n, n), float("-inf")).triu(1)
    text = cfg["text_cfg"]
    x = _reference_blocks(x, state, "", layers=text["layers"], heads=text["heads"], mask=mask)
    x = F.layer_norm(x, (x.shape[-1],), state["ln_final.weight"], state["ln_final.bias"])
    return x[torch.arange(len(ids)), ids.argmax(dim=-1)] @ state["text_projection"]


@torch.no_grad()
def reference_open_clip_image(state, pixels: torch.Tensor, cfg: dict = OPEN_CLIP_CFG) -> torch.Tensor:
    """open_clip's VisionTransformer: patches, class token, ln_pre, blocks, ln_post of the class token, proj."""
    import torch.nn.functional as F

    vision = cfg["vision_cfg"]
    x = F.conv2d(pixels, state["visual.conv1.weight"], stride=vision["patch_size"]).flatten(2).transpose(1, 2)
    cls = state["visual.class_embedding"].expand(len(x), 1, -1)
    x = torch.cat([cls, x], dim=1) + state["visual.positional_embedding"]
    width = x.shape[-1]
    x = F.layer_norm(x, (width,), state["visual.ln_pre.weight"], state["visual.ln_pre.bias"])
    x = _reference_blocks(x, state, "visual.", layers=vision["layers"], heads=width // vision["head_width"])
    x = F.layer_norm(x[:, 0], (width,), state["visual.ln_post.weight"], state["visual.ln_post.bias"])
    return x @ state["visual.proj"]


# -- cross-encoders: matching heads that read an image and a caption together ---------------------------------


def tiny_vilt_dir(directory: Path) -> Path:
    """A randomly initialised ViltForImageAndTextRetrieval with a WordPiece tokenizer and ViLT's processor."""
    from transformers import ViltConfig, ViltForImageAndTextRetrieval, ViltImageProcessor

    directory.mkdir(parents=True, exist_ok=True)
    save_wordpiece_tokenizer(directory)
    config = ViltConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=16,
        image_size=32,
        patch_size=8,
        max_image_length=-1,
    )
    torch.manual_seed(2)
    ViltForImageAndTextRetrieval(config).save_pretrained(directory)
    ViltImageProcessor(size={"shortest_edge": 32}, size_divisor=8).save_pretrained(directory)
    return directory


def tiny_blip_dir(directory: Path) -> Path:
    """A randomly initialised BlipForImageTextRetrieval (its image-text matching head) with a tokenizer."""
    from transformers import BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor

    directory.mkdir(parents=True, exist_ok=True)
    save_wordpiece_tokenizer(directory)
    layers = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    config = BlipConfig(
        text_config={"vocab_size": len(VOCAB), "max_position_embeddings": 16, "encoder_hidden_size": 32, **layers},
        vision_config={"image_size": 32, "patch_size": 8, **layers},
        projection_dim=16,
    )
    torch.manual_seed(3)
    BlipForImageTextRetrieval(config).save_pretrained(directory)
    BlipImageProcessor(size={"height": 32, "width": 32}).save_pretrained(directory)
    return directory


# -- a vision-language judge: a tiny LLaVA (CLIP vision tower, Llama language model) with its processor --------

JUDGE_WORDS = (
    "<pad> <unk> <s> </s> <image> USER ASSISTANT : yes no Yes No a the dog cat bus red blue green on in of with "
    "and is image correctly described ? answer or . , wall plate pasta train surfer skateboard beach".split()
)


def tiny_llava_dir(directory: Path) -> Path:
    """A randomly initialised LlavaForConditionalGeneration and LlavaProcessor (a word-level tokenizer that
    knows <image>, yes and no), saved as a Hugging Face directory that AutoModelForImageTextToText loads."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    directory.mkdir(parents=True, exist_ok=True)
    vocab = {word: index for index, word in enumerate(JUDGE_WORDS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    processor.save_pretrained(directory)
    vision = CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8
    )
    text = LlamaConfig(
        vocab_size=len(JUDGE_WORDS),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=0,
    )
    config = LlavaConfig(
        vision_config=vision.to_dict(),
        text_config=text.to_dict(),
        image_token_index=vocab["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(4)
    LlavaForConditionalGeneration(config).save_pretrained(directory)
    return directory
