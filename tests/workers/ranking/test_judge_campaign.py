"""The vision-language judge on a campaign: it scores every image-caption pair (gold included), its scores are
calibrated on the gold answers (Platt or isotonic) with a reliability diagram, and its verdicts are compared with the
crowd's labels by Cohen's kappa, on the Quality page; started from that page and from `manage.py rank`."""

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotator import models
from annotator.analysis.judge import calibrated_probability, cohen_kappa, platt_apply, platt_fit, reliability
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.core.errors import ApplicationError
from annotator.labels.selectors.judge_agreement import judge_report
from annotator.quality.selectors.posterior import GOLD_TRUTH
from annotator.quality.services.judging import judge_campaign_start
from annotator.ranking.services.annotators import annotator_register
from tests import factories
from tests.ranking_models import tiny_llava_dir
from tests.ranking_support import ranking_dataset
from workers.ranking.pipeline import ranking_run_execute


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    return tiny_llava_dir(tmp_path_factory.mktemp("llava"))


def test_platt_recovers_a_known_calibration_and_kappa_matches_sklearn():
    rng = np.random.default_rng(0)
    x = rng.normal(size=20000)
    scores = 1 / (1 + np.exp(-x))  # the judge's raw P(yes): logit(score) = x
    truth = rng.random(20000) < 1 / (1 + np.exp(-(2.0 * x - 0.5)))
    a, b = platt_fit(scores, truth)
    assert a == pytest.approx(2.0, abs=0.1) and b == pytest.approx(-0.5, abs=0.1)
    for row in reliability(platt_apply(scores, a, b), truth):
        if row["count"] > 500:  # calibrated: every well-filled bin lies on the diagonal
            assert row["observed"] == pytest.approx(row["predicted"], abs=0.03)
    first, second = rng.random(300) < 0.6, rng.random(300) < 0.3
    assert cohen_kappa(first, second) == pytest.approx(cohen_kappa_score(first, second))
    assert cohen_kappa([True, True], [True, True]) is None


def judged_campaign(llava, owner):
    dataset, _images, _captions = ranking_dataset()
    lexical = annotator_register(name="tfidf_pivot", kind="tfidf_pivot")
    source = factories.RankingRunFactory(dataset=dataset, annotator=lexical, top_k=6, status="queued")
    assert ranking_run_execute(source.pk) == models.RunStatus.SUCCEEDED
    campaign = campaign_create(
        owner=owner,
        dataset=dataset,
        runs=[models.RankingRun.objects.get(pk=source.pk)],
        name="judged",
        direction="i2t",
        candidates_per_hit=4,
        pool_depth=4,
        gold_exclusion_depth=6,
        qualification_items=0,
    )
    campaign = campaign_build(campaign=campaign)
    own = dict(dataset.captions.values_list("pk", "image_id"))
    candidates = models.HitItem.objects.filter(hit__campaign=campaign, role=models.ItemRole.CANDIDATE)
    models.Label.objects.bulk_create(
        models.Label(
            pair=pair,
            method=campaign.label_model,
            choice=models.Choice.YES if own[pair.caption_id] == pair.image_id else models.Choice.NO,
            is_positive=own[pair.caption_id] == pair.image_id,
            is_positive_strict=own[pair.caption_id] == pair.image_id,
            confidence=1.0,
            answer_count=3,
        )
        for pair in models.Pair.objects.filter(pk__in=candidates.values("pair_id"))
    )
    judge = annotator_register(name="llava-judge", kind="vlm_judge", checkpoint_path=str(llava))
    return campaign, judge


@pytest.mark.django_db
def test_a_judge_scores_every_pair_of_a_campaign_and_is_calibrated_on_its_gold(
    llava, django_capture_on_commit_callbacks
):
    campaign, judge = judged_campaign(llava, factories.user_with_role(models.Role.REQUESTER))
    with django_capture_on_commit_callbacks(execute=True):
        run = judge_campaign_start(campaign=campaign, annotator=judge)
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED and run.judges == campaign, run.error
    pairs = models.Pair.objects.filter(campaign=campaign, kind=models.PairKind.IMAGE_CAPTION)
    scored = {(c.query_id, c.target_id): c.score for c in models.Candidate.objects.filter(run=run)}
    assert set(scored) == set(pairs.values_list("image_id", "caption_id"))  # gold included
    assert all(0 <= s <= 1 for s in scored.values())

    report = judge_report(campaign=campaign)
    gold = dict(
        models.HitItem.objects.filter(hit__campaign=campaign, role__in=list(GOLD_TRUTH)).values_list("pair_id", "role")
    )
    key = dict((p.pk, (p.image_id, p.caption_id)) for p in pairs)
    assert report["run"] == run and report["calibration"]["gold"] == len(gold) > 0
    truth = [GOLD_TRUTH[role] for role in gold.values()]
    scores = [scored[key[pair]] for pair in gold]
    assert report["calibration"]["positives"] == sum(truth)
    assert 0 < sum(truth) < len(truth) and report["calibration"]["calibrated"]  # gold of both kinds
    a, b = platt_fit(scores, truth)
    assert (report["calibration"]["a"], report["calibration"]["b"]) == pytest.approx((a, b))
    assert sum(row["count"] for row in report["calibration"]["reliability"]) == len(gold)
    labels = dict(
        models.Label.objects.filter(pair__campaign=campaign, method=campaign.label_model).values_list(
            "pair_id", "is_positive"
        )
    )
    label_scores = [scored[key[pair]] for pair in labels]
    verdicts = calibrated_probability(label_scores, report["calibration"]) >= 0.5  # the method the k-fold chose
    assert report["crowd_pairs"] == len(labels) > 0
    crowd = list(labels.values())
    assert len(set(crowd)) == 2  # the crowd said yes and no: kappa is defined
    assert report["kappa"] == pytest.approx(cohen_kappa_score(verdicts, crowd))
    assert report["agreement"] == pytest.approx(float(np.mean(verdicts == np.array(crowd))))
    with pytest.raises(ApplicationError, match="judging a campaign needs a vlm_judge"):
        judge_campaign_start(campaign=campaign, annotator=models.MachineAnnotator.objects.get(name="tfidf_pivot"))


@pytest.mark.django_db
def test_the_quality_page_starts_a_judge_and_shows_its_calibration(client, llava, django_capture_on_commit_callbacks):
    owner = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(owner)
    campaign, judge = judged_campaign(llava, owner)
    page = client.get(reverse("review-quality", args=[campaign.pk]))
    assert b"Judge this campaign's pairs (gold included) with" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("review-judge", args=[campaign.pk]), {"annotator": judge.pk})
    assert response.status_code == 302
    page = client.get(reverse("review-quality", args=[campaign.pk]))
    assert b"Vision-language judge" in page.content and b'id="judge-kappa"' in page.content
    assert b"Gold pairs scored" in page.content
    other = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(other)
    assert client.post(reverse("review-judge", args=[campaign.pk]), {"annotator": judge.pk}).status_code == 404


@pytest.mark.django_db(transaction=True)  # commits for real, so the eager task runs inside the command
def test_the_rank_command_judges_a_campaign(llava, capsys):
    campaign, _judge = judged_campaign(llava, factories.user_with_role(models.Role.REQUESTER))
    call_command(
        "rank", "--dataset", campaign.dataset.name, "--annotator", "llava-judge", "--judge", str(campaign.pk)
    )  # fmt: skip
    run = models.RankingRun.objects.get(judges=campaign)
    assert run.status == models.RunStatus.SUCCEEDED
    assert f"Run {run.pk} (llava-judge on {campaign.dataset.name}) succeeded" in capsys.readouterr().out


@pytest.mark.django_db
def test_the_api_judges_a_campaign(llava):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    owner = factories.user_with_role(models.Role.REQUESTER)
    campaign, judge = judged_campaign(llava, owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    response = client.post(f"/api/v1/campaigns/{campaign.pk}/judge/", {"annotator": judge.pk}, format="json")
    assert response.status_code == 202 and response.json()["judges"] == campaign.pk
    assert response["Location"] == response.json()["url"]
    lexical = models.MachineAnnotator.objects.get(name="tfidf_pivot")
    wrong = client.post(f"/api/v1/campaigns/{campaign.pk}/judge/", {"annotator": lexical.pk}, format="json")
    assert wrong.status_code == 400 and "needs a vlm_judge" in wrong.json()["error"]
    other = factories.user_with_role(models.Role.REQUESTER)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=other).key}")
    assert client.post(f"/api/v1/campaigns/{campaign.pk}/judge/", {"annotator": judge.pk}).status_code == 404
