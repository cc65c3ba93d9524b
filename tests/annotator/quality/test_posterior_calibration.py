"""Worker ability learned from work, and the posterior checked on gold (issue 32, parts 2 and 3):
annotator/quality/selectors/posterior.py (label_prior, campaign_gold_check), annotator/quality/services/calibration.py,
annotator/quality/selectors/redundancy.py (pair_settled) and the Quality page."""

import random

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.analysis.posterior import COVERAGE_TARGET, SHORTFALL_LEVEL
from annotator.crowd.services.qualification import qualification_start, qualification_submit
from annotator.labels.services.aggregation import labels_aggregate
from annotator.models import Answer, Assignment, AssignmentStatus, Campaign, HitItem, ItemRole, Label
from annotator.quality.selectors.posterior import campaign_gold_check, campaign_posterior
from annotator.quality.services.decisions import assignment_approve
from annotator.quality.services.scoring import assignment_score
from annotator.quality.services.trust import worker_trust
from tests.factories import AssignmentFactory, WorkerFactory, live_campaign_with_hits, qualification_right_answers

pytestmark = pytest.mark.django_db

TRUTH = {ItemRole.GOLD_POSITIVE: True, ItemRole.GOLD_NEGATIVE: False}


def _answer(hit, worker, says_positive) -> None:
    """A submitted assignment on `hit` whose answer to each item is says_positive(item) ("yes" or "no"), scored."""
    assignment = AssignmentFactory(
        hit=hit, worker=worker, status=AssignmentStatus.SUBMITTED, submitted_at=timezone.now()
    )
    for item in hit.items.order_by("position"):
        Answer.objects.create(
            assignment=assignment, item=item, choice="yes" if says_positive(item) else "no", seconds_spent=5.0
        )
    assignment_score(assignment_id=assignment.pk)


def _crowd_campaign(*, kind: str, seed: int = 7, hits: int = 12):
    """A live adaptive campaign of `hits` HITs (8 candidates and a gold pair of each kind, each HIT its own), each
    answered by two of four workers, then every assignment approved.

    strong: every answer right with probability 0.95, independently.
    weak (a crowd peer agreement overrates): the two workers of a HIT give the *same* answer to each candidate,
    wrong together one time in four (a shared misreading), so they always agree; on gold each is right only
    seven times in ten. Agreement says they are near-perfect; the gold says otherwise."""
    campaign = live_campaign_with_hits(hits=hits, candidates=8, redundancy=2, adaptive_redundancy=True)
    rng = random.Random(f"{kind}-{seed}")
    workers = [WorkerFactory() for _ in range(4)]
    truth = {}
    for index, hit in enumerate(campaign.hits.order_by("index")):
        shared = {}
        for item in hit.items.all():
            truth[item.pair_id] = TRUTH.get(item.role, rng.random() < 0.5)
            shared[item.pk] = rng.random() < 0.75
        for worker in (workers[index % 4], workers[(index + 1) % 4]):
            right = {}
            for item in hit.items.all():
                if kind == "weak":
                    right[item.pk] = rng.random() < 0.7 if item.role in TRUTH else shared[item.pk]
                else:
                    right[item.pk] = rng.random() < 0.95
            _answer(hit, worker, lambda item, right=right: truth[item.pair_id] == right[item.pk])
    for assignment in Assignment.objects.filter(hit__campaign=campaign, status=AssignmentStatus.SUBMITTED):
        assignment_approve(assignment=assignment, reason="test crowd")
    return campaign


def test_a_worker_perfect_on_the_test_but_weak_at_work_starts_from_the_crowd_not_the_test_score():
    """The qualification score is not evidence of accuracy at work: a newcomer who aced the test (6/6) starts
    from the requester's crowd at work (about 0.7 here), and their own weak work then moves them, never the
    test score of 1.0 nor a fixed careful-worker prior of 0.85."""
    campaign = live_campaign_with_hits(hits=9, candidates=8, redundancy=2, qualification_items=6)
    rng = random.Random("work")
    crowd = [WorkerFactory() for _ in range(4)]
    hits = list(campaign.hits.order_by("index"))
    truth = {}
    for hit in hits:
        for item in hit.items.all():
            truth[item.pair_id] = TRUTH.get(item.role, rng.random() < 0.5)
    for index, hit in enumerate(hits[:8]):
        for worker in (crowd[index % 4], crowd[(index + 1) % 4]):
            right = {item.pk: rng.random() < 0.7 for item in hit.items.all()}
            _answer(hit, worker, lambda item, right=right: truth[item.pair_id] == right[item.pk])
    newcomer = WorkerFactory()
    attempt = qualification_start(campaign=campaign, worker=newcomer)
    qualification_submit(attempt=attempt, worker=newcomer, answers=qualification_right_answers(attempt))
    record = worker_trust(worker=newcomer, requester_id=campaign.owner_id)
    assert record.gold_total >= 6 and record.gold_correct == record.gold_total  # flawless on the test
    right = {item.pk: rng.random() < 0.7 for item in hits[8].items.all()}
    _answer(hits[8], newcomer, lambda item: truth[item.pair_id] == right[item.pk])

    fit = campaign_posterior(campaign=campaign, approved_only=False)
    crowd_accuracy = fit.crowd_accuracy()
    rows, _, said = fit.votes
    at_work = sum(bool(s) == truth[int(fit.pairs[r])] for r, s in zip(rows, said, strict=True)) / len(said)
    assert at_work < 0.75  # the crowd is weak at work (0.7 per answer, drawn)
    assert abs(crowd_accuracy - at_work) < 0.1  # the crowd's prior: its accuracy at work, from gold and agreement
    row = int(list(fit.workers).index(newcomer.pk))
    newcomer_accuracy = float(fit.worker_accuracy()[row])
    assert newcomer_accuracy < 0.8  # not the test's 1.0, nor a fixed careful worker's 0.85
    assert abs(newcomer_accuracy - crowd_accuracy) < 0.1  # ten answers of their own: still near the crowd


def test_gold_scored_as_unknown_checks_the_intervals_and_a_weaker_crowd_gets_wider_ones_and_more_answers():
    """The strong crowd's intervals hold on gold (no inflation); the crowd whose agreement overstates it falls
    short on gold, so its intervals widen and adaptive redundancy asks again about more of its pairs."""
    strong = _crowd_campaign(kind="strong")
    weak = _crowd_campaign(kind="weak")

    strong_check, weak_check = campaign_gold_check(campaign=strong), campaign_gold_check(campaign=weak)
    assert strong_check.items == weak_check.items == 24  # every gold pair scored, each as if unknown
    assert strong_check.shortfall_p >= SHORTFALL_LEVEL and strong_check.inflation == 1.0
    assert weak_check.coverage < COVERAGE_TARGET and weak_check.shortfall_p < SHORTFALL_LEVEL
    assert weak_check.inflation > 1.0 and weak_check.inflated_coverage >= 0.9

    strong_report, weak_report = labels_aggregate(campaign=strong), labels_aggregate(campaign=weak)
    strong.refresh_from_db()
    weak.refresh_from_db()
    assert strong.posterior_inflation == 1.0 and weak.posterior_inflation == weak_check.inflation
    # The labels' intervals are the fit's, widened by the inflation in force.
    fit = campaign_posterior(campaign=weak, approved_only=True)
    low, high = fit.interval()
    row_of = fit.row_of()
    widened = 0
    for label in Label.objects.filter(pair__campaign=weak, method="posterior"):
        row = row_of[label.pair_id]
        assert label.probability_low <= low[row] + 1e-9 and label.probability_high >= high[row] - 1e-9
        widened += (label.probability_high - label.probability_low) > (high[row] - low[row]) + 1e-6
    assert widened > 0
    # Adaptive redundancy: the same number of candidate pairs, asked again far more often for the weak crowd.
    pairs = HitItem.objects.filter(role=ItemRole.CANDIDATE).values("pair_id").distinct()
    assert pairs.filter(hit__campaign=strong).count() == pairs.filter(hit__campaign=weak).count() == 96
    assert weak_report["followups"]["pairs"] > strong_report["followups"]["pairs"] + 20


def test_the_quality_page_shows_the_live_calibration_on_gold(client):
    campaign = _crowd_campaign(kind="weak")
    labels_aggregate(campaign=campaign)
    campaign = Campaign.objects.get(pk=campaign.pk)
    check = campaign_gold_check(campaign=campaign)
    client.force_login(campaign.owner)
    page = client.get(reverse("review-quality", args=[campaign.pk])).content.decode()
    assert 'id="calibration"' in page
    assert f'id="cal-coverage">{check.coverage * 100:.0f}%<' in page
    assert f'id="cal-ece">{check.ece:.3f}<' in page
    assert f'id="cal-inflation">{campaign.posterior_inflation:.2f}<' in page
    assert page.count('class="cal-bin"') == len(check.reliability) > 0
