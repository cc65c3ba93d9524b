"""The judged image-caption pairs of a label set or of a campaign's labels, each with a captioning metric's
score (the relevance matrix N of the semantic protocol: CIDEr-D, or SPICE, with each image's captions as its
references) and the human judgement: the 0-5 rating where there is one, else the verified label graded
(100% YES 1, Partially YES 0.5, else 0; a set's plain positive 1 / negative 0).

A dataset pair (the caption is one of its image's own) scores its own reference, so the correlation is also
given without them (`not_original`), where the metric judges captions it never saw as references.

Instead of CIDEr-D or SPICE, any metric's or model's stored scores of the pairs can be correlated (`scores`,
read by `metric_scores_read` from CSV or JSONL, annotator.analysis.metric_human.pair_scores_read): ids are the
dataset's source ids, or CxC's spellings of them (so an annotator's `sits_scores.csv` from `manage.py
cxc_annotator_scores` is such a file)."""

from __future__ import annotations

from annotator.analysis.metric_human import metric_human_correlation, pair_scores_read
from annotator.campaigns.models.campaign import Campaign
from annotator.core.errors import ApplicationError
from annotator.crowd.models.crowd import Choice
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.labels.models.labels import Label
from annotator.labels.models.labelsets import LabelSet, LabelSetPair
from annotator.labels.selectors.cxc_ids import cxc_ids
from annotator.labels.selectors.labels import label_method_resolve
from annotator.labels.services.labelsets.readers import decode
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


def metric_scores_read(*, name: str, content: bytes | str) -> dict[tuple[str, str], float]:
    """{(image id, caption id): score} of an uploaded scores file (CSV or JSONL, gzip-compressed too); a 400
    naming the file and what is wrong with it (413 when it is too large)."""
    text = decode(content, what=f"scores file {name}")
    try:
        return pair_scores_read(text)
    except ValueError as error:
        raise ApplicationError(f"{name}: {error}") from None


def _source_ids(*, dataset: Dataset) -> tuple[dict[str, str], dict[str, str]]:
    """CxC's spelling -> source id, of the dataset's images and of its captions."""
    spelled = cxc_ids(dataset_id=dataset.pk)
    images = Image.objects.filter(dataset=dataset).values_list("pk", "source_id")
    captions = Caption.objects.filter(dataset=dataset).values_list("pk", "source_id")
    return (
        {spelled["image"][pk]: source for pk, source in images},
        {spelled["caption"][pk]: source for pk, source in captions},
    )


def _scores_by_source(*, dataset: Dataset, scores: dict, judged: set) -> dict[tuple[str, str], float]:
    """`scores` keyed by source ids: a key that names no judged pair as it is is read as CxC's spelling."""
    if all(pair in judged for pair in scores):
        return scores
    image_source, caption_source = _source_ids(dataset=dataset)
    return {
        (pair if pair in judged else (image_source.get(pair[0], pair[0]), caption_source.get(pair[1], pair[1]))): value
        for pair, value in scores.items()
    }


def _with_scores(*, dataset: Dataset, judged: list, scores: dict, name: str, what: str):
    """(image, score, human) rows of the judged pairs that `scores` scores, and notes on those it leaves out."""
    scores = _scores_by_source(dataset=dataset, scores=scores, judged={(row[0], row[1]) for row in judged})
    rows, missing = [], 0
    for image, caption, score, choice, positive in judged:
        value = scores.get((image, caption))
        if value is None:
            missing += 1
            continue
        rows.append((image, caption, value, _human(score, choice, positive)))
    if not rows:
        raise ApplicationError(
            f"None of the {len(scores):,} pairs of {name} is a judged image-caption pair of the {what}: ids are "
            f"dataset {dataset.name}'s source ids (or CxC's spellings of them), the image first."
        )
    notes = []
    if missing:
        notes.append(f"{missing:,} of {len(judged):,} judged pairs have no score in {name} and are left out.")
    unjudged = len(scores) - len(rows)
    if unjudged:
        notes.append(f"{unjudged:,} pairs of {name} are not judged image-caption pairs of the {what}; not used.")
    return rows, notes


def metric_human_agreement(
    *,
    label_set: LabelSet | None = None,
    campaign: Campaign | None = None,
    method: str | None = None,
    metric: str = "cider",
    scores: dict[tuple[str, str], float] | None = None,
    scores_name: str = "the scores file",
    resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Kendall's tau-b and Spearman's r between `metric` (or, given `scores`, those stored scores of
    (image source id, caption source id) pairs, read by metric_scores_read) and the human judgements of
    the judged image-caption pairs, over all of them and over those that are not dataset pairs, with
    bootstrap intervals. Read-only; a 400 when the labels have no image-caption pair, the metric cannot be
    computed for the dataset, or `scores` scores none of the judged pairs."""
    if (label_set is None) == (campaign is None):
        raise ApplicationError("Correlate against a label set or a campaign's labels.")
    if not 0 <= resamples <= 10_000:
        raise ApplicationError("resamples must be between 0 and 10,000.")
    dataset, judged_rows, what = _judged(label_set=label_set, campaign=campaign, method=method)
    judged = list(judged_rows.iterator(chunk_size=10_000))
    if not judged:
        raise ApplicationError(f"The {what} has no judged image-caption pair to correlate.")
    if scores is not None:
        rows, notes = _with_scores(dataset=dataset, judged=judged, scores=scores, name=scores_name, what=what)
        metric_name = scores_name
    else:
        test_set, notes = dataset_test_set(dataset=dataset, semantic=True, semantic_metric=metric)
        if test_set.relevance is None:
            raise ApplicationError(
                f"The {metric} scores of dataset {dataset.name} cannot be computed: " + " ".join(notes)
            )
        row = {image: index for index, image in enumerate(test_set.images)}
        column = {caption: index for index, caption in enumerate(test_set.captions)}
        rows = [
            (image, caption, float(test_set.relevance[row[image], column[caption]]), _human(score, choice, positive))
            for image, caption, score, choice, positive in judged
            if image in row and caption in column
        ]
        metric_name = test_set.relevance_metric
        if not rows:
            raise ApplicationError(f"The {what} has no judged image-caption pair to correlate.")
    own_image = dict(Caption.objects.filter(dataset=dataset).values_list("source_id", "image__source_id"))
    everything = [(image, value, human) for image, _caption, value, human in rows]
    not_original = [(image, value, human) for image, caption, value, human in rows if own_image.get(caption) != image]
    return {
        "labels": what,
        "metric": metric_name,
        "all": metric_human_correlation(everything, resamples=resamples, seed=seed),
        "not_original": metric_human_correlation(not_original, resamples=resamples, seed=seed),
        "notes": notes,
    }
