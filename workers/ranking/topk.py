"""Top-K retrieval by chunked matrix products: never the full query x target similarity matrix.

Queries are cut into chunks of rows; each chunk's [rows, n_targets] block is computed (a dense matmul, or a
sparse product for TF-IDF), corrected for self-pivots, and reduced with `torch.topk`. The chunk size is
bounded so one block stays under `block_bytes`.

Ties are broken deterministically, as a brute-force ranking would: higher score first, then the lower
target index. `torch.topk` alone does not promise which of several equal scores at the K-th place it keeps,
so rows with a tie straddling the cut are fixed up explicitly (rare with real embeddings; found by
asking topk for K + 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

DEFAULT_BLOCK_BYTES = 256 * 1024 * 1024


def chunk_rows(*, n_targets: int, chunk_size: int, block_bytes: int = DEFAULT_BLOCK_BYTES) -> int:
    """Rows per chunk: `chunk_size`, fewer when a [rows, n_targets] float32 block would exceed `block_bytes`."""
    return max(1, min(chunk_size, block_bytes // max(1, 4 * n_targets)))


def topk_rows(block: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row, the K best (score, column) of `block`, sorted by score descending then column ascending."""
    k = min(k, block.shape[1])
    # One more than K: where the (K+1)-th score equals the K-th, a tie straddles the cut and that row is
    # fixed up; elsewhere every score equal to the K-th is already kept. (Cheaper than a pass over the block.)
    extra = 1 if k < block.shape[1] else 0
    values, indices = torch.topk(block, k + extra, dim=1, largest=True, sorted=True)
    straddling = (values[:, k] == values[:, k - 1]) if extra else torch.zeros(0, dtype=torch.bool)
    values, indices = values[:, :k].contiguous(), indices[:, :k].contiguous()
    for row in torch.nonzero(straddling).flatten().tolist():
        # Keep every column above the cut and the lowest-indexed columns tied at it.
        line, kth = block[row], values[row, k - 1]
        above = torch.nonzero(line > kth).flatten()
        tied = torch.nonzero(line == kth).flatten()[: k - above.numel()]
        chosen = torch.cat([above, tied])
        indices[row] = chosen
        values[row] = line[chosen]
    # topk already orders by score; only rows with equal neighbouring scores (and fixed-up rows) need
    # sorting by score then column (two stable sorts, on those rows only).
    unordered = (values[:, 1:] == values[:, :-1]).any(dim=1)
    if extra:
        unordered |= straddling  # fixed-up rows are in column order, not score order
    tied_rows = torch.nonzero(unordered).flatten()
    if tied_rows.numel():
        sub_values, sub_indices = values[tied_rows], indices[tied_rows]
        by_column = torch.sort(sub_indices, dim=1, stable=True)
        sub_values = torch.gather(sub_values, 1, by_column.indices)
        by_score = torch.sort(sub_values, dim=1, descending=True, stable=True)
        values[tied_rows] = by_score.values
        indices[tied_rows] = torch.gather(by_column.values, 1, by_score.indices)
    return values, indices


@dataclass
class SelfPivot:
    """What a pivot annotator needs so a caption is never its own image's pivot.

    An image's vector is S_i / |S_i| with S_i the sum of its captions' normalised embeddings. For caption c
    of image i the right score uses S_i - e_c instead: with d = <e_c, S_i> = raw * |S_i|,
        score = (d - |e_c|^2) / sqrt(|S_i|^2 - 2 d + |e_c|^2),
    and -inf when nothing is left (c is the image's only caption). Only one entry per caption changes, so
    the chunk is computed with the plain image vectors and those entries are patched.
    """

    owner: torch.Tensor  # [n_captions] long: image row of each caption
    image_norms: torch.Tensor  # [n_images] |S_i|
    caption_sq_norms: torch.Tensor  # [n_captions] |e_c|^2 (1, or 0 for an empty TF-IDF row)
    captions_by_owner: torch.Tensor  # caption rows sorted by owner
    owner_sorted: torch.Tensor  # owner[captions_by_owner]

    @classmethod
    def build(cls, *, owner: torch.Tensor, image_sums_norms: torch.Tensor, caption_sq_norms: torch.Tensor) -> SelfPivot:
        order = torch.argsort(owner, stable=True)
        return cls(owner, image_sums_norms, caption_sq_norms, order, owner[order])

    def corrected(self, raw: torch.Tensor, captions: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
        norms = self.image_norms[images].to(raw.dtype)
        sq = self.caption_sq_norms[captions].to(raw.dtype)
        dot = raw * norms
        remaining = norms * norms - 2 * dot + sq
        # Round-off can leave a tiny positive remainder when nothing is left; treat it as empty.
        empty = remaining <= 1e-6 * torch.clamp(norms * norms, min=1.0)
        score = (dot - sq) / torch.sqrt(torch.clamp(remaining, min=1e-12))
        return torch.where(empty, torch.full_like(score, float("-inf")), score)

    def patch_caption_queries(self, block: torch.Tensor, start: int, stop: int) -> None:
        """Caption rows [start, stop) against all images: patch each row at its own image's column."""
        captions = torch.arange(start, stop, device=block.device)
        images = self.owner[start:stop].to(block.device)
        rows = torch.arange(stop - start, device=block.device)
        block[rows, images] = self.corrected(block[rows, images], captions, images)

    def patch_image_queries(self, block: torch.Tensor, start: int, stop: int) -> None:
        """Image rows [start, stop) against all captions: patch each row at its own captions' columns."""
        lo = int(torch.searchsorted(self.owner_sorted, torch.tensor(start, device=self.owner_sorted.device)))
        hi = int(torch.searchsorted(self.owner_sorted, torch.tensor(stop, device=self.owner_sorted.device)))
        captions = self.captions_by_owner[lo:hi].to(block.device)
        images = self.owner_sorted[lo:hi].to(block.device)
        rows = images - start
        block[rows, captions] = self.corrected(block[rows, captions], captions, images)


def dense_block(queries: torch.Tensor, targets: torch.Tensor) -> Callable[[int, int], torch.Tensor]:
    """Block function for dense embeddings already on the compute device."""
    targets_t = targets.t()

    def block(start: int, stop: int) -> torch.Tensor:
        return (queries[start:stop] @ targets_t).float()

    return block


def sparse_block(queries, targets, device: str = "cpu") -> Callable[[int, int], torch.Tensor]:
    """Block function for scipy CSR embeddings (TF-IDF): a sparse product, densified one chunk at a time."""
    targets_t = targets.T.tocsc()

    def block(start: int, stop: int) -> torch.Tensor:
        product = queries[start:stop] @ targets_t
        return torch.from_numpy(np.asarray(product.toarray(), dtype=np.float32)).to(device)

    return block


def chunked_topk(
    *,
    n_queries: int,
    block: Callable[[int, int], torch.Tensor],
    k: int,
    rows_per_chunk: int,
    start_chunk: int = 0,
    stop_chunk: int | None = None,
    patch: Callable[[torch.Tensor, int, int], None] | None = None,
) -> Iterator[tuple[int, int, int, torch.Tensor, torch.Tensor]]:
    """Yield (chunk index, first row, end row, scores [rows, K], target columns [rows, K]) on the CPU.

    Chunks `start_chunk` (the resume point) up to `stop_chunk` (exclusive; the end of a shard, default all);
    chunk boundaries depend only on `rows_per_chunk`, so a resumed run or a shard computes exactly the
    chunks an uninterrupted single run would.
    """
    n_chunks = (n_queries + rows_per_chunk - 1) // rows_per_chunk
    if stop_chunk is not None:
        n_chunks = min(n_chunks, stop_chunk)
    for chunk in range(start_chunk, n_chunks):
        start, stop = chunk * rows_per_chunk, min(n_queries, (chunk + 1) * rows_per_chunk)
        scores = block(start, stop)
        if patch is not None:
            patch(scores, start, stop)
        values, indices = topk_rows(scores, k)
        del scores
        yield chunk, start, stop, values.cpu(), indices.cpu()
