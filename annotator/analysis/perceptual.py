"""Perceptual hashes for near-duplicate images: a 64-bit pHash (the `imagehash` library), compared by Hamming
distance. A re-encoded, slightly resized or recompressed copy of a picture stays within a few bits; two
different photographs are about 32 bits apart."""

from __future__ import annotations

import io

import imagehash
from PIL import Image as PILImage

# Bits out of 64 within which two pictures are called near-identical.
NEAR_DUPLICATE_BITS = 6


def perceptual_hash(data: bytes) -> str:
    """The 64-bit pHash of an encoded image, as 16 hex digits."""
    with PILImage.open(io.BytesIO(data)) as picture:
        return str(imagehash.phash(picture.convert("RGB")))


def hamming(a: str, b: str) -> int:
    return (int(a, 16) ^ int(b, 16)).bit_count()


def nearest(hash_hex: str, known: dict[str, object], *, within: int = NEAR_DUPLICATE_BITS) -> tuple[object, int] | None:
    """The value of the `known` hash nearest to `hash_hex` and its distance, when it is within `within` bits."""
    value = int(hash_hex, 16)
    best = None
    for other, owner in known.items():
        distance = (value ^ int(other, 16)).bit_count()
        if distance <= within and (best is None or distance < best[1]):
            best = (owner, distance)
    return best
