"""A campaign's agreement and worker statistics (annotator/quality/selectors/agreement.py) on its page, in its CSV and
through the API: Krippendorff's alpha over the campaign's answers as the `krippendorff` package computes it,
per annotator and rank, rejected work left out; per worker gold accuracy, speed and first-pass approval."""

import csv
import io

import krippendorff
import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.analysis.agreement import ORDINAL_CHOICES
from annotator.models import Answer, AssignmentStatus, ItemRole, PairSource, Role
from annotator.quality.selectors.agreement import (
    WORKER_CSV_COLUMNS,
    campaign_agreement,
    campaign_worker_statistics,
)
from annotator.quality.services.decisions import assignment_approve, assignment_reject
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import RankingRunFactory, WorkerFactory, user_with_role

pytestmark = pytest.mark.django_db

# Each worker's answer to the 6 candidates, in position order; "rejected" is rejected and left out.
ANSWERS = {
    "careful": ["yes", "yes", "partially_yes", "no", "no", "mostly_no"],
    "also-careful": ["yes", "partially_yes", "yes", "no", "mostly_no", "no"],
    "sloppy": ["yes", "no", "yes", "yes", "no", "partially_yes"],
    "rejected": ["no", "no", "no", "yes", "yes", "yes"],
}
SECONDS = {"careful": 6.0, "also-careful": 4.0, "sloppy": 1.5, "rejected": 1.0}


@pytest.fixture
def campaign():
    """One HIT of 6 candidates (ranks 1-3 of one run, twice over) and 2 gold, answered by four workers; the
    "sloppy" one was rejected first and approved on a second look, "rejected" stays rejected."""
    hit = hit_with_gold(candidates=6, redundancy=4)
    campaign = hit.campaign
    run = RankingRunFactory(dataset=campaign.dataset)
    candidates = list(hit.items.filter(role=ItemRole.CANDIDATE).order_by("position"))
    for position, item in enumerate(candidates):
        PairSource.objects.create(pair=item.pair, run=run, direction="i2t", rank=position % 3 + 1, score=0.5)
    for name, choices in ANSWERS.items():
        assignment = submit(hit, worker=WorkerFactory(pseudonym=name), seconds=SECONDS[name])
        for item, choice in zip(candidates, choices, strict=True):
            Answer.objects.filter(assignment=assignment, item=item).update(choice=choice)
        if name == "sloppy":
            Answer.objects.filter(assignment=assignment, item__role=ItemRole.GOLD_NEGATIVE).update(choice="yes")
        assignment_score(assignment_id=assignment.pk)
        assignment.refresh_from_db()
        if name == "sloppy":
            assignment_reject(assignment=assignment, reason="gold")
            assignment_approve(assignment=assignment, reason="second look")
        elif name == "rejected":
            assignment_reject(assignment=assignment, reason="random")
        else:
            assignment_approve(assignment=assignment)
    return campaign


def _reference_alpha(positions):
    kept = [name for name in ANSWERS if name != "rejected"]
    matrix = np.array([[ORDINAL_CHOICES[ANSWERS[name][k]] for k in positions] for name in kept], dtype=float)
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")


def test_alpha_overall_and_per_rank_is_the_reference_packages_on_the_kept_answers(campaign):
    agreement = campaign_agreement(campaign=campaign)
    assert agreement["metric"] == "ordinal" and agreement["units"] == 6
    assert agreement["alpha"] == pytest.approx(_reference_alpha(range(6)), abs=1e-9)
    by_rank = {row["rank"]: row for row in agreement["by_rank"]}
    assert sorted(by_rank) == [1, 2, 3]
    for rank, row in by_rank.items():
        assert row["pairs"] == 2
        assert row["alpha"] == pytest.approx(_reference_alpha([rank - 1, rank + 2]), abs=1e-9)


def test_worker_statistics_speed_gold_and_first_pass_approval(campaign):
    rows = {row["worker"]: row for row in campaign_worker_statistics(campaign=campaign)}
    assert set(rows) == set(ANSWERS)
    careful, sloppy, rejected = rows["careful"], rows["sloppy"], rows["rejected"]
    assert (careful["gold_correct"], careful["gold_total"], careful["gold_accuracy"]) == (2, 2, 1.0)
    assert (sloppy["gold_correct"], sloppy["gold_total"], sloppy["gold_accuracy"]) == (1, 2, 0.5)
    assert careful["first_pass_approval"] == 1.0 and sloppy["first_pass_approval"] == 0.0  # approved on appeal
    assert (sloppy["approved"], rejected["rejected"]) == (1, 1)
    assert careful["median_seconds_per_item"] == 6.0 and sloppy["median_seconds_per_item"] == 1.5
    assert 0.0 <= careful["posterior_accuracy"] <= 1.0


def test_the_page_the_csv_and_the_api_show_them_to_the_campaigns_requester_only(client, campaign):
    client.force_login(campaign.owner)
    page = client.get(reverse("review-agreement", args=[campaign.pk])).content.decode()
    assert f'id="alpha">{campaign_agreement(campaign=campaign)["alpha"]:.3f}<' in page
    assert "careful" in page and "rejected" in page
    response = client.get(reverse("review-workers-csv", args=[campaign.pk]))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == WORKER_CSV_COLUMNS
    assert {row["worker"]: row["first_pass_approval"] for row in rows}["sloppy"] == "0.0"
    api = APIClient()
    api.force_authenticate(campaign.owner)
    body = api.get(f"/api/v1/campaigns/{campaign.pk}/agreement/").json()
    assert body["alpha"] == pytest.approx(_reference_alpha(range(6)), abs=1e-9)
    assert {row["worker"] for row in body["workers"]} == set(ANSWERS)
    assert api.get(f"/api/v1/campaigns/{campaign.pk}/workers-csv/").content == response.content
    stranger = user_with_role(Role.REQUESTER)
    client.force_login(stranger)
    assert client.get(reverse("review-agreement", args=[campaign.pk])).status_code == 404
    api.force_authenticate(stranger)
    assert api.get(f"/api/v1/campaigns/{campaign.pk}/agreement/").status_code == 404


def test_a_similarity_campaign_uses_interval_alpha():
    hit = hit_with_gold(candidates=3, redundancy=2, scale="similarity")
    for scores in ([1.0, 4.0, 5.0], [2.0, 4.5, 4.0]):
        assignment = submit(
            hit, score={ItemRole.CANDIDATE: 0.0, ItemRole.GOLD_POSITIVE: 5.0, ItemRole.GOLD_NEGATIVE: 0.0}
        )
        for item, score in zip(hit.items.filter(role=ItemRole.CANDIDATE).order_by("position"), scores, strict=True):
            Answer.objects.filter(assignment=assignment, item=item).update(score=score)
        assignment_score(assignment_id=assignment.pk)
    assert AssignmentStatus.SUBMITTED in set(hit.assignments.values_list("status", flat=True))
    agreement = campaign_agreement(campaign=hit.campaign)
    reference = krippendorff.alpha(
        reliability_data=np.array([[1.0, 4.0, 5.0], [2.0, 4.5, 4.0]]), level_of_measurement="interval"
    )
    assert agreement["metric"] == "interval" and agreement["alpha"] == pytest.approx(reference, abs=1e-9)
