"""Gold that stays secret: the qualification pool apart from HIT gold, no pair twice to one worker, rotation."""

from collections import Counter

import pytest
from django.utils import timezone

from annotator.campaigns.selectors.gold_exposure import (
    gold_exposure_per_worker,
    gold_exposure_summary,
)
from annotator.campaigns.services.build import campaign_add_run, campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.campaigns.services.qualification_pool import pair_key_of
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.crowd.services.answers import assignment_submit
from annotator.crowd.services.assignments import assignment_claim, assignment_claim_external
from annotator.crowd.services.qualification import qualification_start, qualification_submit
from annotator.models import (
    Assignment,
    AssignmentStatus,
    AuditEvent,
    Candidate,
    GoldRetirement,
    Hit,
    HitItem,
    ItemRole,
    Pair,
    QualificationItem,
    Role,
)
from annotator.quality.services.gold_rotation import gold_rotate
from tests.annotator.campaign_support import add_run, make_dataset
from tests.factories import (
    AssignmentFactory,
    CaptionFactory,
    ImageFactory,
    WorkerFactory,
    live_campaign_with_hits,
    qualification_right_answers,
    user_with_role,
)

pytestmark = pytest.mark.django_db

GOLD = [ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE]


def built_campaign(*, images=60, per_hit=4, reuse=3, pool=30, qualification_items=6, launch=True, **options):
    owner = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=images)
    runs = [add_run(dataset=dataset, name="a", seed=1), add_run(dataset=dataset, name="b", seed=2)]
    campaign = campaign_create(
        owner=owner,
        dataset=dataset,
        runs=runs,
        name="secret gold",
        direction="i2t",
        candidates_per_hit=per_hit,
        gold_reuse_limit=reuse,
        qualification_pool_size=pool,
        qualification_items=qualification_items,
        **options,
    )
    campaign = campaign_build(campaign=campaign)
    return campaign_launch(campaign=campaign) if launch else campaign


def hit_pair_keys(campaign) -> set[int]:
    return {pair_key_of(item.pair) for item in HitItem.objects.filter(hit__campaign=campaign).select_related("pair")}


def test_the_qualification_pool_is_balanced_original_or_sure_negative_and_never_in_a_hit():
    campaign = built_campaign()
    pool = list(QualificationItem.objects.filter(campaign=campaign).select_related("caption"))
    roles = Counter(item.role for item in pool)
    assert roles["gold_positive"] >= 5 and roles["gold_negative"] >= 5 and len(pool) <= 30
    assert not {item.key for item in pool} & hit_pair_keys(campaign)
    run_ids = list(campaign.runs.values_list("pk", flat=True))
    for item in pool:
        assert item.key == (item.image_id << 32) | item.caption_id
        if item.role == "gold_positive":
            assert item.caption.image_id == item.image_id  # an original pair
        else:
            assert item.caption.image_id != item.image_id
            ranked = Candidate.objects.filter(
                run_id__in=run_ids, direction="i2t", query_id=item.image_id, target_id=item.caption_id
            )
            assert not ranked.filter(rank__lte=campaign.gold_exclusion_depth).exists()
    assert campaign.build_report["qualification_pool"] == len(pool)


def test_no_qualification_item_is_hit_gold_and_retakes_draw_fresh_items():
    campaign = built_campaign(qualification_cooldown_minutes=0)
    worker = WorkerFactory()
    hit_keys = hit_pair_keys(campaign)
    shown: list[int] = []
    for attempt_number in range(3):
        attempt = qualification_start(campaign=campaign, worker=worker)
        assert len(attempt.items) == 6
        items = QualificationItem.objects.in_bulk(attempt.items)
        assert not {items[pk].key for pk in attempt.items} & hit_keys
        assert not set(attempt.items) & set(shown), f"attempt {attempt_number} repeats an item"
        shown += attempt.items
        wrong = {k: ("no" if v == "yes" else "yes") for k, v in qualification_right_answers(attempt).items()}
        assert qualification_submit(attempt=attempt, worker=worker, answers=wrong).passed is False
    counts = QualificationItem.objects.filter(pk__in=shown).values_list("times_shown", flat=True)
    assert set(counts) == {1}


def test_a_run_added_later_that_proposes_a_pool_pair_leaves_it_reserved_for_the_test():
    campaign = built_campaign(launch=False)
    item = QualificationItem.objects.filter(campaign=campaign, role="gold_positive").first()
    new_run = add_run(dataset=campaign.dataset, name="c", seed=3, directions=())
    Candidate.objects.create(
        run=new_run, direction="i2t", query_id=item.image_id, target_id=item.caption_id, rank=1, score=1.0
    )
    campaign_add_run(campaign=campaign, run=new_run)
    item.refresh_from_db()
    assert not item.withdrawn
    assert item.key not in hit_pair_keys(campaign)
    assert not Pair.objects.filter(campaign=campaign, image_id=item.image_id, caption_id=item.caption_id).exists()


def work_hit(*, campaign, worker) -> Assignment:
    assignment = assignment_claim(campaign=campaign, worker=worker)
    answers = [{"item_token": token, "choice": "yes"} for token in hit_item_tokens(hit=assignment.hit)]
    return assignment_submit(assignment=assignment, worker=worker, answers=answers)


def test_no_worker_sees_a_gold_pair_twice_over_50_hits():
    campaign = built_campaign(images=150, per_hit=4, reuse=3, qualification_items=0, gold_max_exposure=99)
    gold_hits = Counter(HitItem.objects.filter(hit__campaign=campaign, role__in=GOLD).values_list("pair_id", flat=True))
    assert max(gold_hits.values()) == 3  # gold is reused, so a careless claim order would repeat it
    worker = WorkerFactory()
    done = [work_hit(campaign=campaign, worker=worker) for _ in range(50)]
    assert len({a.hit_id for a in done}) == 50
    pairs = list(HitItem.objects.filter(hit__assignments__worker=worker).values_list("pair_id", flat=True))
    assert len(pairs) == len(set(pairs)) == 50 * campaign.hit_size  # no pair at all, gold or not, twice
    exposure = gold_exposure_per_worker(campaign=campaign)[worker.pk]
    assert exposure == {"gold_pairs": 100, "views": 100, "most_views_of_one": 1}


def test_the_claim_order_alone_would_repeat_gold():
    """The rule above is what keeps gold apart: HITs in claim order share gold pairs."""
    campaign = built_campaign(images=150, per_hit=4, reuse=3, qualification_items=0, launch=False)
    seen, repeats = set(), 0
    for hit in Hit.objects.filter(campaign=campaign).order_by("stage", "index")[:50]:
        gold = set(hit.items.filter(role__in=GOLD).values_list("pair_id", flat=True))
        repeats += len(gold & seen)
        seen |= gold
    assert repeats > 0


def test_an_mturk_arrival_on_a_hit_with_a_pair_already_seen_is_refused():
    campaign = live_campaign_with_hits(hits=2, shared_gold=True, qualification_items=0)
    worker = WorkerFactory(external_id="AWORKER", user=None)
    first, second = Hit.objects.filter(campaign=campaign).order_by("index")
    assignment_claim_external(hit=first, worker=worker, external_assignment_id="A1")
    with pytest.raises(Exception, match="already worked on items of this HIT") as error:
        assignment_claim_external(hit=second, worker=worker, external_assignment_id="A2")
    assert error.value.status == 409


def with_spare_originals(campaign, images=6):
    """Images with captions in no pair yet: where fresh gold positives come from."""
    for _ in range(images):
        image = ImageFactory(dataset=campaign.dataset)
        CaptionFactory(image=image)
        CaptionFactory(image=image)
    return campaign


def test_over_exposed_gold_is_retired_and_replaced_in_unopened_hits_only():
    campaign = live_campaign_with_hits(hits=4, shared_gold=True, qualification_items=0, gold_max_exposure=2)
    with_spare_originals(campaign)
    hits = list(Hit.objects.filter(campaign=campaign).order_by("index"))
    gold_before = dict(HitItem.objects.filter(hit=hits[0], role__in=GOLD).values_list("role", "pair_id"))
    for hit in hits[:2]:
        AssignmentFactory(
            hit=hit, worker=WorkerFactory(), status=AssignmentStatus.SUBMITTED, submitted_at=timezone.now()
        )
    retired = gold_rotate(campaign=campaign)
    assert {r.pair_id for r in retired} == set(gold_before.values())
    assert all(r.reason == "exposed" and r.exposure == 2 for r in retired)
    for hit in hits[:2]:  # opened: unchanged
        assert dict(hit.items.filter(role__in=GOLD).values_list("role", "pair_id")) == gold_before
    fresh = []
    for hit in hits[2:]:
        now = dict(hit.items.filter(role__in=GOLD).values_list("role", "pair_id"))
        assert set(now) == set(gold_before) and not set(now.values()) & set(gold_before.values())
        fresh += now.values()
    assert len(fresh) == len(set(fresh)) == 4  # each unopened HIT got its own fresh pair
    positive = Pair.objects.get(pk=dict(hits[2].items.values_list("role", "pair_id"))["gold_positive"])
    assert positive.caption.image_id == positive.image_id
    assert AuditEvent.objects.filter(action="gold_retire", campaign=campaign).count() == 2
    assert gold_rotate(campaign=campaign) == []  # idempotent
    summary = gold_exposure_summary(campaign=campaign)
    assert summary["retired_count"] == 2 and summary["max_workers_per_pair"] == 2


def test_gold_that_repeat_viewers_get_right_more_often_is_retired_as_learned():
    campaign = live_campaign_with_hits(hits=8, shared_gold=True, qualification_items=0, gold_max_exposure=99)
    with_spare_originals(campaign)
    hits = list(Hit.objects.filter(campaign=campaign).order_by("index"))
    now = timezone.now()
    # Three first-time viewers answer the gold wrong; the same three, meeting it again (as MTurk's own HIT
    # choice can make them), answer it right.
    workers = [WorkerFactory() for _ in range(3)]
    for round_number, choice_for in enumerate(({"gold_positive": "no", "gold_negative": "yes"}, None)):
        for number, worker in enumerate(workers):
            hit = hits[round_number * 3 + number]
            assignment = AssignmentFactory(
                hit=hit, worker=worker, status=AssignmentStatus.SUBMITTED, submitted_at=now, expires_at=now
            )
            Assignment.objects.filter(pk=assignment.pk).update(
                reserved_at=now + timezone.timedelta(minutes=round_number * 10 + number)
            )
            for item in hit.items.all():
                right = "yes" if item.role in ("gold_positive", "candidate") else "no"
                choice = choice_for[item.role] if choice_for and item.role in choice_for else right
                item.answers.create(assignment=assignment, choice=choice)
    retired = gold_rotate(campaign=campaign)
    assert {r.reason for r in retired} == {"learned"} and len(retired) == 2
    detail = retired[0].detail
    assert detail["first_accuracy"] == 0.0 and detail["repeat_accuracy"] == 1.0
    assert GoldRetirement.objects.filter(campaign=campaign).count() == 2
    # The two HITs nobody opened got fresh gold.
    assert all(len(r.replaced_in) == 2 for r in retired)


def test_the_requester_sees_the_pool_its_exposure_and_retired_gold_on_the_campaign_page(client):
    campaign = built_campaign(qualification_cooldown_minutes=0)
    worker = WorkerFactory()
    qualification_start(campaign=campaign, worker=worker)
    hit = Hit.objects.filter(campaign=campaign).order_by("index").last()
    pair_id = hit.items.filter(role="gold_negative").values_list("pair_id", flat=True).first()
    GoldRetirement.objects.create(
        campaign=campaign, pair_id=pair_id, role="gold_negative", reason="exposed", exposure=6
    )
    client.force_login(campaign.owner)
    html = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    pool = QualificationItem.objects.filter(campaign=campaign)
    assert "Gold secrecy" in html
    assert f"{pool.count()} pairs ({pool.filter(role='gold_positive').count()} positive" in html
    assert "shown 6 times in tests" in html
    assert f"<td>{pair_id}</td><td>gold_negative</td><td>seen too often</td>" in html
    worker_client = type(client)()
    worker_client.force_login(user_with_role(Role.WORKER))
    assert worker_client.get(f"/campaigns/{campaign.pk}/").status_code in (403, 404)
