"""A simulated crowd on an existing campaign of any kind (`manage.py simulate_crowd --campaign ID`).

The workers answer through the same services the browser uses (annotator.scenarios.verification_crowd for
the four-choice scale, annotator.scenarios.similarity for the 0-5 scale), then the campaign's
labels are aggregated. What they take as the truth:
- a dataset made by the simulation (synthetic scenes): the scenes' own truth;
- any other dataset: its original pairing. An image-caption pair is a match when the caption is one of the
  image's own; a 0-5 pair is rated 4.5 when the two captions describe one image (or the caption is the
  image's) and 1.0 otherwise, as nothing else is known of it.
So on a real dataset the rehearsal measures the machinery (HITs, gold, review, labels), not people.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.models import Campaign, CampaignStatus, Caption, Pair, Scale

SIMILAR, DISSIMILAR = 4.5, 1.0


def _dataset_truth(campaign: Campaign):
    """(truth_of(pair) -> bool, true_score(pair) -> 0-5, where the truth came from)."""
    try:
        from annotator.scenarios.simulation import truth_lookup

        synthetic = truth_lookup(campaign)
    except (KeyError, TypeError, OSError):
        synthetic = None
    image_of = dict(Caption.objects.filter(dataset_id=campaign.dataset_id).values_list("pk", "image_id"))

    def original(pair: Pair) -> bool:
        if pair.kind == "caption_caption":
            return image_of.get(pair.caption_id) == image_of.get(pair.other_caption_id)
        if pair.kind == "image_image":
            return pair.image_id == pair.other_image_id
        return image_of.get(pair.caption_id) == pair.image_id

    truth_of = synthetic if synthetic is not None else original
    source = "the synthetic scenes' truth" if synthetic is not None else "the dataset's original pairs"

    def true_score(pair: Pair) -> float:
        if pair.kind == "image_caption" and synthetic is not None:
            return SIMILAR if synthetic(pair) else DISSIMILAR
        return SIMILAR if original(pair) else DISSIMILAR

    return truth_of, true_score, source


def simulate_on_campaign(
    *, campaign: Campaign, workers: int | None = None, accuracy: float = 0.9, noise: float = 0.5, seed: int = 0
) -> dict:
    """Launch `campaign` if it is built, let a simulated crowd answer every HIT, aggregate its labels.

    Refuses (409) a campaign that is neither built nor live. Not idempotent: a second call brings new
    workers to whatever HITs are still open. Returns what was done and where the truth came from.
    """
    from annotator.campaigns.services.lifecycle import campaign_launch
    from annotator.labels.services.aggregation import labels_aggregate
    from annotator.quality.services.peers import assignments_auto_approve_due
    from annotator.scenarios.similarity import similarity_crowd_work
    from annotator.scenarios.verification_crowd import four_choice_crowd_work

    if campaign.status == CampaignStatus.BUILT:
        campaign = campaign_launch(campaign=campaign)
    if campaign.status != CampaignStatus.LIVE:
        raise ApplicationError(
            f"Campaign {campaign.pk} is {campaign.status}; a simulated crowd works on a built or live campaign.",
            status=409,
        )
    truth_of, true_score, source = _dataset_truth(campaign)
    if campaign.scale == Scale.SIMILARITY:
        done = similarity_crowd_work(
            campaign=campaign, true_score=true_score, workers=workers or 30, noise=noise, seed=seed
        )
        assignments_auto_approve_due(now=timezone.now() + timedelta(hours=campaign.auto_approve_hours, days=30))
        done["aggregation"] = labels_aggregate(campaign=campaign)
    else:
        done = four_choice_crowd_work(
            campaign=campaign, truth_of=truth_of, workers=workers or 12, accuracy=accuracy, seed=seed
        )
    done["truth"] = source
    done["campaign"] = campaign.pk
    return done
