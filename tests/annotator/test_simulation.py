"""The simulated crowd (annotator/scenarios/simulation.py) meets the issue's thresholds on a small synthetic set."""

import random
from collections import Counter

import pytest
from django.core.management import call_command

from annotator.models import (
    Answer,
    Assignment,
    AssignmentEvent,
    AssignmentStatus,
    Campaign,
    Dataset,
    Hit,
    HitStatus,
    ItemRole,
    Label,
    QualificationAttempt,
    Worker,
)
from annotator.scenarios.simulation import (
    ALWAYS_NO,
    BAD_KINDS,
    CAREFUL,
    COLLUDER,
    GOLD_LEARNER,
    TOO_FAST,
    SimulationConfig,
    SimWorker,
    collusion_sheet,
    simulate_crowd,
    simulate_variants,
)

pytestmark = pytest.mark.django_db


def test_twenty_percent_bad_workers_redundancy_three_meets_the_thresholds():
    """No qualification test (the hard case: every bad worker works), 20% bad, fixed redundancy 3.

    The crowd goes through the real services: claims, submits, gold scoring, review, the posterior crowd
    check before approval, and aggregation. Twenty workers on thirty images (fifteen leave a HIT unfinished)
    is a small crowd for the posterior to learn every worker from; the issue's thresholds (>= 95% of bad
    flagged, <= 5% good) are measured on forty workers by bench/crowd_quality.py, so this small run checks a
    looser bar."""
    config = SimulationConfig(images=30, workers=20, seed=3, qualification_items=0, ranking="proposal", variant="fixed")
    result = simulate_crowd(config, keep=True)  # kept: the rows are looked at below
    m = result.metrics
    assert m["bad_assignments"] >= 5 and m["good_assignments"] >= 20  # enough of both to mean something
    # Three answers a pair, whatever the review rejected: each rejected slot is asked for again. Twenty workers
    # cannot fill every slot asked for again (nobody is shown a gold pair twice, and after two or three HITs
    # most of them have seen the gold of the HITs left), so a slot still open counts as asked for.
    asked = Counter(
        Answer.objects.filter(
            item__hit__campaign_id=result.campaign_id,
            item__role=ItemRole.CANDIDATE,
            assignment__status=AssignmentStatus.APPROVED,
        ).values_list("item__pair_id", flat=True)
    )
    for hit in Hit.objects.filter(campaign_id=result.campaign_id, status=HitStatus.OPEN):
        filled = hit.assignments.filter(status=AssignmentStatus.APPROVED).count()
        for pair_id in hit.items.filter(role=ItemRole.CANDIDATE).values_list("pair_id", flat=True):
            asked[pair_id] += hit.assignments_required - filled
    assert sum(asked.values()) / m["candidate_pairs"] >= 2.9
    assert m["answers_per_pair"] >= 2.5 and m["open_hits_left"] <= 3  # most of it bought
    assert m["accuracy"]["posterior"] >= 0.95 and m["accuracy"]["majority"] >= 0.95
    assert m["unfinished_pairs"] == 0
    assert m["accuracy"]["dawid_skene"] >= 0.9  # a confusion matrix per worker from one to three HITs each
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
    # The rehearsal leaves nothing behind but the dataset and its ranking run: no campaign, worker or attempt.
    assert not Campaign.objects.exists() and not Worker.objects.exists()
    assert not QualificationAttempt.objects.exists() and Dataset.objects.filter(name="simulation-16-5").exists()


def test_the_default_crowd_is_a_real_one_and_each_bad_kind_behaves_as_named():
    """Careful workers 89% +- 5% right with 3 HITs each; the bad share cycles through the five kinds; colluders
    agree with each other and not with the truth; gold learners are right on gold and random elsewhere."""
    config = SimulationConfig(workers=40)
    kinds = config.kinds()
    assert kinds.count(CAREFUL) == 32 and set(kinds) - {CAREFUL} == set(BAD_KINDS)
    assert config.campaign_options()["max_hits_per_worker"] == 3
    accuracies = [config.accuracy_of(n) for n in range(200)]
    assert 0.84 <= min(accuracies) and max(accuracies) <= 0.94 and abs(sum(accuracies) / 200 - 0.89) < 0.01
    careful = SimWorker(worker=None, kind=CAREFUL, rng=random.Random(1), accuracy=0.87)
    right = sum(
        (careful.judge(n % 2 == 0, pair_id=n)["choice"] in ("yes", "partially_yes")) == (n % 2 == 0)
        for n in range(4000)
    )
    assert abs(right / 4000 - 0.87) < 0.02
    sheet = collusion_sheet(random.Random(5), length=400)
    colluders = [SimWorker(worker=None, kind=COLLUDER, rng=random.Random(k), sheet=sheet) for k in range(2)]
    said = [[c.judge(True, pair_id=n, position=n)["choice"] for n in range(400)] for c in colluders]
    assert said[0] == said[1] and 0.4 < said[0].count("yes") / 400 < 0.6
    learner = SimWorker(worker=None, kind=GOLD_LEARNER, rng=random.Random(2))
    assert {learner.judge(n % 2 == 0, pair_id=n, gold=True)["choice"] for n in range(0, 40, 2)} == {"yes"}
    on_candidates = [learner.judge(True, pair_id=n)["choice"] for n in range(400)]
    assert 0.35 < sum(c in ("yes", "partially_yes") for c in on_candidates) / 400 < 0.65


def test_colluders_reading_a_shared_sheet_by_position_answer_alike_whatever_the_pair():
    """Two colluders give the same answer at the same HIT position on different pairs (the issue's shared
    sheet), and the sheet's answers differ from position to position."""
    sheet = collusion_sheet(random.Random(7))
    colluders = [SimWorker(worker=None, kind=COLLUDER, rng=random.Random(k), sheet=sheet) for k in range(2)]
    first = [colluders[0].judge(True, pair_id=n, position=n % 18)["choice"] for n in range(36)]
    second = [colluders[1].judge(False, pair_id=1000 + n, position=n % 18)["choice"] for n in range(36)]
    assert first == second and first[:18] == first[18:] and len(set(first)) > 1


def test_the_command_compares_fixed_adaptive_and_model_assisted_side_by_side(capsys):
    """One run, three policies on the same crowd: accuracy, answers per pair and interval coverage each."""
    call_command(
        "simulate_crowd",
        images=16,
        workers=12,
        seed=2,
        ranking="proposal",
        qualification_items=0,
        careful_accuracy=0.9,
        hits_per_worker=4,
        bad_kinds="colluder,gold_learner",
        variants="fixed,adaptive,assisted",
    )
    out = capsys.readouterr().out
    table = out.split("== side by side\n", 1)[1].strip().splitlines()
    assert table[0].split() == [
        "variant",
        "accuracy",
        "answers/pair",
        "interval",
        "cover",
        "ECE",
        "bad",
        "flagged",
        "good",
        "flagged",
    ]
    rows = {line.split()[0]: line.split() for line in table[1:]}
    assert list(rows) == ["fixed", "adaptive", "assisted"]
    answers = {name: float(row[2]) for name, row in rows.items()}
    # Model-assisted asks fewer than fixed redundancy 3. Adaptive redundancy without the machine prior may ask
    # more on a crowd this small (16 images, 12 workers each known by a few gold answers): a pair settles at
    # P >= 0.95, and it never passes its cap of answers per pair.
    assert answers["fixed"] >= 2.5 and answers["assisted"] < answers["fixed"] and answers["adaptive"] <= 5
    for row in rows.values():
        assert 0.0 <= float(row[1]) <= 1.0 and (row[3] == "n/a" or 0.0 <= float(row[3]) <= 1.0)


FIGURES = (
    "label_accuracy",
    "accuracy",
    "answers_per_pair",
    "interval_coverage",
    "calibration_error",
    "bad_flagged_count",
    "bad_assignments",
    "good_flagged_count",
    "good_assignments",
    "approved_assignments",
    "unfinished_pairs",
    "followup_hits",
    "cost_cents",
    "review",
    "extra_assignments",
    "gold_repeats",
    "qualification_pool",  # which test items each worker drew: the product seeds that draw with ids
)


def test_a_variant_gets_the_same_figures_alone_and_beside_the_others():
    """Each variant runs on its own requester, crowd and random streams, and leaves nothing behind: the
    model-assisted variant's figures for a seed are the same after the fixed variant ran beside it, alone,
    and alone again (with the qualification test and colluders on, which read ids and HIT positions)."""
    config = SimulationConfig(
        images=12,
        workers=10,
        seed=4,
        ranking="proposal",
        qualification_items=4,
        hits_per_worker=4,
        bad_kinds=(COLLUDER, GOLD_LEARNER, COLLUDER),
        bad_share=0.3,
        test_accuracy=0.98,
        middle_share=1 / 6,
        rank_difficulty=0.1,
    )
    beside = simulate_variants(config, ["fixed", "assisted"])
    alone = simulate_variants(config, ["assisted"])
    again = simulate_variants(config, ["assisted"])
    figures = [{key: run.metrics[key] for key in FIGURES} for run in (beside[1], alone[0], again[0])]
    # The product seeds its draws with ids (qualification items, gold rotation): the same ids, the same draws.
    assert beside[1].campaign_id == alone[0].campaign_id == again[0].campaign_id
    assert figures[0]["approved_assignments"] > 0 and figures[0]["bad_assignments"] > 0
    assert figures[0] == figures[1], (figures[0], figures[1])
    assert figures[1] == figures[2]


def test_the_grid_crowds_kinds_behave_as_named():
    """Careful workers near-flawless on the test but not at work; one answer in six a middle answer; negatives
    ranked first harder; colluders answer from one shared sheet by HIT position, whatever the pair; always-no
    says no; too-fast workers answer in under a second."""
    careful = SimWorker(
        worker=None,
        kind=CAREFUL,
        rng=random.Random(3),
        accuracy=0.85,
        test_accuracy=0.99,
        middle_share=1 / 6,
        rank_difficulty=0.2,
    )
    n = 6000

    def right_share(**kwargs):
        positive = kwargs.pop("positive")
        said = [careful.judge(positive, **kwargs)["choice"] in ("yes", "partially_yes") for _ in range(n)]
        return sum(s == positive for s in said) / n

    assert right_share(positive=False, test=True) > 0.98
    assert abs(right_share(positive=True) - 0.85) < 0.02
    assert abs(right_share(positive=False, rank=1) - 0.65) < 0.02  # 0.85 less the first rank's 0.2
    assert abs(right_share(positive=False, rank=2) - 0.75) < 0.02
    assert abs(right_share(positive=False, rank=9) - 0.85) < 0.02
    middle = [careful.judge(True)["choice"] in ("partially_yes", "mostly_no") for _ in range(n)]
    assert abs(sum(middle) / n - 1 / 6) < 0.02
    sheet = collusion_sheet(random.Random(7))
    colluders = [SimWorker(worker=None, kind=COLLUDER, rng=random.Random(k), sheet=sheet) for k in range(2)]
    by_position = [
        [c.judge(k % 3 == 0, pair_id=100 * k + j, position=k)["choice"] for k in range(40)]
        for j, c in enumerate(colluders)
    ]
    assert by_position[0] == by_position[1] == list(sheet[:40])
    assert {SimWorker(worker=None, kind=ALWAYS_NO, rng=random.Random(1)).judge(True)["choice"]} == {"no"}
    too_fast = SimWorker(worker=None, kind=TOO_FAST, rng=random.Random(1))
    assert max(too_fast.judge(True)["seconds_spent"] for _ in range(200)) < 1.0


def test_the_default_crowd_is_sized_to_finish_and_an_unfinished_campaign_says_so():
    """By default the crowd is large enough for the cap (6 assignments per first-round HIT, 3 HITs each);
    a crowd too small leaves pairs unlabelled and the report says so, with accuracy over the labelled pairs."""
    assert SimulationConfig().crowd_size(hits=47) == 94  # the 150 images: 47 HITs
    assert SimulationConfig(workers=40).crowd_size(hits=47) == 40
    config = SimulationConfig(images=16, workers=2, hits_per_worker=1, seed=5, ranking="proposal", bad_share=0)
    result = simulate_crowd(config)
    m = result.metrics
    assert m["unfinished_pairs"] > 0 and m["candidate_pairs"] > m["unfinished_pairs"]
    assert m["label_accuracy"] >= 0.8  # over the labelled pairs: the unlabelled ones are not counted as wrong
    unfinished = next(line for line in result.as_text().splitlines() if line.startswith("UNFINISHED"))
    assert f"{m['unfinished_pairs']} of {m['candidate_pairs']} pairs had no label" in unfinished
    assert "crowd too small / cap reached" in unfinished
