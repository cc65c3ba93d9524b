"""The judged image-caption pairs of a label set or of a campaign's labels, each with a captioning metric's
score (the relevance matrix N of the semantic protocol: CIDEr-D, or SPICE, with each image's captions as its
references) and the human judgement: the 0-5 rating where there is one, else the verified label graded
(100% YES 1, Partially YES 0.5, else 0; a set's plain positive 1 / negative 0).

A dataset pair (the caption is one of its image's own) scores its own reference, so the correlation is also
given without them (`not_original`), where the metric judges captions it never saw as references."""

from __future__ import annotations

from annotator.analysis.metric_human import metric_human_correlation
from annotator.campaigns.models.campaign import Campaign
from annotator.core.errors import ApplicationError
from annotator.crowd.models.crowd import Choice
from annotator.datasets.models.dataset import Caption
from annotator.labels.models.labels import Label
from annotator.labels.models.labelsets import LabelSet, LabelSetPair
from annotator.labels.selectors.labels import label_method_resolve
from annotator.research.selectors.scorecards import dataset_test_set

GRADE = {Choice.YES: 1.0, Choice.PARTIALLY_YES: 0.5, Choice.MOSTLY_NO: 0.0, Choice.NO: 0.0}


def _human(score, choice: str, positive: bool) -> float:
    if score is not None:
        return float(score)
    if choice in GRADE:
        return GRADE[choice]
    return 1.0 if positive else 0.0


def _judged(*, label_set: LabelSet | None, campaign: Campaign | None, method: str | None):
    if label_set is not None:
        return (
            label_set.dataset,
            LabelSetPair.objects.filter(label_set=label_set, kind="image_caption").values_list(
                "image__source_id", "caption__source_id", "score", "choice", "is_positive"
            ),
            f"label set {label_set.label}",
        )
    method = label_method_resolve(campaign=campaign, method=method)
    rows = Label.objects.filter(pair__campaign=campaign, method=method, pair__kind="image_caption").values_list(
        "pair__image__source_id", "pair__caption__source_id", "score", "choice", "is_positive"
    )
    return campaign.dataset, rows, f"campaign {campaign.pk} ({method})"


def metric_human_agreement(
    *,
    label_set: LabelSet | None = None,
    campaign: Campaign | None = None,
    method: str | None = None,
    metric: str = "cider",
    resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Kendall's tau-b and Spearman's r between `metric` and the human judgements of the judged image-caption
    pairs, over all of them and over those that are not dataset pairs, with bootstrap intervals. Read-only;
    a 400 when the labels have no image-caption pair or the metric cannot be computed for the dataset."""
    if (label_set is None) == (campaign is None):
        raise ApplicationError("Correlate against a label set or a campaign's labels.")
    if not 0 <= resamples <= 10_000:
        raise ApplicationError("resamples must be between 0 and 10,000.")
    dataset, judged, what = _judged(label_set=label_set, campaign=campaign, method=method)
    test_set, notes = dataset_test_set(dataset=dataset, semantic=True, semantic_metric=metric)
    if test_set.relevance is None:
        raise ApplicationError(f"The {metric} scores of dataset {dataset.name} cannot be computed: " + " ".join(notes))
    row = {image: index for index, image in enumerate(test_set.images)}
    column = {caption: index for index, caption in enumerate(test_set.captions)}
    own_image = dict(Caption.objects.filter(dataset=dataset).values_list("source_id", "image__source_id"))
    everything, not_original = [], []
    for image, caption, score, choice, positive in judged.iterator(chunk_size=10_000):
        if image not in row or caption not in column:
            continue
        entry = (image, float(test_set.relevance[row[image], column[caption]]), _human(score, choice, positive))
        everything.append(entry)
        if own_image.get(caption) != image:
            not_original.append(entry)
    if not everything:
        raise ApplicationError(f"The {what} has no judged image-caption pair to correlate.")
    return {
        "labels": what,
        "metric": test_set.relevance_metric,
        "all": metric_human_correlation(everything, resamples=resamples, seed=seed),
        "not_original": metric_human_correlation(not_original, resamples=resamples, seed=seed),
        "notes": notes,
    }
