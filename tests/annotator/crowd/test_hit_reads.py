"""hit_worker_items: what a worker's browser receives; gold must be indistinguishable from candidates."""

import json
import re
from collections import Counter

import pytest

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.crowd.selectors.hits import (
    WORKER_ITEM_KEYS,
    hit_item_for_token,
    hit_worker_items,
)
from annotator.models import HitItem, ItemRole, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    dataset = make_dataset(images=40)
    runs = [add_run(dataset=dataset, name=f"m{i}", seed=i, directions=("i2t",)) for i in range(2)]
    owner = user_with_role(Role.REQUESTER)
    campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, name="hits", gold_negatives_per_hit=2)
    return campaign_build(campaign=campaign)


def _shape(entry: dict) -> tuple:
    """Everything about an entry except its content: keys, value types, URL patterns with digits erased."""
    return tuple(
        (key, type(value).__name__, re.sub(r"\d+", "N", value) if key.endswith("url") else None)
        for key, value in sorted(entry.items())
    )


def test_gold_items_look_exactly_like_candidates_to_a_worker(campaign):
    gold_positions = Counter()
    for hit in campaign.hits.all():
        entries = hit_worker_items(hit=hit)
        items = list(HitItem.objects.filter(hit=hit).order_by("position").select_related("pair"))
        assert len(entries) == len(items) == 19
        assert [e["position"] for e in entries] == list(range(1, 20))
        shapes = {_shape(entry) for entry in entries}
        assert len(shapes) == 1  # one shape for candidates and gold alike
        assert set(entries[0]) == set(WORKER_ITEM_KEYS)
        payload = json.dumps(entries)
        assert "gold" not in payload and "candidate" not in payload and "role" not in payload
        for entry, item in zip(entries, items, strict=True):
            assert str(item.pk) != entry["token"] and str(item.pair_id) != entry["token"]
            assert entry["caption"] == item.pair.caption.text
            assert entry["image_url"].endswith(item.pair.image.file.name)
            assert entry["other_caption"] == entry["other_image_url"] == ""
            assert hit_item_for_token(hit=hit, token=entry["token"]) == item
            if item.role != ItemRole.CANDIDATE:
                gold_positions[entry["position"]] += 1
    # Gold is spread over positions, not parked at the start or the end.
    assert len(gold_positions) >= 8
    # Tokens are opaque: 24 hex characters, no ids inside.
    tokens = [e["token"] for hit in campaign.hits.all() for e in hit_worker_items(hit=hit)]
    assert all(re.fullmatch(r"[0-9a-f]{24}", t) for t in tokens) and len(set(tokens)) == len(tokens)


def test_a_token_of_another_hit_resolves_to_nothing(campaign):
    first, second = campaign.hits.order_by("index")[:2]
    token = hit_worker_items(hit=first)[0]["token"]
    assert hit_item_for_token(hit=second, token=token) is None
    assert hit_item_for_token(hit=first, token="not-a-token") is None


def test_caption_text_is_passed_as_data_not_markup(campaign):
    hit = campaign.hits.first()
    entry = hit_worker_items(hit=hit)[0]
    assert "<b>things</b>" in entry["caption"]  # raw text; templates and JSON escape it when rendering
