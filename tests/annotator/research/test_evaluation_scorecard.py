"""Stored evaluations: keyed and reproducible, every metric with its interval, runs, bias, failures."""

import pytest

from annotator import models
from annotator.analysis.retrieval import as_grades, judged_table
from annotator.analysis.scorecard import METRIC_TITLES
from annotator.research.services.scorecards import evaluation_request, evaluation_run
from tests import factories
from tests.leaderboard_support import labelled_campaign, labelled_dataset, noisy_rankings, store_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def setting(tmp_path):
    owner = factories.user_with_role(models.Role.REQUESTER, username="req-board")
    dataset, truth = labelled_dataset(tmp_path=tmp_path)
    campaign = labelled_campaign(owner=owner, dataset=dataset, truth=truth)
    return owner, dataset, truth, campaign


def request(campaign, owner, capture, **kwargs):
    kwargs.setdefault("name", "model")
    kwargs.setdefault("resamples", 200)
    with capture(execute=True):
        evaluation, created = evaluation_request(campaign=campaign, user=owner, **kwargs)
    evaluation.refresh_from_db()
    return evaluation, created


def test_every_metric_is_stored_with_its_interval(setting, django_capture_on_commit_callbacks):
    owner, dataset, truth, campaign = setting
    rankings = noisy_rankings(truth, dataset=dataset, noise=0.3, seed=1)
    evaluation, created = request(campaign, owner, django_capture_on_commit_callbacks, rankings=rankings)
    assert created and evaluation.status == models.EvaluationStatus.SUCCEEDED
    metrics = evaluation.results["metrics"]
    assert set(metrics) == {"i2t", "t2i"}
    # Every protocol of a ranking: labels, 5K, 1K, PMRP, semantic (CxC's Spearman is of similarity scores).
    assert set(metrics["i2t"]) == set(METRIC_TITLES) - {"cxc_spearman"}
    for cell in metrics["i2t"].values():
        assert cell["low"] <= cell["value"] <= cell["high"]
    # The stored R@1 is the legacy number and the scorecard's alike.
    assert metrics["i2t"]["r1"]["value"] == evaluation.results["verified"]["i2t"]["r1"]
    # Graded metrics see "Partially YES" as 0.5: the graded R-Precision is below the plain one here.
    assert metrics["i2t"]["graded_r_precision"]["value"] < metrics["i2t"]["r_precision"]["value"]
    assert evaluation.results["notes"] == []


def test_the_same_rankings_and_labels_give_the_same_stored_evaluation(setting, django_capture_on_commit_callbacks):
    owner, dataset, truth, campaign = setting
    rankings = noisy_rankings(truth, dataset=dataset, noise=0.3, seed=1)
    first, created = request(campaign, owner, django_capture_on_commit_callbacks, rankings=rankings)
    again, created_again = request(campaign, owner, django_capture_on_commit_callbacks, rankings=rankings, name="x")
    assert created and not created_again and again.pk == first.pk and again.name == "model"
    other_seed, created_seed = request(campaign, owner, django_capture_on_commit_callbacks, rankings=rankings, seed=9)
    assert created_seed and other_seed.pk != first.pk
    # Same seed, same numbers; the seed moves only the intervals.
    assert other_seed.results["metrics"]["i2t"]["r1"]["value"] == first.results["metrics"]["i2t"]["r1"]["value"]
    other, created_other = request(
        campaign,
        owner,
        django_capture_on_commit_callbacks,
        rankings=noisy_rankings(truth, dataset=dataset, noise=0.6, seed=2),
    )
    assert created_other and other.pk != first.pk
    # New labels are new labels: the key follows their content.
    pair = models.Pair.objects.filter(campaign=campaign, labels__choice=models.Choice.NO).first()
    models.Label.objects.filter(pair=pair).update(choice=models.Choice.YES, is_positive=True, is_positive_strict=True)
    after, created_after = request(campaign, owner, django_capture_on_commit_callbacks, rankings=rankings)
    assert created_after and after.pk != first.pk


def test_scores_equal_the_analysis_on_the_campaign_labels(setting, django_capture_on_commit_callbacks):
    owner, dataset, truth, campaign = setting
    rankings = noisy_rankings(truth, dataset=dataset, noise=0.3, seed=3)
    evaluation, _ = request(campaign, owner, django_capture_on_commit_callbacks, rankings=rankings, resamples=0)
    labels = {"i2t": {}, "t2i": {}}
    for label in models.Label.objects.filter(pair__campaign=campaign, is_positive=True).select_related(
        "pair__image", "pair__caption"
    ):
        grade = 1.0 if label.is_positive_strict else 0.5
        image, caption = label.pair.image.source_id, label.pair.caption.source_id
        if label.pair.direction == "i2t" or image in labels["i2t"]:
            labels["i2t"].setdefault(image, {})[caption] = grade
        if label.pair.direction == "t2i" or caption in labels["t2i"]:
            labels["t2i"].setdefault(caption, {})[image] = grade
    expected = judged_table(rankings["i2t"], as_grades(labels["i2t"])).summary()
    stored = evaluation.results["metrics"]["i2t"]
    for key in ("r1", "ir_r5", "map_at_r", "graded_r1", "graded_r_precision", "median_rank"):
        assert stored[key]["value"] == pytest.approx(expected[key]), key
    assert stored["r1"]["low"] is None  # no resamples, no interval


def test_a_stored_run_of_an_annotator_that_built_the_labels_is_marked_biased(
    setting, django_capture_on_commit_callbacks
):
    owner, dataset, truth, campaign = setting
    builder = store_run(
        dataset=dataset,
        annotator_name="tfidf-builder",
        rankings=noisy_rankings(truth, dataset=dataset, noise=0.2, seed=5),
    )
    outsider = store_run(
        dataset=dataset,
        annotator_name="minilm-outsider",
        rankings=noisy_rankings(truth, dataset=dataset, noise=0.2, seed=6),
    )
    biased, _ = request(campaign, owner, django_capture_on_commit_callbacks, ranking_run=builder, name="tfidf-builder")
    fair, _ = request(campaign, owner, django_capture_on_commit_callbacks, ranking_run=outsider, name="minilm-outsider")
    assert biased.biased and not fair.biased
    assert biased.annotator.name == "tfidf-builder" and biased.status == models.EvaluationStatus.SUCCEEDED
    assert fair.results["metrics"]["t2i"]["r1"]["value"] is not None
    # An upload named after a builder is flagged too.
    upload, _ = request(
        campaign,
        owner,
        django_capture_on_commit_callbacks,
        name="TFIDF-builder",
        rankings=noisy_rankings(truth, dataset=dataset, noise=0.4, seed=7),
    )
    assert upload.biased


def test_pmrp_is_left_out_with_a_note_when_the_dataset_has_no_classes(setting, django_capture_on_commit_callbacks):
    owner, dataset, truth, campaign = setting
    models.ImageCategory.objects.filter(image__dataset=dataset).delete()
    evaluation, _ = request(
        campaign,
        owner,
        django_capture_on_commit_callbacks,
        rankings=noisy_rankings(truth, dataset=dataset, noise=0.3, seed=1),
    )
    assert "pmrp" not in evaluation.results["metrics"]["i2t"]
    assert any("import_categories" in note for note in evaluation.results["notes"])


def test_a_failed_evaluation_says_why_and_runs_again_when_asked_again(
    setting, django_capture_on_commit_callbacks, monkeypatch
):
    owner, dataset, truth, campaign = setting
    rankings = noisy_rankings(truth, dataset=dataset, noise=0.3, seed=1)
    import annotator.research.services.scorecards as service

    def broken(**kwargs):
        raise MemoryError("no room for the relevance matrix")

    monkeypatch.setattr(service, "dataset_test_set", broken)
    failed, _ = request(campaign, owner, django_capture_on_commit_callbacks, rankings=rankings)
    assert failed.status == models.EvaluationStatus.FAILED and "no room" in failed.error
    monkeypatch.undo()
    again, created = request(campaign, owner, django_capture_on_commit_callbacks, rankings=rankings)
    assert not created and again.pk == failed.pk and again.status == models.EvaluationStatus.SUCCEEDED
    assert evaluation_run(evaluation_id=again.pk).status == models.EvaluationStatus.SUCCEEDED  # idempotent


def test_bad_requests_are_refused_with_a_message(setting):
    owner, dataset, truth, campaign = setting
    from annotator.core.errors import ApplicationError

    with pytest.raises(ApplicationError, match="name"):
        evaluation_request(campaign=campaign, user=owner, name=" ", rankings={"i2t": {}})
    with pytest.raises(ApplicationError, match="either"):
        evaluation_request(campaign=campaign, user=owner, name="m")
    other = factories.RankingRunFactory()
    with pytest.raises(ApplicationError, match="not over the labels' dataset"):
        evaluation_request(campaign=campaign, user=owner, name="m", ranking_run=other)
    with pytest.raises(ApplicationError, match="resamples"):
        evaluation_request(campaign=campaign, user=owner, name="m", rankings={"i2t": {}}, resamples=-1)
