"""The judge's calibration on gold: isotonic next to Platt, chosen by a k-fold (out-of-sample) Brier score, and the
calibrated P(yes) as the machine prior of model-assisted redundancy when the campaign has a finished judge run."""

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from annotator import models
from annotator.analysis.judge import (
    calibrated_probability,
    cross_validated_brier,
    isotonic_apply,
    isotonic_fit,
    judge_calibration,
    platt_apply,
    platt_fit,
)
from annotator.analysis.posterior import fit_posterior
from annotator.labels.selectors.judge_agreement import judge_report
from annotator.quality.selectors.judge_prior import judge_pair_prior
from annotator.quality.selectors.posterior import campaign_posterior
from annotator.quality.selectors.redundancy import machine_answers
from tests import factories
from tests.annotator.quality_support import hit_with_gold, submit


def test_isotonic_pools_adjacent_violators_into_a_non_decreasing_map():
    knots_x, knots_y = isotonic_fit([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0, 1, 0, 0, 1, 1])
    # 0.1 alone at 0; 0.2, 0.3 and 0.4 pooled at 1/3; 0.5 and 0.6 pooled at 1.
    assert knots_x == [0.1, 0.2, 0.4, 0.5, 0.6]
    assert knots_y == pytest.approx([0.0, 1 / 3, 1 / 3, 1.0, 1.0])
    assert isotonic_apply([0.0, 0.3, 0.45, 0.9], knots_x, knots_y) == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])
    rng = np.random.default_rng(3)
    scores, truth = rng.random(500), rng.random(500) < 0.5
    fitted = isotonic_apply(np.sort(scores), *isotonic_fit(scores, truth))
    assert np.all(np.diff(fitted) >= -1e-12)  # monotone whatever the data
    assert fitted.mean() == pytest.approx(truth.mean())  # PAV keeps the positive share


def _step_judge(n, rng):
    """A judge whose raw score is not a logistic function of the truth: right at both ends, a coin in the
    middle (P(yes) 0.05 below 0.4, 0.5 between, 0.95 above 0.6). Platt's sigmoid cannot bend to that."""
    scores = rng.random(n)
    p = np.where(scores < 0.4, 0.05, np.where(scores > 0.6, 0.95, 0.5))
    return scores, rng.random(n) < p


def test_the_lower_cross_validated_brier_chooses_the_method_and_is_reported_out_of_sample():
    rng = np.random.default_rng(0)
    scores, truth = _step_judge(400, rng)
    report = judge_calibration(scores, truth)
    cv = report["cv"]
    assert cv["folds"] == 5 and report["method"] == "isotonic"
    assert cv["isotonic"]["brier"] < cv["platt"]["brier"]
    # Out of sample is worse than in sample: the map never saw the pairs it is scored on.
    assert cv["isotonic"]["brier"] > report["brier"]
    assert report["brier"] == pytest.approx(float(((calibrated_probability(scores, report) - truth) ** 2).mean()))
    # On fresh pairs of the same judge the chosen map beats Platt's, as the k-fold said it would.
    fresh_scores, fresh_truth = _step_judge(20000, rng)
    iso = ((isotonic_apply(fresh_scores, report["knots_x"], report["knots_y"]) - fresh_truth) ** 2).mean()
    platt = ((platt_apply(fresh_scores, report["a"], report["b"]) - fresh_truth) ** 2).mean()
    assert iso < platt

    # A judge whose miscalibration is a sigmoid, with little gold: Platt's two parameters win.
    x = rng.normal(size=60)
    logistic_scores = 1 / (1 + np.exp(-x))
    logistic_truth = rng.random(60) < 1 / (1 + np.exp(-(2.0 * x - 0.5)))
    report = judge_calibration(logistic_scores, logistic_truth)
    assert report["cv"]["platt"]["brier"] < report["cv"]["isotonic"]["brier"] and report["method"] == "platt"
    assert (report["a"], report["b"]) == pytest.approx(platt_fit(logistic_scores, logistic_truth))
    # Too little gold to cross-validate (one positive): Platt, and no out-of-sample numbers.
    small = judge_calibration([0.2, 0.3, 0.9], [False, False, True])
    assert small["calibrated"] and small["method"] == "platt" and small["cv"] is None
    assert cross_validated_brier([0.2, 0.9], [False, True]) is None


def test_a_pair_prior_replaces_the_model_prior_of_its_pair_only():
    fit = fit_posterior(
        pair_ids=[1, 2, 2], worker_ids=[10, 10, 11], verdicts=[True, True, False], pair_prior={1: (2.0, 0.3)}
    )
    row = fit.row_of()
    assert fit.prior_log_odds[row[1]] == pytest.approx(2.0) and fit.prior_var[row[1]] == pytest.approx(0.3)
    assert fit.prior_log_odds[row[2]] != pytest.approx(2.0) and fit.machine_prior


def _judged_campaign(*, hits: int = 6):
    """A campaign with the machine prior on, `hits` HITs of 4 candidates and a gold pair of each kind, one
    submitted assignment each, and a finished judge run whose raw score is miscalibrated (gold positives 0.6
    to 0.7, gold negatives 0.3 to 0.4, candidates spread over 0.2 to 0.8)."""
    campaign = factories.CampaignFactory(machine_prior=True, adaptive_redundancy=True)
    rng = np.random.default_rng(5)
    score_of = {}
    for _ in range(hits):
        hit = hit_with_gold(campaign=campaign)
        assignment = submit(hit)
        assignment.scored_at = timezone.now()  # scored: the working posterior reads it
        assignment.save(update_fields=["scored_at"])
        for item in hit.items.all():
            low, high = {
                models.ItemRole.GOLD_POSITIVE: (0.6, 0.7),
                models.ItemRole.GOLD_NEGATIVE: (0.3, 0.4),
                models.ItemRole.CANDIDATE: (0.2, 0.8),
            }[item.role]
            score_of[item.pair] = float(rng.uniform(low, high))
    judge = factories.MachineAnnotatorFactory(name="judge", kind="vlm_judge")
    run = factories.RankingRunFactory(
        dataset=campaign.dataset, annotator=judge, judges=campaign, finished_at=timezone.now()
    )
    models.Candidate.objects.bulk_create(
        models.Candidate(run=run, direction="i2t", query_id=pair.image_id, target_id=pair.caption_id, rank=1, score=s)
        for pair, s in score_of.items()
    )
    return campaign, run, {pair.pk: s for pair, s in score_of.items()}


@pytest.mark.django_db
def test_a_finished_judge_run_is_the_machine_prior_through_its_calibrated_p_yes(settings):
    settings.QUALITY_POSTERIOR_JUDGE_PRIOR = True
    campaign, run, score_of = _judged_campaign()
    calibration = judge_report(campaign=campaign)["calibration"]
    assert calibration["calibrated"] and calibration["gold"] == 12
    n = calibration["gold"]
    fit = campaign_posterior(campaign=campaign, approved_only=False)
    row = fit.row_of()
    candidates = models.HitItem.objects.filter(hit__campaign=campaign, role=models.ItemRole.CANDIDATE)
    for pair in candidates.values_list("pair_id", flat=True):
        p = float(np.clip(calibrated_probability([score_of[pair]], calibration)[0], 1 / (n + 2), (n + 1) / (n + 2)))
        assert fit.prior_log_odds[row[pair]] == pytest.approx(np.log(p / (1 - p)))
        assert fit.prior_var[row[pair]] == pytest.approx(1 / (n * p * (1 - p)))
    assert machine_answers(campaign=campaign)[0] == 1  # the judge counts as the machine's answer
    # A candidate the judge scores high starts above one it scores low (the raw 0.5 would be a coin: the
    # gold says 0.5 is on the negative side of this judge's scale).
    high = max(score_of, key=lambda pair: score_of[pair] if pair in row else -1)
    assert fit.prior_log_odds[row[high]] > 0
    assert judge_pair_prior(campaign=campaign, pair_ids=[high])[high][0] == pytest.approx(fit.prior_log_odds[row[high]])


@pytest.mark.django_db
def test_without_a_finished_judge_run_or_the_setting_the_machine_prior_is_unchanged(settings):
    campaign, run, _ = _judged_campaign(hits=3)
    # The setting off (the default): the judge run is not the prior; one campaign-wide rate, as before.
    off = campaign_posterior(campaign=campaign, approved_only=False)
    assert np.allclose(off.prior_log_odds, off.prior_log_odds[0]) and not off.machine_prior
    assert machine_answers(campaign=campaign)[0] == 0
    settings.QUALITY_POSTERIOR_JUDGE_PRIOR = True
    with_judge = campaign_posterior(campaign=campaign, approved_only=False)
    run.status = models.RunStatus.FAILED
    run.save(update_fields=["status"])
    assert judge_pair_prior(campaign=campaign) is None
    fit = campaign_posterior(campaign=campaign, approved_only=False)
    # No run in campaign.runs and no judge: one campaign-wide rate for every pair, as before.
    assert np.allclose(fit.prior_log_odds, fit.prior_log_odds[0]) and not fit.machine_prior
    assert not np.allclose(with_judge.prior_log_odds, with_judge.prior_log_odds[0])
    assert machine_answers(campaign=campaign)[0] == 0
    # The machine prior switched off: neither the judge nor the runs inform the prior.
    campaign.machine_prior = False
    campaign.save(update_fields=["machine_prior"])
    assert campaign_posterior(campaign=campaign, approved_only=False).machine_prior is False


@pytest.mark.django_db
def test_the_quality_page_shows_both_calibrations_out_of_sample_and_the_chosen_one(client):
    campaign, _run, _ = _judged_campaign()
    campaign.launched_at = timezone.now()
    campaign.save(update_fields=["launched_at"])
    client.force_login(campaign.owner)
    page = client.get(reverse("review-quality", args=[campaign.pk]))
    calibration = judge_report(campaign=campaign)["calibration"]
    cv = calibration["cv"]
    expected = f'<span id="judge-cv">Platt {cv["platt"]["brier"]:.3f}, isotonic {cv["isotonic"]["brier"]:.3f}</span>'
    assert page.status_code == 200 and expected.encode() in page.content
    assert f"{calibration['method']}-calibrated, in-sample".encode() in page.content
    assert b"(5-fold on gold)" in page.content
