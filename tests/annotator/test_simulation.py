"""The simulated crowd (annotator/scenarios/simulation.py) meets the issue's thresholds on a small synthetic set."""

import pytest
from django.core.management import call_command

from annotator.models import Assignment, AssignmentEvent, AssignmentStatus, Label, QualificationAttempt
from annotator.scenarios.simulation import SimulationConfig, simulate_crowd

pytestmark = pytest.mark.django_db


def test_twenty_percent_bad_workers_redundancy_three_meets_the_thresholds():
    """No qualification test (the hard case: every bad worker works), 20% bad, fixed redundancy 3.

    The crowd goes through the real services: claims, submits, gold scoring, review, the posterior crowd
    check before approval, and aggregation. Fifteen workers on thirty images is a small crowd for the
    posterior to learn every worker from; the issue's thresholds (>= 95% of bad flagged, <= 5% good) are
    measured on forty workers by bench/crowd_quality.py, so this small run checks a looser bar."""
    config = SimulationConfig(images=30, workers=15, seed=3, qualification_items=0, ranking="proposal", variant="fixed")
    result = simulate_crowd(config)
    m = result.metrics
    assert m["bad_assignments"] >= 6 and m["good_assignments"] >= 20  # enough of both to mean something
    assert m["answers_per_pair"] >= 2.9  # three answers a pair, whatever the review rejected
    assert m["accuracy"]["posterior"] >= 0.95 and m["accuracy"]["majority"] >= 0.95
    assert m["accuracy"]["dawid_skene"] >= 0.95
    assert m["bad_flagged"] >= 0.85
    assert m["good_flagged"] <= 0.10
    assert m["cost_per_verified_positive_cents"] > 0
    # Real work happened through the services: events, decisions by the simulated requester, labels.
    campaign_assignments = Assignment.objects.filter(hit__campaign_id=result.campaign_id)
    assert campaign_assignments.filter(status=AssignmentStatus.REJECTED).exists()
    assert AssignmentEvent.objects.filter(assignment__in=campaign_assignments, to_status="submitted").count() == (
        campaign_assignments.exclude(status__in=["reserved", "returned", "expired"]).count()
    )
    assert Label.objects.filter(pair__campaign_id=result.campaign_id, method="dawid_skene").exists()


def test_command_prints_the_table_and_the_qualification_keeps_spammers_out(capsys):
    call_command(
        "simulate_crowd", images=16, workers=10, seed=5, ranking="proposal", bad_share=0.4, always_yes_share=0.4
    )
    out = capsys.readouterr().out
    for row in (
        "label accuracy, posterior (the campaign's)",
        "label accuracy, dawid_skene",
        "human answers per candidate pair",
        "posterior: 90% intervals holding the oracle P",
        "bad workers' assignments flagged",
        "good workers' assignments flagged",
        "cost per verified positive",
        "bad workers kept out by the qualification",
    ):
        assert row in out
    kept_out = next(line for line in out.splitlines() if line.startswith("bad workers kept out"))
    assert kept_out.split()[-1] == "4/4"  # always-yes cannot pass a balanced qualification test
    assert QualificationAttempt.objects.filter(passed=False).count() >= 4
