"""Model-assisted redundancy with a judge as the machine prior: a synthetic judge whose accuracy is known.

The same rehearsal (annotator.scenarios.simulation, variant `assisted`: one answer per pair first, more only
where the posterior is unsure, the machine prior on) with a 90%-accurate judge among the campaign's runs and
with a judge at chance (annotator/scenarios/judge_sim.py). Over the first two seeds the informative prior
settles pairs with fewer human answers and labels them at least as well. One 40-image seed alone is too noisy
to say so (seed 1: the informed prior spends 1.84 answers for 0.985 accuracy, chance 1.75 for 0.970; seed 2:
1.50 for 0.990 against 1.82 for 0.990).
"""

import pytest

from annotator.scenarios.simulation import SimulationConfig, simulate_crowd, simulation_prepare

pytestmark = pytest.mark.django_db


def test_an_accurate_judge_as_the_prior_spends_fewer_human_answers_than_one_at_chance():
    informed, chance = [], []
    for seed in (1, 2):
        base = {"images": 40, "seed": seed, "qualification_items": 0, "ranking": "proposal", "variant": "assisted"}
        base["bad_share"] = 0.0
        prepared = simulation_prepare(SimulationConfig(**base))
        informed.append(simulate_crowd(SimulationConfig(**base, judge_accuracy=0.9), prepared=prepared).metrics)
        chance.append(simulate_crowd(SimulationConfig(**base, judge_accuracy=0.5), prepared=prepared).metrics)

    def mean(runs, key):
        return sum(run[key] for run in runs) / len(runs)

    assert mean(informed, "answers_per_pair") < mean(chance, "answers_per_pair")
    assert mean(informed, "label_accuracy") >= mean(chance, "label_accuracy")
    # The issue's bar on each seed: accuracy >= 0.97 with at most 2/3 of fixed redundancy 3's answers per pair.
    assert all(run["label_accuracy"] >= 0.97 and run["answers_per_pair"] <= 2.0 for run in informed)
