"""Chunked top-K equals a brute-force ranking (ties, chunk boundaries, odd sizes) and the self-pivot rule holds."""

import numpy as np
import pytest
import scipy.sparse
import torch

from workers.ranking.topk import SelfPivot, chunk_rows, chunked_topk, dense_block, sparse_block, topk_rows


def brute_force(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Full sort of every row: score descending, then column ascending."""
    order = np.stack([np.lexsort((np.arange(row.size), -row))[:k] for row in scores])
    return np.take_along_axis(scores, order, axis=1), order


def run_chunked(queries, targets, k, rows, patch=None):
    block = dense_block(queries, targets) if isinstance(queries, torch.Tensor) else sparse_block(queries, targets)
    values, indices, covered = [], [], []
    for _chunk, start, stop, vals, idx in chunked_topk(
        n_queries=queries.shape[0], block=block, k=k, rows_per_chunk=rows, patch=patch
    ):
        covered.append((start, stop))
        values.append(vals.numpy())
        indices.append(idx.numpy())
    return np.concatenate(values), np.concatenate(indices), covered


@pytest.mark.parametrize(
    ("n_queries", "n_targets", "k", "rows"),
    [(37, 53, 5, 8), (64, 25, 25, 16), (13, 7, 25, 5), (1, 9, 3, 4), (50, 101, 10, 50), (50, 101, 10, 49)],
)
def test_chunked_topk_equals_brute_force_with_many_ties(n_queries, n_targets, k, rows):
    """Small integer embeddings make exact ties everywhere, including across the K-th place."""
    generator = torch.Generator().manual_seed(n_queries * 1000 + n_targets)
    queries = torch.randint(-2, 3, (n_queries, 6), generator=generator).float()
    targets = torch.randint(-2, 3, (n_targets, 6), generator=generator).float()
    values, indices, covered = run_chunked(queries, targets, k, rows)
    expected_values, expected_indices = brute_force((queries @ targets.t()).numpy(), min(k, n_targets))
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values, expected_values)
    # Every query row is covered exactly once, in chunks of `rows` (the last one shorter).
    assert [stop - start for start, stop in covered][:-1] == [rows] * (len(covered) - 1)
    assert covered[0][0] == 0 and covered[-1][1] == n_queries


def test_chunked_topk_random_normalised_embeddings():
    """Continuous random embeddings (no ties): same lists as the brute force, scores to float precision."""
    generator = torch.Generator().manual_seed(7)
    queries = torch.nn.functional.normalize(torch.randn(101, 32, generator=generator), dim=1)
    targets = torch.nn.functional.normalize(torch.randn(257, 32, generator=generator), dim=1)
    values, indices, _ = run_chunked(queries, targets, 25, 17)
    expected_values, expected_indices = brute_force((queries @ targets.t()).numpy(), 25)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(values, expected_values, rtol=1e-5, atol=1e-6)


def test_topk_rows_prefers_lowest_column_among_ties_at_the_cut():
    block = torch.tensor([[1.0, 5.0, 3.0, 3.0, 3.0, 3.0, 0.0]])
    values, indices = topk_rows(block, 3)
    assert indices.tolist() == [[1, 2, 3]]
    assert values.tolist() == [[5.0, 3.0, 3.0]]


def test_sparse_blocks_equal_dense_blocks():
    rng = np.random.default_rng(3)
    dense_q = (rng.random((19, 30)) * (rng.random((19, 30)) < 0.2)).astype(np.float32)
    dense_t = (rng.random((23, 30)) * (rng.random((23, 30)) < 0.2)).astype(np.float32)
    values, indices, _ = run_chunked(scipy.sparse.csr_matrix(dense_q), scipy.sparse.csr_matrix(dense_t), 5, 4)
    expected_values, expected_indices = brute_force(dense_q @ dense_t.T, 5)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(values, expected_values, rtol=1e-6)


def test_chunk_rows_keeps_one_block_under_the_byte_budget():
    assert chunk_rows(n_targets=250_000, chunk_size=1024, block_bytes=256 * 1024 * 1024) == 268
    assert chunk_rows(n_targets=10, chunk_size=1024) == 1024
    assert chunk_rows(n_targets=10**9, chunk_size=1024, block_bytes=1) == 1


def leave_one_out_scores(captions: torch.Tensor, owner: torch.Tensor, n_images: int) -> torch.Tensor:
    """Reference: score(c, i) with image i's vector built from its captions other than c."""
    scores = torch.full((captions.shape[0], n_images), float("-inf"))
    for c in range(captions.shape[0]):
        for i in range(n_images):
            members = [m for m in range(captions.shape[0]) if owner[m] == i and m != c]
            if members:
                vector = torch.nn.functional.normalize(captions[members].sum(0), dim=0)
                scores[c, i] = captions[c] @ vector
    return scores


def test_self_pivot_patch_excludes_the_query_caption_in_both_directions():
    """A caption is never its own image's pivot; an image whose only caption is the query gets -inf."""
    generator = torch.Generator().manual_seed(11)
    owner = torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 2, 4])  # image 4 has one caption
    captions = torch.nn.functional.normalize(torch.randn(len(owner), 8, generator=generator), dim=1)
    n_images = 5
    sums = torch.zeros(n_images, 8).index_add_(0, owner, captions)
    images = sums / sums.norm(dim=1, keepdim=True)
    pivot = SelfPivot.build(owner=owner, image_sums_norms=sums.norm(dim=1), caption_sq_norms=torch.ones(len(owner)))
    reference = leave_one_out_scores(captions, owner, n_images)

    t2i_values, t2i_indices, _ = run_chunked(captions, images, n_images, 5, patch=pivot.patch_caption_queries)
    full_t2i = torch.full((len(owner), n_images), float("nan"))
    full_t2i.scatter_(1, torch.from_numpy(t2i_indices), torch.from_numpy(t2i_values))
    torch.testing.assert_close(full_t2i, reference, rtol=1e-5, atol=1e-5)

    i2t_values, i2t_indices, _ = run_chunked(images, captions, len(owner), 2, patch=pivot.patch_image_queries)
    full_i2t = torch.full((n_images, len(owner)), float("nan"))
    full_i2t.scatter_(1, torch.from_numpy(i2t_indices), torch.from_numpy(i2t_values))
    torch.testing.assert_close(full_i2t, reference.t(), rtol=1e-5, atol=1e-5)
    assert full_t2i[11, 4] == float("-inf")
