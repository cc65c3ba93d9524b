"""What a crowd worker's browser may receive about a HIT: the one place that decides it.

Per item: an opaque token, the image URL and its thumbnail URL, the caption text, and for STS/SIS pairs
the second caption or the second image. Never the pair id, the HitItem id, the role (gold or candidate),
the provenance or whether the pair is original. Every entry of a HIT has the same keys and types, so a
gold item cannot be told from a candidate by the shape of the data either.
"""

from functools import cache

from django.db import connection
from django.utils.crypto import constant_time_compare, salted_hmac

from annotator.campaigns.models.campaign import Hit, HitItem, Pair
from annotator.crowd.rows import fetch_all, table
from annotator.datasets.models.dataset import Caption, Image

_TOKEN_SALT = "vericap.hit-item-token"
WORKER_ITEM_KEYS = (
    "token",
    "position",
    "kind",
    "image_url",
    "thumbnail_url",
    "caption",
    "other_image_url",
    "other_thumbnail_url",
    "other_caption",
)


def hit_item_token(*, hit_id: int, item_id: int) -> str:
    """An opaque, unguessable token for one HitItem of one HIT (HMAC with SECRET_KEY; reveals no id)."""
    return salted_hmac(_TOKEN_SALT, f"{hit_id}:{item_id}", algorithm="sha256").hexdigest()[:24]


def _storage_url(storage, name) -> str:
    return storage.url(name) if name else ""


@cache
def _items_sql(vendor: str) -> str:
    image, caption = table(Image), table(Caption)
    return (
        "SELECT i.id, p.kind, im.file, im.thumbnail, cap.text, oim.file, oim.thumbnail, ocap.text"
        f" FROM {table(HitItem)} i JOIN {table(Pair)} p ON p.id = i.pair_id"
        f" LEFT JOIN {image} im ON im.id = p.image_id LEFT JOIN {caption} cap ON cap.id = p.caption_id"
        f" LEFT JOIN {image} oim ON oim.id = p.other_image_id LEFT JOIN {caption} ocap ON ocap.id = p.other_caption_id"
        " WHERE i.hit_id = %s ORDER BY i.position"
    )


def hit_worker_items(*, hit: Hit) -> list[dict]:
    """The HIT's items in position order, each a dict with exactly WORKER_ITEM_KEYS (all strings but position).

    `position` counts from 1 in the order the worker sees the items. Absent members are "" (for an
    image-caption pair: other_image_url, other_thumbnail_url, other_caption); an image without a
    thumbnail shows its file. One query of the columns it needs, as SQL text (`annotator.crowd.rows`): the first
    worker of every HIT waits for it.
    """
    files = Image._meta.get_field("file").storage
    thumbnails = Image._meta.get_field("thumbnail").storage
    rows = fetch_all(_items_sql(connection.vendor), [hit.pk])
    entries = []
    for number, (item_id, kind, file, thumbnail, text, other_file, other_thumbnail, other_text) in enumerate(
        rows, start=1
    ):
        image_url, other_image_url = _storage_url(files, file), _storage_url(files, other_file)
        entries.append(
            {
                "token": hit_item_token(hit_id=hit.pk, item_id=item_id),
                "position": number,
                "kind": kind,
                "image_url": image_url,
                "thumbnail_url": _storage_url(thumbnails, thumbnail) or image_url,
                "caption": text or "",
                "other_image_url": other_image_url,
                "other_thumbnail_url": _storage_url(thumbnails, other_thumbnail) or other_image_url,
                "other_caption": other_text or "",
            }
        )
    return entries


def hit_item_for_token(*, hit: Hit, token: str) -> HitItem | None:
    """The HitItem of `hit` that `token` names, or None. Server side only."""
    token = str(token or "")
    for item in HitItem.objects.filter(hit=hit).order_by("position"):
        if constant_time_compare(hit_item_token(hit_id=hit.pk, item_id=item.pk), token):
            return item
    return None
