"""Machine-annotator bias (ECCV Caption App. E.3) on synthetic campaigns whose truth is known.

Images come in twins (0-1, 2-3, ...): a caption fits its own image and its twin, nothing else. Three machine
annotators propose candidates; the campaign is built for real (pooling with provenance, gold, HITs) and
every labelled pair gets the truth as its verified label, as a perfectly honest crowd would give.
"""

import pytest

from annotator.analysis.labelsets import precision_recall
from annotator.analysis.metrics import evaluate_direction
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.labels.selectors.labelsets import labelset_view
from annotator.labels.services.labelsets.builds import labelset_from_campaign
from annotator.models import AggregationMethod, Candidate, Choice, Label, Pair, PairSource
from annotator.research.selectors.labelset_analyses import labelset_bias
from tests import factories
from tests.annotator.campaign_support import add_run, make_dataset

pytestmark = pytest.mark.django_db

ANNOTATORS = ("alpha", "beta", "gamma")


@pytest.fixture
def world():
    owner = factories.user_with_role("requester", username="bias-owner")
    dataset = make_dataset(images=16, captions_per_image=3)
    runs = {name: add_run(dataset=dataset, name=name, seed=seed, top_k=10) for seed, name in enumerate(ANNOTATORS, 3)}
    images = sorted(dataset.images.values_list("pk", flat=True))
    twin_group = {image: index // 2 for index, image in enumerate(images)}
    caption_group = {c: twin_group[i] for c, i in dataset.captions.values_list("pk", "image_id")}
    return {"owner": owner, "dataset": dataset, "runs": runs, "truth": lambda i, c: twin_group[i] == caption_group[c]}


def _crowd_campaign(world, names):
    """A built i2t campaign over `names`' runs whose every pair carries the truth as its majority label."""
    campaign = campaign_create(
        owner=world["owner"],
        dataset=world["dataset"],
        runs=[world["runs"][name] for name in names],
        name="+".join(names),
        direction="i2t",
        candidates_per_hit=4,
        gold_exclusion_depth=10,
        # No qualification pool: it reserves pooled originals, a different draw for each set of annotators,
        # and the two campaigns compared here must label the same proposals.
        qualification_items=0,
    )
    campaign = campaign_build(campaign=campaign)
    labels = []
    for pair in Pair.objects.filter(campaign=campaign):
        positive = world["truth"](pair.image_id, pair.caption_id)
        labels.append(
            Label(
                pair=pair,
                method=AggregationMethod.MAJORITY,
                choice=Choice.YES if positive else Choice.NO,
                is_positive=positive,
                is_positive_strict=positive,
                confidence=1.0,
                answer_count=3,
            )
        )
    Label.objects.bulk_create(labels)
    return campaign


def _proposed_positives(campaign, truth) -> dict[str, set]:
    """Annotator -> the true pairs it proposed (image, caption), straight from the stored provenance."""
    found: dict[str, set] = {name: set() for name in ANNOTATORS}
    for image, caption, name in PairSource.objects.filter(pair__campaign=campaign).values_list(
        "pair__image_id", "pair__caption_id", "run__annotator__name"
    ):
        if truth(image, caption):
            found[name].add((image, caption))
    return found


def test_bias_figures_per_annotator_match_the_known_truth(world):
    campaign = _crowd_campaign(world, ANNOTATORS)
    crowd = labelset_from_campaign(campaign=campaign, name="crowd-all")
    result = labelset_bias(label_set=crowd, k=5)

    found = _proposed_positives(campaign, world["truth"])
    everything = set().union(*found.values())
    assert result["positives"] == len(everything) > 0
    for name in ANNOTATORS:
        others = set().union(*(found[o] for o in ANNOTATORS if o != name))
        alone = found[name] - others
        figures = result["annotators"][name]
        assert figures["positives"] == len(found[name])
        assert figures["alone"] == len(alone)
        assert figures["alone_share"] == pytest.approx(len(alone) / len(everything))
        assert figures["recall"] == pytest.approx(len(found[name]) / len(everything))
        assert figures["loo_recall"] == pytest.approx(len(others) / len(everything))
        top = [
            (i, c)
            for i, c, rank in PairSource.objects.filter(pair__campaign=campaign, run__annotator__name=name).values_list(
                "pair__image_id", "pair__caption_id", "rank"
            )
            if rank <= 5
        ]
        assert figures["precision_at_k"] == pytest.approx(sum(world["truth"](i, c) for i, c in top) / len(top))


def test_removing_an_annotator_lowers_the_recall_reported_for_it(world):
    """The leave-one-out recall reported for an annotator is what a campaign built without it really keeps:
    a second campaign without that annotator finds exactly that share of the positives, and fewer than all."""
    full = labelset_from_campaign(campaign=_crowd_campaign(world, ANNOTATORS), name="crowd-all")
    reported = labelset_bias(label_set=full, k=5)["annotators"]
    name = max(ANNOTATORS, key=lambda n: reported[n]["alone"])
    assert reported[name]["alone"] > 0
    without = labelset_from_campaign(
        campaign=_crowd_campaign(world, [n for n in ANNOTATORS if n != name]), name="crowd-without"
    )
    full_view, without_view = labelset_view(label_set=full), labelset_view(label_set=without)
    full_positives = {key for key, positive in full_view.pairs.items() if positive}
    kept = {key for key, positive in without_view.pairs.items() if positive} & full_positives
    proposed = {
        ("image_caption", i, c)
        for i, c in PairSource.objects.filter(pair__campaign=full.campaign).values_list(
            "pair__image_id", "pair__caption_id"
        )
    }
    kept_proposed = kept & proposed
    assert len(kept_proposed) / len(full_positives & proposed) == pytest.approx(reported[name]["loo_recall"])
    assert reported[name]["loo_recall"] < 1.0
    # The set built without it also has a lower per-query recall against the full set (Table 2's measure).
    assert precision_recall(without_view, full_view, "i2t")["recall"] < 1.0


def test_bias_b_is_the_mean_gap_of_each_models_score(world):
    """B_Theta = mean over the models of |s_Theta(phi) - s_All(phi)|, with s computed from each
    annotator's stored rankings on the positives the subset proposed (E.5); checked for R@1 by hand."""
    campaign = _crowd_campaign(world, ANNOTATORS)
    crowd = labelset_from_campaign(campaign=campaign, name="crowd-all")
    bias = labelset_bias(label_set=crowd, k=5)["bias"]
    assert bias["annotators"] == list(ANNOTATORS)
    assert len(bias["subsets"]) == 6  # 2^3 - 2 non-empty proper subsets

    found = _proposed_positives(campaign, world["truth"])
    queries = labelset_view(label_set=crowd).queries["i2t"]

    def r1(model: str, positives: set) -> float:
        ranking = {}
        for query, target in (
            Candidate.objects.filter(run=world["runs"][model], direction="i2t")
            .order_by("rank")
            .values_list("query_id", "target_id")
        ):
            ranking.setdefault(query, []).append(target)
        labels = {}
        for image, caption in positives:
            if image in queries:
                labels.setdefault(image, set()).add(caption)
        scores, _ = evaluate_direction(ranking, labels, metrics=["r1"])
        return scores["r1"]

    everything = set().union(*found.values())
    for entry in bias["subsets"]:
        subset = set().union(*(found[n] for n in entry["annotators"]))
        gaps = [abs(r1(model, subset) - r1(model, everything)) for model in ANNOTATORS]
        assert entry["r1"]["bias"] == pytest.approx(sum(gaps) / 3)
        inside = [gap for model, gap in zip(ANNOTATORS, gaps, strict=True) if model in entry["annotators"]]
        assert entry["r1"]["self"] == pytest.approx(sum(inside) / len(inside))
    assert set(bias["by_size"]) == {1, 2}


def test_bias_needs_a_crowd_set(world):
    from annotator.core.errors import ApplicationError
    from annotator.labels.services.labelsets.builds import labelset_from_original

    original = labelset_from_original(dataset=world["dataset"])
    with pytest.raises(ApplicationError) as error:
        labelset_bias(label_set=original)
    assert error.value.status == 409
