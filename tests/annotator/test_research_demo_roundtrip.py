"""The demo campaign's labels, exported as ECCV JSON, round-trip: a researcher gets back what the demo labelled.

The demo set is imported and ranked (tfidf_pivot, in-process), the demo campaign is built, every HIT gets
an approved assignment whose answers follow a fixed rule, and `labels_aggregate` makes the labels. The
export job's file, loaded back, holds exactly the positives of those labels; a ranking built from the
annotator's own candidates scores, by `manage.py evaluate`, the numbers computed by hand below.
"""

import io
import json
from collections import defaultdict

import pytest
from django.core.management import call_command
from django.core.management.base import OutputWrapper
from django.utils import timezone

from annotator import models
from annotator.labels.services.aggregation import labels_aggregate
from annotator.labels.services.exports.jobs import export_create
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.runs import ranking_run_start
from annotator.scenarios.demo import demo_campaign, demo_dataset, demo_users
from tests import factories

pytestmark = pytest.mark.django_db


def _by_hand(rankings: dict, labels: dict) -> dict:
    """R@k, R-Precision and mAP@R written out plainly (distinct items in the precision, as ECCV's code)."""
    out = {}
    for direction, queries in labels.items():
        sums = defaultdict(float)
        for query, positives in queries.items():
            positives = {str(p) for p in positives}
            ranked = [str(t) for t in rankings[direction].get(query, [])]
            for k in (1, 5, 10):
                sums[f"r{k}"] += float(any(t in positives for t in ranked[:k]))
            r = len(positives)
            precisions = []
            for cutoff in range(1, r + 1):
                seen = set(ranked[:cutoff])
                precision = len(seen & positives) / len(seen) if seen else 0.0
                hit = cutoff <= len(ranked) and ranked[cutoff - 1] in positives
                precisions.append(precision if hit else 0.0)
            sums["r_precision"] += len(set(ranked[:r]) & positives) / max(len(set(ranked[:r])), 1)
            sums["map_at_r"] += sum(precisions) / r
        out[direction] = {key: value / len(queries) for key, value in sums.items()}
    return out


def test_demo_campaign_eccv_export_round_trips_and_evaluates(tmp_path, capsys, django_capture_on_commit_callbacks):
    out = OutputWrapper(io.StringIO())
    demo_users(out=out)
    demo_dataset(out=out)
    dataset = models.Dataset.objects.get(name="demo")
    with django_capture_on_commit_callbacks(execute=True):
        run = ranking_run_start(dataset=dataset, annotator=annotator_register(name="tfidf", kind="tfidf_pivot"))
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED
    demo_campaign(out=out)
    campaign = dataset.campaigns.get()
    assert campaign.hits.exists(), out._out.getvalue()

    # One approved assignment per HIT; a worker says 100% YES to original pairs, "Partially YES" when the
    # caption's image is the next image, and 100% NO otherwise.
    images = list(dataset.images.order_by("pk").values_list("pk", flat=True))
    following = {a: b for a, b in zip(images, images[1:], strict=False)}
    for _index, hit in enumerate(campaign.hits.all()):
        worker = factories.WorkerFactory()
        assignment = factories.AssignmentFactory(
            hit=hit, worker=worker, status=models.AssignmentStatus.APPROVED, submitted_at=timezone.now()
        )
        for item in hit.items.select_related("pair__caption"):
            pair = item.pair
            if pair.is_original:
                choice, shortcomings = models.Choice.YES, []
            elif following.get(pair.image_id) == pair.caption.image_id:
                choice, shortcomings = models.Choice.PARTIALLY_YES, ["misses_main"]
            else:
                choice, shortcomings = models.Choice.NO, []
            models.Answer.objects.create(assignment=assignment, item=item, choice=choice, shortcomings=shortcomings)
    labels_aggregate(campaign=campaign)
    label_rows = models.Label.objects.filter(pair__campaign=campaign, method="majority").select_related(
        "pair__image", "pair__caption"
    )
    assert label_rows.filter(is_positive=True).exists()

    with django_capture_on_commit_callbacks(execute=True):
        job = export_create(campaign=campaign, user=campaign.owner, format="eccv_json", method="majority")
    job.refresh_from_db()
    with job.file.open("rb") as stored:
        exported = json.loads(stored.read())

    # Loading it back gives the same positives as the labels (the demo campaign is image-to-caption).
    expected = defaultdict(set)
    for label in label_rows:
        if label.is_positive:
            expected[label.pair.image.source_id].add(int(label.pair.caption.source_id))
    assert {query: set(targets) for query, targets in exported["i2t"].items()} == dict(expected)
    assert exported["t2i"] == {}

    # A ranking: the annotator's own i2t candidates, in source ids, best first.
    source = dict(models.Caption.objects.filter(dataset=dataset).values_list("pk", "source_id"))
    image_source = dict(models.Image.objects.filter(dataset=dataset).values_list("pk", "source_id"))
    rankings = {"i2t": defaultdict(list), "t2i": {}}
    for query, target in (
        run.candidates.filter(direction="i2t").order_by("query_id", "rank").values_list("query_id", "target_id")
    ):
        rankings["i2t"][image_source[query]].append(source[target])
    labels_file, rankings_file = tmp_path / "labels.json", tmp_path / "rankings.json"
    labels_file.write_text(json.dumps(exported))
    rankings_file.write_text(json.dumps(rankings))
    capsys.readouterr()
    call_command("evaluate", "--labels", str(labels_file), "--rankings", str(rankings_file), "--format", "json")
    scores = json.loads(capsys.readouterr().out)
    hand = _by_hand(rankings, {"i2t": exported["i2t"]})
    assert scores["i2t"] == pytest.approx(hand["i2t"])
    assert scores["t2i"] == {key: None for key in ("r1", "r5", "r10", "r_precision", "map_at_r")}
    assert 0 < scores["i2t"]["map_at_r"] <= 1
