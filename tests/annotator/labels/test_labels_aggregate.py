"""labels_aggregate: approved answers only, all methods, upsert, extra assignments
(annotator/labels/services/aggregation.py)."""

import pytest

from annotator.core.errors import ApplicationError
from annotator.labels.services.aggregation import labels_aggregate
from annotator.models import AssignmentStatus, HitStatus, ItemRole, Label, Scale
from annotator.quality.services.decisions import assignment_approve, assignment_reject
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import HitFactory, HitItemFactory

pytestmark = pytest.mark.django_db


def _approved(hit, **answers):
    return assignment_approve(assignment=submit(hit, **answers))


def test_labels_from_approved_answers_only_for_every_method():
    hit = hit_with_gold(candidates=2, redundancy=3)
    _approved(hit, candidate="yes")
    _approved(hit, candidate="partially_yes")
    rejected = submit(hit, candidate="no")
    assignment_reject(assignment=rejected, reason="spam")
    submit(hit, candidate="no")  # submitted, not yet approved: not counted either
    report = labels_aggregate(campaign=hit.campaign)
    assert report["labels"] == {"posterior": 4, "majority": 4, "gold_weighted": 4, "dawid_skene": 4}
    candidate_pair = hit.items.filter(role=ItemRole.CANDIDATE).first().pair
    label = Label.objects.get(pair=candidate_pair, method="majority")
    assert label.answer_count == 2 and label.is_positive and label.confidence == 1.0
    assert label.choice in ("yes", "partially_yes")


@pytest.mark.parametrize("method", ["majority", "gold_weighted", "dawid_skene", "glad", "mace", "wawa"])
def test_every_four_choice_method_stores_labels_with_a_90_percent_interval(method):
    hit = hit_with_gold(candidates=2, redundancy=3)
    _approved(hit, candidate="yes")
    _approved(hit, candidate="partially_yes")
    _approved(hit, candidate="no")
    report = labels_aggregate(campaign=hit.campaign, method=method)
    assert report["labels"] == {method: 4}
    labels = Label.objects.filter(pair_id__in=hit.items.values("pair_id"), method=method)
    assert labels.count() == 4
    for label in labels:
        assert label.probability_low <= label.probability <= label.probability_high
        assert 0.0 <= label.probability_low < label.probability_high <= 1.0


def test_a_promoted_gold_pair_keeps_its_uncertainty_in_the_label():
    """A candidate the crowd settled, then asked again as gold in a follow-up (promoted): its Label rests on
    the crowd's answers, its gold answers among them, with an interval; the campaign's own gold stays known.
    Taken as known, its label would be P = 1 with an interval of width zero, drawn from its own settling."""
    hit = hit_with_gold(candidates=1, redundancy=3)
    pair = hit.items.get(role=ItemRole.CANDIDATE).pair
    for _ in range(3):
        _approved(hit, candidate="yes")
    followup = HitFactory(campaign=hit.campaign, assignments_required=1, followup_round=1)
    HitItemFactory(hit=followup, pair=pair, role=ItemRole.GOLD_POSITIVE)
    _approved(followup, gold_positive="no")  # one dissent, on the pair asked as gold
    labels_aggregate(campaign=hit.campaign, method="posterior")
    label = Label.objects.get(pair=pair, method="posterior")
    assert label.answer_count == 4 and label.is_positive
    assert label.probability_low < label.probability < 1.0 and label.probability_high > label.probability_low
    gold = Label.objects.get(pair=hit.items.get(role=ItemRole.GOLD_POSITIVE).pair, method="posterior")
    assert gold.probability == 1.0 and gold.probability_low == gold.probability_high == 1.0


def test_aggregate_twice_upserts_and_follows_overturned_decisions():
    hit = hit_with_gold(candidates=1, redundancy=1)
    approved = _approved(hit, candidate="no")
    labels_aggregate(campaign=hit.campaign, method="majority")
    labels_aggregate(campaign=hit.campaign, method="majority")
    assert Label.objects.filter(method="majority").count() == 3
    assignment_reject(assignment=approved, reason="overturned on appeal")
    labels_aggregate(campaign=hit.campaign, method="majority")
    assert not Label.objects.filter(method="majority").exists()


def test_strict_positive_is_yes_only():
    hit = hit_with_gold(candidates=1, redundancy=3)
    for _ in range(3):
        _approved(hit, candidate="partially_yes")
    labels_aggregate(campaign=hit.campaign, method="majority")
    label = Label.objects.get(pair__hit_items__role=ItemRole.CANDIDATE, method="majority")
    assert label.is_positive and not label.is_positive_strict


def test_similarity_uses_the_mean_and_refuses_voting_methods():
    hit = hit_with_gold(candidates=1, redundancy=2, scale=Scale.SIMILARITY)
    for value in (4.0, 2.5):
        assignment_approve(
            assignment=submit(
                hit, score={ItemRole.CANDIDATE: value, ItemRole.GOLD_POSITIVE: 5.0, ItemRole.GOLD_NEGATIVE: 0.0}
            )
        )
    assert labels_aggregate(campaign=hit.campaign)["labels"] == {"mean": 3}
    label = Label.objects.get(pair__hit_items__role=ItemRole.CANDIDATE, method="mean")
    assert label.score == pytest.approx(3.25) and label.is_positive and label.confidence == 0.5
    with pytest.raises(ApplicationError):
        labels_aggregate(campaign=hit.campaign, method="dawid_skene")


def test_low_confidence_pair_gets_one_more_assignment_up_to_the_cap():
    """2 vs 1 on a pair (confidence 0.67 < 0.7) reopens its complete HIT once; the cap stops a second raise."""
    hit = hit_with_gold(
        candidates=1, redundancy=3, confidence_threshold=0.7, extra_assignment_cap=1, label_model="majority"
    )
    _approved(hit, candidate="yes")
    _approved(hit, candidate="yes")
    _approved(hit, candidate="no")
    hit.refresh_from_db()
    assert hit.status == HitStatus.COMPLETE
    assert labels_aggregate(campaign=hit.campaign)["extra_assignments"] == 1
    hit.refresh_from_db()
    assert (hit.assignments_required, hit.status) == (4, HitStatus.OPEN)
    assert labels_aggregate(campaign=hit.campaign)["extra_assignments"] == 0  # waiting for that answer
    _approved(hit, candidate="no")  # 2 vs 2: still unsure, but the cap is reached
    assert labels_aggregate(campaign=hit.campaign)["extra_assignments"] == 0
    hit.refresh_from_db()
    assert (hit.assignments_required, hit.status) == (4, HitStatus.COMPLETE)


def test_no_extra_assignment_without_a_cap():
    hit = hit_with_gold(candidates=1, redundancy=3, extra_assignment_cap=0)
    for choice in ("yes", "yes", "no"):
        _approved(hit, candidate=choice)
    assert labels_aggregate(campaign=hit.campaign)["extra_assignments"] == 0


def test_aggregation_task_runs_the_service():
    from workers.tasks.quality import labels_aggregate_task

    hit = hit_with_gold(candidates=1)
    _approved(hit)
    assert labels_aggregate_task.delay(hit.campaign_id, "majority").get()["labels"] == {"majority": 3}
    assert AssignmentStatus.APPROVED in set(hit.assignments.values_list("status", flat=True))


def test_beat_aggregates_only_campaigns_with_newer_decisions():
    from annotator.labels.services.aggregation import campaigns_aggregate_stale
    from annotator.models import CampaignStatus

    hit = hit_with_gold(candidates=1, status=CampaignStatus.LIVE)
    idle = hit_with_gold(candidates=1, status=CampaignStatus.LIVE)
    _approved(hit)
    assert campaigns_aggregate_stale() == [hit.campaign_id]
    assert Label.objects.filter(pair__campaign=hit.campaign, method="dawid_skene").count() == 3
    assert campaigns_aggregate_stale() == []  # nothing decided since
    assert not Label.objects.filter(pair__campaign=idle.campaign).exists()
