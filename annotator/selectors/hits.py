"""What a crowd worker's browser may receive about a HIT: the one place that decides it.

Per item: an opaque token, the image URL and its thumbnail URL, the caption text, and for STS/SIS pairs
the second caption or the second image. Never the pair id, the HitItem id, the role (gold or candidate),
the provenance or whether the pair is original. Every entry of a HIT has the same keys and types, so a
gold item cannot be told from a candidate by the shape of the data either.
"""

from django.utils.crypto import constant_time_compare, salted_hmac

from annotator.models import Hit, HitItem

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


def _file_url(field) -> str:
    if not field:
        return ""
    try:
        return field.url
    except ValueError:  # no file associated
        return ""


def _image_urls(image) -> tuple[str, str]:
    if image is None:
        return "", ""
    url = _file_url(image.file)
    return url, _file_url(image.thumbnail) or url


def hit_worker_items(*, hit: Hit) -> list[dict]:
    """The HIT's items in position order, each a dict with exactly WORKER_ITEM_KEYS (all strings but position).

    `position` counts from 1 in the order the worker sees the items. Absent members are "" (for an
    image-caption pair: other_image_url, other_thumbnail_url, other_caption).
    """
    items = (
        HitItem.objects.filter(hit=hit)
        .order_by("position")
        .select_related("pair__image", "pair__caption", "pair__other_image", "pair__other_caption")
    )
    entries = []
    for number, item in enumerate(items, start=1):
        pair = item.pair
        image_url, thumbnail_url = _image_urls(pair.image)
        other_image_url, other_thumbnail_url = _image_urls(pair.other_image)
        entries.append(
            {
                "token": hit_item_token(hit_id=hit.pk, item_id=item.pk),
                "position": number,
                "kind": pair.kind,
                "image_url": image_url,
                "thumbnail_url": thumbnail_url,
                "caption": pair.caption.text if pair.caption_id else "",
                "other_image_url": other_image_url,
                "other_thumbnail_url": other_thumbnail_url,
                "other_caption": pair.other_caption.text if pair.other_caption_id else "",
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
