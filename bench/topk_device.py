"""Benchmark: the ranking's top-K phase on the compute device (CUDA when present) at COCO-full size, checked.

The pipeline's own code (`workers.ranking.topk`: chunked products, the self-pivot patch, `torch.topk` with
exact ties) over synthetic embeddings shaped like a pivot annotator's on COCO-full: `--images` images,
`--per-image` captions each, `--dim` dimensions, captions scattered around their image's centre, 1% of
captions an exact copy of another caption of the same image (ties that straddle the K-th place), images
the normalised sum of their captions (the pivot, patched so a caption is never its own image's pivot).
Both directions, at the pipeline's default block (`RANKING_BLOCK_MB` 256) and at each `--block-mb`.

Per direction it prints seconds and query rows per second, and checks:
- exact: `--check-rows` random query rows ranked by brute force on the same device (the whole row from the
  same block, sorted by score then column) give the same K columns in the same order; and how many of them
  differ when the row is computed alone (a GPU's product rounds by the block's shape: the reason the shards
  keep the single run's chunk boundaries);
- shards: the first chunks computed as one range and as two (a shard boundary) are identical;
- float16: on CUDA the pipeline encodes in float16; the overlap of its top-K with a float32 ranking of the
  same rows on the CPU says what that costs.

No Django and no database: it runs wherever torch does.

    .venv/bin/python bench/topk_device.py --images 2000                    # a quick look on the CPU
    python3 bench/topk_device.py --block-mb 2048 --out $OUT/topk.json      # COCO-full on a GPU machine
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workers.ranking.topk import SelfPivot, chunk_rows, chunked_topk, dense_block  # noqa: E402

DEFAULT_BLOCK_MB = 256
ROWS_PER_CHUNK = 1024  # RANKING_CHUNK_ROWS's default


def synthetic(*, images: int, per_image: int, dim: int, seed: int, device: str, dtype):
    """Caption embeddings around their image's centre, 1% exact duplicates, and the pivot image vectors."""
    generator = torch.Generator(device=device).manual_seed(seed)
    centres = torch.nn.functional.normalize(torch.randn(images, dim, generator=generator, device=device), dim=1)
    owner = torch.arange(images, device=device).repeat_interleave(per_image)
    noise = torch.randn(len(owner), dim, generator=generator, device=device) / dim**0.5
    captions = torch.nn.functional.normalize(centres[owner] + noise, dim=1)
    copies = torch.nonzero(torch.rand(len(owner), generator=generator, device=device) < 0.01).flatten()
    copies = copies[copies % per_image != 0]  # copy the image's first caption
    captions[copies] = captions[copies - copies % per_image]
    sums = torch.zeros(images, dim, device=device).index_add_(0, owner, captions)
    norms = sums.norm(dim=1)
    pivot = SelfPivot.build(owner=owner, image_sums_norms=norms, caption_sq_norms=torch.ones(len(owner), device=device))
    image_vectors = sums / norms[:, None]
    return captions.to(dtype), image_vectors.to(dtype), pivot, captions, image_vectors


def directions(captions, image_vectors, pivot):
    return {
        "t2i": (captions, image_vectors, pivot.patch_caption_queries),
        "i2t": (image_vectors, captions, pivot.patch_image_queries),
    }


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_direction(queries, targets, patch, *, k: int, rows: int, device: str, keep: bool):
    block = dense_block(queries, targets)
    kept = torch.empty((len(queries), k), dtype=torch.int32) if keep else None
    sync(device)
    started = time.perf_counter()
    for _chunk, start, stop, _values, indices in chunked_topk(
        n_queries=len(queries), block=block, k=k, rows_per_chunk=rows, patch=patch
    ):
        if kept is not None:
            kept[start:stop] = indices.to(torch.int32)
    sync(device)
    return time.perf_counter() - started, kept


def brute_force(queries, targets, patch, row: int, k: int, rows: int = 1) -> torch.Tensor:
    """The row's K best columns: every score, sorted by score descending, then by column (stable sort).

    The scores come from the block of `rows` rows that holds the row, as the pipeline computes them: a GPU's
    matrix product may round a row differently in a block of another shape."""
    start = row - row % rows
    stop = min(len(queries), start + rows)
    scores = dense_block(queries, targets)(start, stop)
    patch(scores, start, stop)
    return torch.sort(-scores[row - start], stable=True).indices[:k].cpu()


def float32_overlap(queries32, targets32, patch32, rows, kept, k: int) -> float:
    """Mean share of the pipeline's top-K that a float32 CPU ranking of the same rows also has."""
    shared = 0
    for row in rows:
        reference = set(brute_force(queries32, targets32, patch32, row, k).tolist())
        shared += len(reference & set(kept[row].tolist()))
    return shared / (k * len(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=123_287)  # COCO train + val 2014
    parser.add_argument("--per-image", type=int, default=5)
    parser.add_argument("--dim", type=int, default=384)  # minilm
    parser.add_argument("--k", type=int, default=25)
    parser.add_argument("--block-mb", type=int, nargs="*", default=[], help="more block sizes to time")
    parser.add_argument("--check-rows", type=int, default=200)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    report = {
        "device": torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu",
        "torch": torch.__version__,
        "images": args.images,
        "captions": args.images * args.per_image,
        "dim": args.dim,
        "k": args.k,
        "dtype": str(dtype),
        "runs": [],
    }
    captions, image_vectors, pivot, captions32, images32 = synthetic(
        images=args.images, per_image=args.per_image, dim=args.dim, seed=args.seed, device=device, dtype=dtype
    )
    cpu_pivot = SelfPivot.build(
        owner=pivot.owner.cpu(), image_sums_norms=pivot.image_norms.cpu(), caption_sq_norms=pivot.caption_sq_norms.cpu()
    )
    on_device = directions(captions, image_vectors, pivot)
    on_cpu = directions(captions32.cpu(), images32.cpu(), cpu_pivot)
    generator = torch.Generator().manual_seed(args.seed + 1)
    for block_mb in [DEFAULT_BLOCK_MB, *args.block_mb]:
        for name, (queries, targets, patch) in on_device.items():
            rows = chunk_rows(n_targets=len(targets), chunk_size=ROWS_PER_CHUNK, block_bytes=block_mb * 1024 * 1024)
            first = block_mb == DEFAULT_BLOCK_MB
            seconds, kept = run_direction(queries, targets, patch, k=args.k, rows=rows, device=device, keep=first)
            run = {
                "direction": name,
                "block_mb": block_mb,
                "rows_per_chunk": rows,
                "queries": len(queries),
                "targets": len(targets),
                "seconds": round(seconds, 2),
                "query_rows_per_second": round(len(queries) / seconds),
            }
            if first:
                sample = torch.randperm(len(queries), generator=generator)[: args.check_rows].tolist()
                run["exact_rows_checked"] = len(sample)
                run["exact_rows_mismatched"] = sum(
                    not torch.equal(brute_force(queries, targets, patch, row, args.k, rows), kept[row].long())
                    for row in sample
                )
                # The same rows computed one at a time: what a different block shape alone changes.
                run["rows_differing_when_computed_alone"] = sum(
                    not torch.equal(brute_force(queries, targets, patch, row, args.k), kept[row].long())
                    for row in sample
                )
                block = dense_block(queries, targets)
                whole = [
                    indices
                    for *_, indices in chunked_topk(
                        n_queries=len(queries), block=block, k=args.k, rows_per_chunk=rows, stop_chunk=4, patch=patch
                    )
                ]
                split = [
                    indices
                    for start_chunk, stop_chunk in ((0, 2), (2, 4))
                    for *_, indices in chunked_topk(
                        n_queries=len(queries),
                        block=block,
                        k=args.k,
                        rows_per_chunk=rows,
                        start_chunk=start_chunk,
                        stop_chunk=stop_chunk,
                        patch=patch,
                    )
                ]
                run["shards_identical"] = all(torch.equal(a, b) for a, b in zip(whole, split, strict=True))
                run["float32_cpu_overlap"] = round(float32_overlap(*on_cpu[name], sample[:50], kept, args.k), 4)
            report["runs"].append(run)
            print(json.dumps(run), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps({key: value for key, value in report.items() if key != "runs"}))


if __name__ == "__main__":
    main()
