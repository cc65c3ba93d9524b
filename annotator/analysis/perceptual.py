"""Perceptual hashes for near-duplicate images: a 256-bit pHash (the `imagehash` library, hash size 16),
compared by Hamming distance. A re-encoded, slightly resized or recompressed copy of a picture stays within a
few bits; two different pictures are about half the bits apart. The 64-bit pHash is too coarse for plain
pictures (flat backgrounds, a few shapes): on the synthetic scenes a redrawn variant of a scene lands within
6 of 64 bits of it, while with 256 bits its copies stay within 6 and its variants are 40 or more apart."""

from __future__ import annotations

import io

import imagehash
import numpy as np
from PIL import Image as PILImage

# Bits out of 256 within which two pictures are candidates for near-identical.
NEAR_DUPLICATE_BITS = 24
# pHash reads luminance only: two flat pictures of different colours but equal brightness hash alike. A
# candidate is confirmed when the 32 x 32 colour copies differ by at most this mean absolute difference
# (0-1 scale). Measured on the synthetic scenes: re-encoded and shrunk copies 0.0014-0.0026; pictures that
# merely hash alike 0.15-0.42.
NEAR_DUPLICATE_PIXELS = 0.02
TINY_SIDE = 32
HASH_SIZE = 16


def perceptual_hash(data: bytes) -> str:
    """The 256-bit pHash of an encoded image, as 64 hex digits."""
    with PILImage.open(io.BytesIO(data)) as picture:
        return str(imagehash.phash(picture.convert("RGB"), hash_size=HASH_SIZE))


def hamming(a: str, b: str) -> int:
    return (int(a, 16) ^ int(b, 16)).bit_count()


def tiny_rgb(data: bytes) -> np.ndarray:
    """The picture as a TINY_SIDE x TINY_SIDE RGB array on a 0-1 scale."""
    with PILImage.open(io.BytesIO(data)) as picture:
        small = picture.convert("RGB").resize((TINY_SIDE, TINY_SIDE), PILImage.Resampling.BILINEAR)
        return np.asarray(small, dtype=np.float32) / 255.0


def pixel_distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).mean())


def candidates(hash_hex: str, known: list[tuple[str, object]], *, within: int = NEAR_DUPLICATE_BITS) -> list[tuple]:
    """(owner, distance) of every `known` (hash, owner) within `within` bits of `hash_hex`, nearest first."""
    value = int(hash_hex, 16)
    found = []
    for other, owner in known:
        distance = (value ^ int(other, 16)).bit_count()
        if distance <= within:
            found.append((owner, distance))
    return sorted(found, key=lambda item: (item[1], str(item[0])))
