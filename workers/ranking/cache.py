"""Embeddings cached in storage (local disk or S3, through Django's storage API), in shards.

Key: dataset id, annotator kind and weights hash, and a content version of the dataset (a hash of the
caption and image ids, texts and image content hashes), so a changed model or a changed dataset never
reuses stale vectors. Each shard holds `shard_size` consecutive items and is written as soon as it is
encoded, so a killed worker resumes encoding at the first missing shard.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
import scipy.sparse
import torch
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage


def content_version(*, captions: list[tuple[int, int, str]], images: list[tuple[int, str]]) -> str:
    """sha256 over (caption id, image id, text) and (image id, content hash), in id order."""
    digest = hashlib.sha256()
    for caption_id, image_id, text in captions:
        digest.update(f"c{caption_id}:{image_id}:{len(text)}:".encode())
        digest.update(text.encode())
    for image_id, content_hash in images:
        digest.update(f"i{image_id}:{content_hash}".encode())
    return digest.hexdigest()


class EmbeddingCache:
    def __init__(self, *, dataset_id: int, kind: str, weights_hash: str, version: str, storage=None):
        self.prefix = f"ranking-cache/dataset-{dataset_id}/{kind}-{weights_hash[:16]}/{version[:16]}"
        self.storage = storage or default_storage

    def _name(self, what: str, shard: int, shard_size: int, sparse: bool) -> str:
        return f"{self.prefix}/{what}-s{shard_size}-{shard:05d}.{'npz' if sparse else 'npy'}"

    def load(self, what: str, shard: int, shard_size: int, sparse: bool):
        name = self._name(what, shard, shard_size, sparse)
        if not self.storage.exists(name):
            return None
        with self.storage.open(name, "rb") as handle:
            buffer = io.BytesIO(handle.read())
        try:
            if sparse:
                return scipy.sparse.load_npz(buffer).tocsr()
            return torch.from_numpy(np.load(buffer, allow_pickle=False))
        except (ValueError, OSError, EOFError):  # a torn write: encode the shard again
            return None

    def save(self, what: str, shard: int, shard_size: int, value) -> None:
        sparse = scipy.sparse.issparse(value)
        name = self._name(what, shard, shard_size, sparse)
        buffer = io.BytesIO()
        if sparse:
            scipy.sparse.save_npz(buffer, value.tocsr(), compressed=False)
        else:
            np.save(buffer, value.detach().cpu().float().numpy(), allow_pickle=False)
        if self.storage.exists(name):  # storage.save would pick a new name instead of overwriting
            self.storage.delete(name)
        self.storage.save(name, ContentFile(buffer.getvalue()))


def concat(parts: list):
    if parts and scipy.sparse.issparse(parts[0]):
        return scipy.sparse.vstack(parts, format="csr")
    return torch.cat(parts, dim=0)
