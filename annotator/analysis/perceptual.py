"""Perceptual hashes for near-duplicate images: a 256-bit pHash (the `imagehash` library, hash size 16),
compared by Hamming distance. A re-encoded, slightly resized or recompressed copy of a picture stays within a
few bits; two different pictures are about half the bits apart. The 64-bit pHash is too coarse for plain
pictures (flat backgrounds, a few shapes): on the synthetic scenes a redrawn variant of a scene lands within
6 of 64 bits of it, while with 256 bits its copies stay within 6 and its variants are 40 or more apart."""

from __future__ import annotations

import io

import imagehash
from PIL import Image as PILImage

# Bits out of 256 within which two pictures are called near-identical.
NEAR_DUPLICATE_BITS = 24
HASH_SIZE = 16


def perceptual_hash(data: bytes) -> str:
    """The 256-bit pHash of an encoded image, as 64 hex digits."""
    with PILImage.open(io.BytesIO(data)) as picture:
        return str(imagehash.phash(picture.convert("RGB"), hash_size=HASH_SIZE))


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
