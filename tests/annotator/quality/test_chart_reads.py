"""The series the charts draw (annotator/quality/selectors/charts.py), checked on small campaigns whose numbers are
worked out by hand."""

from datetime import UTC, datetime, timedelta

import pytest

from annotator.analysis.trust import wilson_interval
from annotator.models import Answer, AssignmentStatus, CampaignStatus, ItemRole, PairSource, Role, WorkerStanding
from annotator.quality.selectors import charts
from annotator.quality.selectors.quality import campaign_quality
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import MachineAnnotatorFactory, RankingRunFactory, WorkerFactory, user_with_role

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 5, 10, 15, tzinfo=UTC)


def _at(assignment, submitted, *, approved_at=None, status=None):
    assignment.submitted_at = submitted
    if approved_at:
        assignment.status, assignment.decided_at = AssignmentStatus.APPROVED, approved_at
    elif status:
        assignment.status, assignment.decided_at = status, submitted
    assignment.save()
    return assignment


@pytest.fixture
def campaign_with_work():
    """Three workers on one live campaign: two approved, one rejected, over three hours."""
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, redundancy=3, status=CampaignStatus.LIVE, candidates=2)
    a = _at(submit(hit, seconds=1.0), T0, approved_at=T0 + timedelta(hours=2, minutes=20))
    b = _at(submit(hit, seconds=7.0), T0 + timedelta(minutes=25), approved_at=T0 + timedelta(hours=2, minutes=30))
    c = _at(submit(hit, seconds=150.0), T0 + timedelta(hours=1, minutes=50), status=AssignmentStatus.REJECTED)
    return hit, (a, b, c)


def test_throughput_per_hour_keeps_empty_hours_and_running_totals(campaign_with_work):
    hit, _ = campaign_with_work
    series = charts.throughput(campaign=hit.campaign)
    assert series["unit"] == "hour"
    assert series["labels"] == ["2026-01-05 10:00 UTC", "2026-01-05 11:00 UTC", "2026-01-05 12:00 UTC"]
    assert series["submitted"] == [2, 0, 1]
    assert series["approved"] == [0, 0, 2]
    assert series["total_submitted"] == [2, 2, 3]
    assert series["total_approved"] == [0, 0, 2]


def test_throughput_counts_per_day_over_more_than_two_days(campaign_with_work):
    hit, (a, _, _) = campaign_with_work
    _at(submit(hit), T0 + timedelta(days=3))
    series = charts.throughput(campaign=hit.campaign)
    assert series["unit"] == "day"
    assert series["labels"][0] == "2026-01-05 UTC" and series["labels"][-1] == "2026-01-08 UTC"
    assert series["submitted"] == [3, 0, 0, 1]
    assert series["total_approved"] == [2, 2, 2, 2]


def test_throughput_of_a_campaign_without_work_is_empty():
    hit = hit_with_gold(status=CampaignStatus.LIVE)
    assert charts.throughput(campaign=hit.campaign)["labels"] == []


def test_worker_intervals_are_wilson_intervals_of_decided_work_and_gold(campaign_with_work):
    hit, (a, _, c) = campaign_with_work
    WorkerStanding.objects.create(requester=hit.campaign.owner, worker=a.worker, gold_correct=3, gold_total=4)
    q = campaign_quality(campaign=hit.campaign)
    series = charts.worker_intervals(per_worker=q["per_worker"])
    by_name = {name: i for i, name in enumerate(series["labels"])}
    i, k = by_name[a.worker.pseudonym], by_name[c.worker.pseudonym]
    assert series["approval"][i] == 1.0 and series["approval"][k] == 0.0
    low, high = wilson_interval(1, 1)
    assert series["approval_interval"][i] == [round(low, 4), round(high, 4)]
    assert series["gold"][i] == 0.75
    low, high = wilson_interval(3, 4)
    assert series["gold_interval"][i] == [round(low, 4), round(high, 4)]
    # A worker with no gold on record has no gold point and no interval.
    assert series["gold"][k] is None and series["gold_interval"][k] is None


def test_worker_intervals_leave_undecided_work_out():
    hit = hit_with_gold(status=CampaignStatus.LIVE)
    submit(hit)
    series = charts.worker_intervals(per_worker=campaign_quality(campaign=hit.campaign)["per_worker"])
    assert series["approval"] == [None] and series["approval_interval"] == [None]


def _two_models(hit):
    """Candidate 1 proposed by alpha (rank 1) and beta (rank 2); candidate 2 by alpha alone (rank 2)."""
    alpha = RankingRunFactory(annotator=MachineAnnotatorFactory(name="alpha"), dataset=hit.campaign.dataset)
    beta = RankingRunFactory(annotator=MachineAnnotatorFactory(name="beta"), dataset=hit.campaign.dataset)
    first, second = hit.items.filter(role=ItemRole.CANDIDATE).order_by("position")
    PairSource.objects.create(pair=first.pair, run=alpha, direction="i2t", rank=1, score=1.0)
    PairSource.objects.create(pair=first.pair, run=beta, direction="i2t", rank=2, score=1.0)
    PairSource.objects.create(pair=second.pair, run=alpha, direction="i2t", rank=2, score=0.5)
    return first, second


def test_error_types_have_one_row_per_annotator(campaign_with_work):
    hit, (a, b, _) = campaign_with_work
    first, second = _two_models(hit)
    Answer.objects.filter(assignment=a, item=first).update(choice="mostly_no", shortcomings=["extra_concepts"])
    Answer.objects.filter(assignment=a, item=second).update(
        choice="partially_yes", shortcomings=["wrong_way"], wrong_aspects=["color"]
    )
    Answer.objects.filter(assignment=b, item=second).update(
        choice="mostly_no", shortcomings=["wrong_way", "grammar"], wrong_aspects=["quantity"]
    )
    errors = charts.error_types_by_annotator(campaign=hit.campaign)
    labels = errors["shortcomings"]["labels"]
    assert labels[0] == "describes concepts that do not appear in the image"
    rows = {row["annotator"]: row for row in errors["shortcomings"]["rows"]}
    # alpha proposed both pairs: extra_concepts 1, wrong_way 2, grammar 1 of 4 reasons.
    assert rows["alpha"]["n"] == 4 and rows["alpha"]["shares"] == [0.25, 0.0, 0.5, 0.25]
    # beta proposed only the first pair: its one reason.
    assert rows["beta"]["n"] == 1 and rows["beta"]["shares"] == [1.0, 0.0, 0.0, 0.0]
    aspects = {row["annotator"]: row for row in errors["aspects"]["rows"]}
    assert aspects["alpha"]["n"] == 2
    assert aspects["alpha"]["shares"][:2] == [0.5, 0.5]  # quantity, color
    assert aspects["beta"]["n"] == 0 and set(aspects["beta"]["shares"]) == {0.0}


def test_error_types_leave_unapproved_work_out(campaign_with_work):
    hit, (_, _, c) = campaign_with_work
    first, _ = _two_models(hit)
    Answer.objects.filter(assignment=c, item=first).update(choice="mostly_no", shortcomings=["grammar"])
    rows = charts.error_types_by_annotator(campaign=hit.campaign)["shortcomings"]["rows"]
    assert all(row["n"] == 0 for row in rows)


def test_model_rate_charts_stack_the_table_b2_shares(campaign_with_work):
    hit, (a, b, _) = campaign_with_work
    first, second = _two_models(hit)
    Answer.objects.filter(assignment=a, item=second).update(choice="partially_yes")
    q = campaign_quality(campaign=hit.campaign)
    chart = {c["annotator"]: c for c in charts.model_rate_charts(model_rates=q["model_rates"])}["alpha (i2t)"]
    assert chart["labels"] == ["Rank 1", "Rank 2", "All"]
    assert [s["label"] for s in chart["series"]] == ["100% YES", "Partially YES", "Mostly NO", "100% NO"]
    # Rank 1 (first pair): two approved "yes"; rank 2 (second pair): one yes, one partially yes.
    assert chart["series"][0]["data"] == [1.0, 0.5, 0.75]
    assert chart["series"][1]["data"] == [0.0, 0.5, 0.25]


def test_seconds_per_item_histogram(campaign_with_work):
    hit, _ = campaign_with_work
    series = charts.seconds_per_item(campaign=hit.campaign)
    # 4 items each: 1 s (0-2), 7 s (5-10), 150 s (120 +).
    assert series["labels"][0] == "0-2 s" and series["labels"][-1] == "120 s +"
    assert series["counts"] == [4, 0, 4, 0, 0, 0, 0, 4]
    assert series["answers"] == 12 and series["median"] == 7.0


def test_seconds_per_item_leaves_reserved_work_out():
    hit = hit_with_gold(status=CampaignStatus.LIVE)
    assignment = submit(hit, worker=WorkerFactory())
    assignment.status, assignment.submitted_at = AssignmentStatus.RESERVED, None
    assignment.save()
    assert charts.seconds_per_item(campaign=hit.campaign)["answers"] == 0
