"""Campaign services: create, build (pooling, gold, packing), add a run, and the state machine."""

from collections import Counter

import pytest

from annotator.campaigns.selectors.campaigns import campaign_statistics
from annotator.campaigns.services.build import campaign_add_run, campaign_build
from annotator.campaigns.services.lifecycle import (
    campaign_create,
    campaign_finish,
    campaign_launch,
    campaign_pause,
    campaign_resume,
)
from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.hits import hit_worker_items
from annotator.models import (
    Campaign,
    CampaignStatus,
    Candidate,
    Caption,
    Hit,
    HitItem,
    ItemRole,
    Pair,
    PairSource,
    Role,
    RunStatus,
)
from tests.annotator.campaign_support import add_run, campaign_snapshot, make_dataset
from tests.factories import RankingRunFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return user_with_role(Role.REQUESTER)


@pytest.fixture
def world():
    """40 images x 5 captions, three annotators with image-to-caption candidates."""
    dataset = make_dataset(images=40)
    runs = [add_run(dataset=dataset, name=f"model-{i}", seed=i, directions=("i2t",)) for i in range(3)]
    return dataset, runs


@pytest.fixture
def world_both():
    """The same with candidates in both directions (for two-stage campaigns)."""
    dataset = make_dataset(images=40)
    runs = [add_run(dataset=dataset, name=f"model-{i}", seed=i) for i in range(2)]
    return dataset, runs


def build(owner, dataset, runs, **options):
    options.setdefault("name", "test campaign")
    campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, **options)
    return campaign_build(campaign=campaign)


def test_same_seed_builds_the_same_campaign_and_another_seed_does_not(owner, world):
    dataset, runs = world
    first = build(owner, dataset, runs, seed=7, sample_count=30)
    second = build(owner, dataset, runs, seed=7, sample_count=30)
    third = build(owner, dataset, runs, seed=8, sample_count=30)
    assert campaign_snapshot(first) == campaign_snapshot(second)
    assert len(campaign_snapshot(first)) > 3
    assert campaign_snapshot(first) != campaign_snapshot(third)


def test_every_hit_has_the_exact_composition_and_no_pair_twice(owner, world_both):
    dataset, runs = world_both
    campaign = build(owner, dataset, runs, direction="both", redundancy=3, gold_exclusion_depth=20, pool_depth=4)
    snapshot = campaign_snapshot(campaign)
    assert snapshot
    for _index, _stage, required, items in snapshot:
        roles = Counter(item[1] for item in items)
        assert roles == {"candidate": 16, "gold_positive": 1, "gold_negative": 1}
        assert [item[0] for item in items] == list(range(1, 19))
        members = [item[2:] for item in items]
        assert len(set(members)) == len(members)
        assert required == 3
    stages = [stage for _i, stage, _r, _items in snapshot]
    # Two stages: every image-to-caption HIT comes before the caption-to-image HITs.
    assert stages == sorted(stages, key=["i2t", "t2i"].index) and set(stages) == {"i2t", "t2i"}
    gold_positions = Counter(item[0] for *_head, items in snapshot for item in items if item[1] != "candidate")
    assert len(gold_positions) > 5  # gold is not parked at a fixed position


@pytest.mark.parametrize("gold_negatives", [1, 2])
def test_a_gold_light_share_builds_that_share_of_hits_with_one_gold_item_and_the_same_size(
    owner, world_both, gold_negatives
):
    """Adaptive gold: every HIT keeps the full HIT's size (16 candidates + 1 gold positive + `gold_negatives`);
    a gold-light one (Hit.gold_light) holds one gold item and an extra candidate for each gold item it leaves
    out (with two gold negatives it once took one extra, and was one item short)."""
    dataset, runs = world_both
    options = {"direction": "both", "gold_exclusion_depth": 20, "pool_depth": 4}
    options["gold_negatives_per_hit"] = gold_negatives
    size, extras = 17 + gold_negatives, gold_negatives
    campaign = build(owner, dataset, runs, **options, gold_light_share=0.5)
    light = set(Hit.objects.filter(campaign=campaign, gold_light=True).values_list("index", flat=True))
    snapshot = campaign_snapshot(campaign)
    assert 0 < len(light) and abs(len(light) - len(snapshot) / 2) <= 2  # half of each stage's HITs
    for index, _stage, _required, items in snapshot:
        roles = Counter(item[1] for item in items)
        assert [item[0] for item in items] == list(range(1, size + 1))
        if index in light:
            assert roles["candidate"] == 16 + extras and roles["gold_positive"] + roles["gold_negative"] == 1
        else:
            assert roles == {"candidate": 16, "gold_positive": 1, "gold_negative": gold_negatives}
    # Each light HIT's extra candidates are pairs its runs rank just below the pooling depth, with that provenance.
    for hit in Hit.objects.filter(campaign=campaign, gold_light=True):
        best = [
            min(PairSource.objects.filter(pair_id=item.pair_id).values_list("rank", flat=True), default=None)
            for item in hit.items.filter(role=ItemRole.CANDIDATE)
        ]
        assert None not in best and sum(rank > 4 for rank in best) == extras
    assert not build(owner, dataset, runs, **options).hits.filter(gold_light=True).exists()  # off by default


def test_pool_is_the_union_of_every_runs_top_k_with_provenance(owner, world):
    dataset, runs = world
    campaign = build(owner, dataset, runs, pool_depth=3)
    expected = set(
        Candidate.objects.filter(run__in=runs, direction="i2t", rank__lte=3).values_list("query_id", "target_id")
    )
    pooled = set(Pair.objects.filter(campaign=campaign, sources__isnull=False).values_list("image_id", "caption_id"))
    assert pooled == expected
    proposals = Candidate.objects.filter(run__in=runs, direction="i2t", rank__lte=3).count()
    stats = campaign_statistics(campaign=campaign)
    assert stats["proposals"] == proposals
    assert stats["unique_pairs"] == len(expected) < proposals
    # Provenance: each source row is the run's rank and score for that pair.
    for source in PairSource.objects.filter(pair__campaign=campaign).select_related("pair")[:50]:
        candidate = Candidate.objects.get(
            run=source.run, direction="i2t", query_id=source.pair.image_id, target_id=source.pair.caption_id
        )
        assert (source.rank, source.score) == (candidate.rank, candidate.score)
    own = dict(Caption.objects.filter(dataset=dataset).values_list("pk", "image_id"))
    for pair in Pair.objects.filter(campaign=campaign):
        assert pair.is_original == (own[pair.caption_id] == pair.image_id)
    # Every pooled candidate is asked at least once.
    asked = set(
        HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values_list("pair_id", flat=True)
    )
    assert set(Pair.objects.filter(campaign=campaign, sources__isnull=False).values_list("pk", flat=True)) <= asked


def test_gold_negatives_are_in_no_annotators_top_exclusion_depth_and_positives_are_original(owner, world_both):
    dataset, runs = world_both
    campaign = build(owner, dataset, runs, direction="both", gold_exclusion_depth=20)
    own = dict(Caption.objects.filter(dataset=dataset).values_list("pk", "image_id"))
    items = (
        HitItem.objects.filter(hit__campaign=campaign).exclude(role=ItemRole.CANDIDATE).select_related("pair", "hit")
    )
    negatives = positives = 0
    for item in items:
        pair = item.pair
        if item.role == ItemRole.GOLD_POSITIVE:
            positives += 1
            assert pair.is_original and own[pair.caption_id] == pair.image_id
            continue
        negatives += 1
        assert not pair.is_original and own[pair.caption_id] != pair.image_id
        query, target = (
            (pair.image_id, pair.caption_id) if item.hit.stage == "i2t" else (pair.caption_id, pair.image_id)
        )
        assert not Candidate.objects.filter(
            run__in=runs, direction=item.hit.stage, query_id=query, target_id=target, rank__lte=20
        ).exists()
        assert not PairSource.objects.filter(pair=pair).exists()
    assert positives == negatives == campaign.hits.count()


@pytest.mark.parametrize("limit", [1, 2])
def test_a_gold_pair_is_used_in_at_most_reuse_limit_hits(owner, world, limit):
    dataset, runs = world
    campaign = build(owner, dataset, runs, gold_reuse_limit=limit, gold_positives_per_hit=2)
    uses = Counter(
        HitItem.objects.filter(hit__campaign=campaign)
        .exclude(role=ItemRole.CANDIDATE)
        .values_list("pair_id", flat=True)
    )
    assert uses and max(uses.values()) <= limit


def test_too_few_originals_for_the_reuse_limit_is_a_clear_error(owner):
    dataset = make_dataset(images=30, captions_per_image=1)
    runs = [add_run(dataset=dataset, name="solo", seed=3, top_k=10)]
    campaign = campaign_create(
        owner=owner,
        dataset=dataset,
        runs=runs,
        name="tight",
        pool_depth=10,
        gold_exclusion_depth=10,
        gold_positives_per_hit=8,
        gold_reuse_limit=1,
        gold_negatives_per_hit=0,
    )
    with pytest.raises(ApplicationError, match="gold reuse limit"):
        campaign_build(campaign=campaign)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.DRAFT and not campaign.pairs.exists()


def test_build_is_idempotent_and_rebuilds_when_options_change(owner, world):
    dataset, runs = world
    campaign = build(owner, dataset, runs)
    pair_ids = set(campaign.pairs.values_list("pk", flat=True))
    again = campaign_build(campaign=campaign)
    assert set(again.pairs.values_list("pk", flat=True)) == pair_ids
    Campaign.objects.filter(pk=campaign.pk).update(pool_depth=2)
    rebuilt = campaign_build(campaign=Campaign.objects.get(pk=campaign.pk))
    assert not set(rebuilt.pairs.values_list("pk", flat=True)) & pair_ids
    assert rebuilt.pairs.filter(sources__rank__gt=2).count() == 0


def test_sampling_takes_the_requested_number_of_queries(owner, world):
    dataset, runs = world
    campaign = build(owner, dataset, runs, sample_count=7)
    queries = set(Pair.objects.filter(campaign=campaign, sources__isnull=False).values_list("query_id", flat=True))
    assert len(queries) == 7
    fraction = build(owner, dataset, runs, sample_fraction=0.25)
    assert fraction.build_report["statistics"]["queries"] == {"i2t": 10}


def test_adding_a_run_adds_only_new_pairs_in_new_hits(owner, world):
    dataset, runs = world
    campaign = build(owner, dataset, runs[:2], sample_count=20)
    campaign_launch(campaign=campaign)
    before_pairs = dict(
        ((image, caption), pk)
        for pk, image, caption in Pair.objects.filter(campaign=campaign).values_list("pk", "image_id", "caption_id")
    )
    before_hits = campaign.hits.count()
    campaign = campaign_add_run(campaign=campaign, run=runs[2])
    after = Pair.objects.filter(campaign=campaign)
    # Old pairs keep their rows; no pair is duplicated.
    for (image, caption), pk in before_pairs.items():
        assert after.get(image_id=image, caption_id=caption).pk == pk
    new_pairs = after.exclude(pk__in=before_pairs.values())
    assert new_pairs.exists()
    # Every new candidate pair was proposed by the new run only, and is asked in a new HIT.
    for pair in new_pairs.filter(sources__isnull=False).distinct():
        assert set(pair.sources.values_list("run_id", flat=True)) == {runs[2].pk}
    new_hit_items = HitItem.objects.filter(hit__campaign=campaign, hit__index__gte=before_hits)
    assert set(new_pairs.filter(sources__isnull=False).values_list("pk", flat=True)) <= set(
        new_hit_items.values_list("pair_id", flat=True)
    )
    # Pairs the new run also proposed keep their place and gain its provenance.
    shared = PairSource.objects.filter(run=runs[2], pair_id__in=before_pairs.values())
    assert shared.exists()
    for _i, _s, _r, items in campaign_snapshot(campaign):
        assert Counter(item[1] for item in items) == {"candidate": 16, "gold_positive": 1, "gold_negative": 1}
    # Every proposed pair is asked as a candidate somewhere, including former gold pairs the new run proposed.
    asked = set(
        HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values_list("pair_id", flat=True)
    )
    assert set(Pair.objects.filter(campaign=campaign, sources__isnull=False).values_list("pk", flat=True)) <= asked
    assert campaign.status == CampaignStatus.LIVE
    count = after.count()
    campaign_add_run(campaign=campaign, run=runs[2])  # idempotent
    assert Pair.objects.filter(campaign=campaign).count() == count


def test_state_machine_refuses_wrong_moves_with_409(owner, world):
    dataset, runs = world
    campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, name="states", sample_count=5)
    with pytest.raises(ApplicationError) as error:
        campaign_launch(campaign=campaign)
    assert error.value.status == 409 and "draft" in error.value.message
    campaign = campaign_build(campaign=campaign)
    with pytest.raises(ApplicationError) as error:
        campaign_pause(campaign=campaign)
    assert error.value.status == 409
    with pytest.raises(ApplicationError) as error:
        campaign_resume(campaign=campaign)
    assert error.value.status == 409
    campaign = campaign_launch(campaign=campaign)
    assert campaign.status == CampaignStatus.LIVE and campaign.launched_at
    launched_at = campaign.launched_at
    assert campaign_launch(campaign=campaign).launched_at == launched_at  # a second click changes nothing
    with pytest.raises(ApplicationError) as error:
        campaign_build(campaign=campaign)
    assert error.value.status == 409 and "live cannot become building" in error.value.message
    assert campaign_pause(campaign=campaign).status == CampaignStatus.PAUSED
    assert campaign_resume(campaign=campaign).status == CampaignStatus.LIVE
    assert campaign_finish(campaign=campaign).status == CampaignStatus.FINISHED
    for move in (campaign_launch, campaign_resume, campaign_pause, campaign_build):
        with pytest.raises(ApplicationError) as error:
            move(campaign=campaign)
        assert error.value.status == 409


def test_cost_is_reward_times_hits_times_redundancy_plus_fee(owner, world):
    dataset, runs = world
    campaign = build(owner, dataset, runs, reward_cents=140, redundancy=3, platform_fee_percent=20.0)
    stats = campaign_statistics(campaign=campaign)
    hits = campaign.hits.count()
    assert stats["hits"] == hits > 0
    assert stats["cost"]["rewards_cents"] == 140 * hits * 3
    assert stats["cost"]["total_cents"] == pytest.approx(140 * hits * 3 * 1.2)
    assert stats["duration"]["worker_hours"] == pytest.approx(hits * 3 * 18 * 20.0 / 3600, abs=0.01)
    assert stats["progress"] == {
        "hits_total": hits,
        "hits_done": 0,
        "hits_approved": 0,
        "hits_submitted": 0,
        "percent": 0.0,
        "assignments": {s: 0 for s in stats["progress"]["assignments"]},
    }


def test_create_refuses_bad_runs_and_options_with_a_message(owner, world):
    dataset, runs = world
    other = make_dataset(images=2)
    foreign = add_run(dataset=other, name="foreign", seed=1)
    failed = RankingRunFactory(dataset=dataset, status=RunStatus.FAILED)
    cases = [
        ({"runs": [foreign]}, "another dataset"),
        ({"runs": [failed]}, "failed"),
        ({"runs": []}, "at least one"),
        ({"sample_count": 3, "sample_fraction": 0.5}, "not both"),
        ({"redundancy": 12}, "redundancy"),
        ({"gold_exclusion_depth": 2, "pool_depth": 5}, "exclusion depth"),
        ({"gold_exclusion_depth": 30}, "top 25"),
        ({"direction": "t2t"}, "similarity"),
        ({"colour": "blue"}, "Unknown campaign options"),
    ]
    for change, message in cases:
        kwargs = {"owner": owner, "dataset": dataset, "runs": runs, "name": "bad", **change}
        with pytest.raises(ApplicationError, match=message) as error:
            campaign_create(**kwargs)
        assert error.value.status == 400
    assert not Campaign.objects.filter(name="bad").exists()


def test_caption_caption_campaigns_pair_captions_on_the_similarity_scale(owner):
    dataset = make_dataset(images=30)
    run = add_run(dataset=dataset, name="sts", seed=5, directions=("t2t",), top_k=10)
    campaign = build(
        owner,
        dataset,
        [run],
        direction="t2t",
        scale="similarity",
        pool_depth=3,
        gold_exclusion_depth=10,
        sample_count=40,
    )
    pairs = Pair.objects.filter(campaign=campaign)
    assert pairs.exists() and set(pairs.values_list("kind", flat=True)) == {"caption_caption"}
    for pair in pairs:
        assert pair.caption_id < pair.other_caption_id and pair.image_id is None
    own = dict(Caption.objects.filter(dataset=dataset).values_list("pk", "image_id"))
    for item in HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.GOLD_POSITIVE).select_related("pair"):
        assert own[item.pair.caption_id] == own[item.pair.other_caption_id]  # co-captions
    for _i, _s, _r, items in campaign_snapshot(campaign):
        assert len(items) == 18
    # A worker sees two captions per item, gold or not, in the same shape.
    entries = hit_worker_items(hit=campaign.hits.first())
    assert all(e["caption"] and e["other_caption"] and e["image_url"] == "" for e in entries)
    assert len({tuple(sorted((k, type(v).__name__) for k, v in e.items())) for e in entries}) == 1


def test_a_gold_pair_that_a_new_run_proposes_is_asked_as_a_candidate(owner, world):
    dataset, runs = world
    campaign = build(owner, dataset, runs[:1], sample_count=10)
    gold = HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.GOLD_POSITIVE).select_related("pair").first()
    image_id, caption_id = gold.pair.image_id, gold.pair.caption_id
    newcomer = RankingRunFactory(dataset=dataset, top_k=25)
    captions = list(Caption.objects.filter(dataset=dataset).exclude(pk=caption_id).values_list("pk", flat=True))
    Candidate.objects.bulk_create(
        [Candidate(run=newcomer, direction="i2t", query_id=image_id, target_id=caption_id, rank=1, score=0.99)]
        + [
            Candidate(run=newcomer, direction="i2t", query_id=image_id, target_id=c, rank=r + 2, score=0.5)
            for r, c in enumerate(captions[:24])
        ]
    )
    campaign_add_run(campaign=campaign, run=newcomer)
    assert HitItem.objects.filter(hit__campaign=campaign, pair=gold.pair, role=ItemRole.CANDIDATE).exists()
    assert PairSource.objects.filter(pair=gold.pair, run=newcomer, rank=1).exists()
    assert Pair.objects.filter(campaign=campaign, image_id=image_id, caption_id=caption_id).count() == 1


def test_image_image_campaigns_need_no_gold_positive_and_pack_image_pairs(owner):
    dataset = make_dataset(images=60, captions_per_image=1)
    run = add_run(dataset=dataset, name="sis", seed=6, directions=("i2i",), top_k=10)
    with pytest.raises(ApplicationError, match="no original pairs"):
        campaign_create(
            owner=owner,
            dataset=dataset,
            runs=[run],
            name="sis",
            direction="i2i",
            scale="similarity",
            pool_depth=3,
            gold_exclusion_depth=10,
        )
    campaign = build(
        owner,
        dataset,
        [run],
        direction="i2i",
        scale="similarity",
        pool_depth=3,
        gold_exclusion_depth=10,
        gold_positives_per_hit=0,
    )
    snapshot = campaign_snapshot(campaign)
    assert snapshot
    for _i, stage, _r, items in snapshot:
        assert stage == "i2i"
        assert Counter(item[1] for item in items) == {"candidate": 16, "gold_negative": 1}
        for _pos, _role, kind, image, caption, other_image, other_caption in items:
            assert kind == "image_image" and image < other_image and caption is None and other_caption is None
