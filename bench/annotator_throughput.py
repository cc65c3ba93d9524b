"""Benchmark: annotator throughput at real model sizes with random weights, and what re-ranking COCO 5K takes.

Each model is built at its published size with random weights and saved to a temporary directory as the real
checkpoint is laid out, then loaded through Vericap's own loaders (nothing is downloaded):
- `open_clip` ViT-B-32 (151 M parameters): an OpenCLIP state-dict file and the model name, read by
  `workers.ranking.dual.OpenClipAnnotator`; images/s (640 x 480 pictures, preprocessing included) and
  captions/s (COCO-like sentences);
- `vlm_judge`, a small VLM: LLaVA's layout with a CLIP ViT-B/32 vision tower and a Qwen2-0.5B-sized
  language model (about 0.6 B parameters) through `workers.ranking.judge.VLMJudge`: pairs/s, P(yes) at the
  first answer token of the HIT's question;
- `cross_encoder` ViLT-B/32 (`ViltForImageAndTextRetrieval`, 384-pixel shorter side) and BLIP's base
  image-text matching head (`BlipForImageTextRetrieval`, ViT-B/16 at 384) through
  `workers.ranking.cross.CrossEncoder`: pairs/s, each pair its own picture as a re-ranking chunk has it.

Random weights cost exactly what trained ones do. A few batches each (after one untimed warm-up batch), on
whatever device torch finds (`--device`), with torch's thread count printed. The estimate: re-ranking COCO
5K (5,000 images, 25,000 captions) at top 25 in both directions is 5,000 x 25 + 25,000 x 25 = 750,000 pairs;
encoding it with the dual encoder is 5,000 images + 25,000 captions.

No Django and no database: it runs wherever torch does.

    .venv/bin/python bench/annotator_throughput.py                         # the CPU here, a few batches each
    python3 bench/annotator_throughput.py --batches 5 --out $OUT/throughput.json   # on a GPU machine
"""

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.ranking_models import save_clip_bpe_tokenizer, tiny_open_clip_state  # noqa: E402
from workers.ranking.annotators import resolve_device  # noqa: E402

COCO_IMAGES, COCO_CAPTIONS, TOP_K = 5000, 25000, 25
WORDS = (
    "a an the man woman person people dog cat bus train plate pizza table street city beach sea wave surfer "
    "skateboard ramp kitchen bowl fruit banana apple red blue white black green yellow two three small large "
    "standing sitting riding holding next to on in of with near top front group young old playing walking"
).split()
VIT_B_32 = {
    "embed_dim": 512,
    "vision_cfg": {"image_size": 224, "layers": 12, "width": 768, "patch_size": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 512, "heads": 8, "layers": 12},
}


def captions(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(9, 13))) + "." for _ in range(n)]


def pictures(n: int, rng: random.Random) -> list:
    from PIL import Image

    generator = torch.Generator().manual_seed(rng.randint(0, 10**6))
    return [
        Image.fromarray(torch.randint(0, 256, (480, 640, 3), generator=generator, dtype=torch.uint8).numpy())
        for _ in range(n)
    ]


def timed(function, batches: list) -> float:
    """Items per second over `batches` after one untimed warm-up call on the first."""
    function(batches[0])
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    started = time.perf_counter()
    for batch in batches:
        function(batch)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return sum(len(b) for b in batches) / (time.perf_counter() - started)


def wordpiece_dir(directory: Path) -> Path:
    from transformers import BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *WORDS]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(directory / "vocab.txt")).save_pretrained(directory)
    return directory


def bench_open_clip(work: Path, args, rng) -> dict:
    from workers.ranking.dual import OpenClipAnnotator

    directory = work / "open-clip"
    directory.mkdir()
    save_clip_bpe_tokenizer(directory, words=WORDS)
    state = tiny_open_clip_state(VIT_B_32["text_cfg"]["vocab_size"], VIT_B_32)
    path = directory / "open_clip_pytorch_model.bin"
    torch.save(state, path)
    parameters = sum(t.numel() for t in state.values())
    del state
    annotator = OpenClipAnnotator(checkpoint_path=str(path), config={"model": "ViT-B-32"}, device=args.device)
    image_batches = [pictures(args.image_batch, rng) for _ in range(args.batches)]
    text_batches = [captions(args.text_batch, rng) for _ in range(args.batches)]
    images_per_s = timed(annotator.encode_images, image_batches)
    captions_per_s = timed(annotator.encode_texts, text_batches)
    encode_s = COCO_IMAGES / images_per_s + COCO_CAPTIONS / captions_per_s
    return {
        "model": "OpenCLIP ViT-B-32 (open_clip kind)",
        "parameters_m": round(parameters / 1e6, 1),
        "images_per_s": round(images_per_s, 2),
        "captions_per_s": round(captions_per_s, 2),
        "coco5k_encode_s": round(encode_s, 1),
    }


def bench_cross(name: str, work: Path, args, rng) -> dict:
    from transformers import (
        BlipConfig,
        BlipForImageTextRetrieval,
        BlipImageProcessor,
        ViltConfig,
        ViltForImageAndTextRetrieval,
        ViltImageProcessor,
    )

    from workers.ranking.cross import CrossEncoder

    directory = wordpiece_dir(work / name)
    if name == "vilt":
        model, label = ViltForImageAndTextRetrieval(ViltConfig()), "ViLT-B/32 ViltForImageAndTextRetrieval"
        ViltImageProcessor().save_pretrained(directory)
    else:
        model, label = BlipForImageTextRetrieval(BlipConfig()), "BLIP base BlipForImageTextRetrieval (ITM)"
        BlipImageProcessor().save_pretrained(directory)
    parameters = sum(p.numel() for p in model.parameters())
    model.save_pretrained(directory)
    del model
    cross = CrossEncoder(checkpoint_path=str(directory), device=args.device)
    batches = [
        list(zip(captions(args.pair_batch, rng), pictures(args.pair_batch, rng), strict=True))
        for _ in range(args.batches)
    ]
    pairs_per_s = timed(lambda batch: cross.score([t for t, _ in batch], [p for _, p in batch]), batches)
    pairs = COCO_IMAGES * TOP_K + COCO_CAPTIONS * TOP_K
    return {
        "model": label,
        "parameters_m": round(parameters / 1e6, 1),
        "pairs_per_s": round(pairs_per_s, 2),
        "coco5k_top25_pairs": pairs,
        "coco5k_top25_hours": round(pairs / pairs_per_s / 3600, 2),
    }


def bench_judge(work: Path, args, rng) -> dict:
    """A small VLM judge: LLaVA's layout (CLIP ViT-B/32 vision tower at 224, a projector) around a
    Qwen2-0.5B-sized Llama language model (896 wide, 24 layers, 151,936-token vocabulary)."""
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

    from workers.ranking.judge import VLMJudge

    directory = work / "judge"
    directory.mkdir()
    words = ["<pad>", "<unk>", "<s>", "</s>", "<image>", "USER", "ASSISTANT", ":", "yes", "no", "Yes", "No", "?"]
    words += ["Is", "correctly", "described", "Answer", "or", *WORDS]
    backend = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(dict.fromkeys(words))}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )
    LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}),
        tokenizer=tokenizer,
        patch_size=32,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    ).save_pretrained(directory)
    vision = CLIPVisionConfig(
        hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12, patch_size=32
    )
    text = LlamaConfig(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=0,
    )
    config = LlavaConfig(
        vision_config=vision.to_dict(),
        text_config=text.to_dict(),
        image_token_index=words.index("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
    )
    model = LlavaForConditionalGeneration(config)
    parameters = sum(p.numel() for p in model.parameters())
    model.save_pretrained(directory)
    del model
    judge = VLMJudge(checkpoint_path=str(directory), device=args.device)
    batches = [
        list(zip(captions(args.pair_batch, rng), pictures(args.pair_batch, rng), strict=True))
        for _ in range(args.batches)
    ]
    pairs_per_s = timed(lambda batch: judge.score([t for t, _ in batch], [p for _, p in batch]), batches)
    pairs = COCO_IMAGES * TOP_K + COCO_CAPTIONS * TOP_K
    return {
        "model": "small VLM judge: LLaVA layout, CLIP ViT-B/32 + Qwen2-0.5B-sized Llama (vlm_judge kind)",
        "parameters_m": round(parameters / 1e6, 1),
        "pairs_per_s": round(pairs_per_s, 2),
        "coco5k_top25_pairs": pairs,
        "coco5k_top25_hours": round(pairs / pairs_per_s / 3600, 2),
    }


BENCHES = {"open_clip": bench_open_clip, "judge": bench_judge}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=2, help="timed batches per measure (after one warm-up)")
    parser.add_argument("--image-batch", type=int, default=16)
    parser.add_argument("--text-batch", type=int, default=64)
    parser.add_argument("--pair-batch", type=int, default=8)
    parser.add_argument(
        "--models", default="open_clip,vilt,blip,judge", help="comma-separated: open_clip, vilt, blip, judge"
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    args.device = resolve_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rng = random.Random(0)
    device = (
        torch.cuda.get_device_name(0) if args.device.startswith("cuda") else f"cpu, {torch.get_num_threads()} threads"
    )
    results = {"device": device, "batches": args.batches, "models": []}
    print(f"device: {device}; {args.batches} timed batches per measure after a warm-up")
    with torch.inference_mode(), tempfile.TemporaryDirectory() as scratch:
        for name in [m.strip() for m in args.models.split(",") if m.strip()]:
            work = Path(scratch)
            bench = BENCHES.get(name)
            row = bench(work, args, rng) if bench else bench_cross(name, work, args, rng)
            results["models"].append(row)
            print(json.dumps(row))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
