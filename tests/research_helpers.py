"""A small campaign with known labels, shared by the research-area tests (issue 7)."""

from django.utils import timezone

from annotator import models
from tests import factories

# (image source, caption source, stage, choice): captions "11", "12" are image "1"'s originals, and so on.
LABELLED_PAIRS = [
    ("1", "11", "i2t", models.Choice.YES),
    ("1", "21", "i2t", models.Choice.YES),
    ("1", "31", "i2t", models.Choice.PARTIALLY_YES),
    ("1", "32", "i2t", models.Choice.NO),
    ("2", "12", "i2t", models.Choice.MOSTLY_NO),
    ("3", "22", "t2i", models.Choice.YES),
    ("1", "22", "t2i", models.Choice.PARTIALLY_YES),
]
# What the ECCV JSON export must contain for LABELLED_PAIRS (ids as the export writes them).
EXPECTED = {
    ("lenient", False): {"i2t": {"1": [11, 21, 22, 31]}, "t2i": {"22": [1, 3]}},
    ("strict", False): {"i2t": {"1": [11, 21]}, "t2i": {"22": [3]}},
    ("lenient", True): {"i2t": {"1": [11, 12, 21, 22, 31], "2": [21, 22]}, "t2i": {"22": [1, 2, 3]}},
}


def research_campaign(*, owner=None, method=models.AggregationMethod.MAJORITY, **campaign_kwargs):
    """A campaign over 3 images x 2 captions with the labels of LABELLED_PAIRS, plus provenance and answers."""
    dataset = factories.DatasetFactory()
    images = {source: factories.ImageFactory(dataset=dataset, source_id=source) for source in ("1", "2", "3")}
    captions = {
        f"{image}{n}": factories.CaptionFactory(image=images[image], dataset=dataset, source_id=f"{image}{n}")
        for image in images
        for n in (1, 2)
    }
    if owner is not None:
        campaign_kwargs["owner"] = owner
    campaign = factories.CampaignFactory(dataset=dataset, direction=models.CampaignDirection.BOTH, **campaign_kwargs)
    run = factories.RankingRunFactory(dataset=dataset, annotator=factories.MachineAnnotatorFactory(name="tfidf"))
    hit = factories.HitFactory(campaign=campaign, index=0)
    worker = models.Worker.objects.filter(pseudonym="w-alpha").first() or factories.WorkerFactory(pseudonym="w-alpha")
    assignment = factories.AssignmentFactory(
        hit=hit,
        worker=worker,
        status=models.AssignmentStatus.APPROVED,
        submitted_at=timezone.now(),
    )
    for position, (image, caption, stage, choice) in enumerate(LABELLED_PAIRS):
        pair = factories.PairFactory(
            campaign=campaign,
            image=images[image],
            caption=captions[caption],
            direction=stage,
            is_original=caption.startswith(image),
            query_id=(images[image].pk if stage == "i2t" else captions[caption].pk),
        )
        models.PairSource.objects.create(
            pair=pair, run=run, direction=stage, rank=position + 1, score=0.9 - position / 10
        )
        factories.LabelFactory(pair=pair, method=method, choice=choice, confidence=0.75)
        item = factories.HitItemFactory(hit=hit, pair=pair)
        models.Answer.objects.create(
            assignment=assignment,
            item=item,
            choice=choice,
            comment=f"<b>{caption}</b>",
            seconds_spent=3.0,
            shortcomings=["extra_concepts"] if choice == models.Choice.PARTIALLY_YES else [],
        )
    return campaign


def eccv_positives(data: dict) -> dict:
    """The positives of an exported ECCV JSON (it also carries "verified_negatives")."""
    return {key: data[key] for key in ("i2t", "t2i")}
