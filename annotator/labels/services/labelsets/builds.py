"""Label sets made inside Vericap: from a campaign's crowd labels, from the dataset's original pairs, and
derived from other sets (union, intersection, difference)."""

from __future__ import annotations

from collections.abc import Sequence

from annotator.analysis.labelsets import DEFAULT_QUERY_RULE, SetView, combine
from annotator.campaigns.models.campaign import Campaign, PairSource
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.labels.models.cleanup import CleanupProposal, CleanupStatus
from annotator.labels.models.exports import ExportVariant
from annotator.labels.models.labels import Label
from annotator.labels.models.labelsets import (
    LabelSet,
    LabelSetKind,
    LabelSetOperation,
    LabelSetPair,
    QueryRule,
)
from annotator.labels.selectors.labels import label_method_resolve
from annotator.labels.selectors.labelsets import labelset_view
from annotator.labels.services.labelsets.store import labelset_store

# The side of a campaign pair that is the query of a direction.
QUERY_FIELD = {"i2t": "pair__image_id", "t2i": "pair__caption_id", "t2t": "pair__query_id", "i2i": "pair__query_id"}


def _crowd_view(*, campaign: Campaign, method: str, variant: str) -> tuple[SetView, dict]:
    """The campaign's labelled pairs of `method` and its judged queries.

    Judged queries: a query whose candidates the campaign pooled, i.e. the query side of a pair some
    ranking proposed in that direction (PairSource). Gold pairs are labelled pairs like any other, but
    they make no query of their own. Captions whose removal the requester confirmed (post-processing) are
    neither queries nor in any pair, as in the campaign's exports.
    """
    removed = set(
        CleanupProposal.objects.filter(campaign=campaign, status=CleanupStatus.CONFIRMED).values_list(
            "caption_id", flat=True
        )
    )
    view = SetView()
    for direction, field in QUERY_FIELD.items():
        rows = PairSource.objects.filter(pair__campaign=campaign, direction=direction).values_list(field, flat=True)
        view.queries[direction] = {q for q in rows.distinct() if q is not None} - (
            removed if direction in ("t2i", "t2t") else set()
        )
    positive_field = "is_positive_strict" if variant == ExportVariant.STRICT else "is_positive"
    details = {}
    rows = Label.objects.filter(pair__campaign=campaign, method=method).values_list(
        "pair__kind",
        "pair__image_id",
        "pair__caption_id",
        "pair__other_image_id",
        "pair__other_caption_id",
        positive_field,
        "score",
        "choice",
    )
    for kind, image, caption, other_image, other_caption, positive, score, choice in rows.iterator(chunk_size=10_000):
        if caption in removed or other_caption in removed:
            continue
        if kind == "image_caption":
            key = (kind, image, caption)
        elif kind == "caption_caption":
            key = (kind, caption, other_caption)
        else:
            key = (kind, image, other_image)
        view.pairs[key] = bool(positive)
        details[key] = (score, choice or "")
    return view, details


def labelset_from_campaign(
    *,
    campaign: Campaign,
    user=None,
    method: str | None = None,
    variant: str = ExportVariant.LENIENT,
    name: str | None = None,
    description: str = "",
    public: bool = False,
) -> LabelSet:
    """A crowd-verified set: the campaign's labels of `method` (default: the preferred method it has),
    positive as `variant` says (lenient: "100% YES" and "Partially YES"; strict: "100% YES").

    The set is a snapshot: answers approved later go into a new version (call this again). Its
    annotators are the campaign's machine annotators (its runs and every run its pairs' provenance
    names). The caller checked that `user` may read the campaign. See labelset_store for the lock.
    """
    if variant not in ExportVariant.values:
        raise ApplicationError(f"Unknown variant {variant!r}.", extra={"allowed": list(ExportVariant.values)})
    method = label_method_resolve(campaign=campaign, method=method)
    view, details = _crowd_view(campaign=campaign, method=method, variant=variant)
    if not view.pairs:
        raise ApplicationError(f"Campaign {campaign.pk} has no {method} labels to make a set of.", status=409)
    annotators = sorted(
        set(campaign.runs.values_list("annotator__name", flat=True))
        | set(
            PairSource.objects.filter(pair__campaign=campaign).values_list("run__annotator__name", flat=True).distinct()
        )
    )
    return labelset_store(
        dataset=campaign.dataset,
        name=name or f"campaign-{campaign.pk}-{method}-{variant}",
        view=view,
        details=details,
        kind=LabelSetKind.CROWD,
        campaign=campaign,
        method=method,
        variant=variant,
        description=description or f"Crowd-verified labels of campaign {campaign.name!r} ({method}, {variant}).",
        created_by=user,
        public=public,
        annotators=annotators,
        report={"labels": len(view.pairs)},
    )


def labelset_from_original(
    *, dataset: Dataset, user=None, name: str = "original", description: str = "", public: bool = False
) -> LabelSet:
    """The dataset's own pairs as a set (COCO's "one image per caption, five captions per image"): every
    image is an i2t query with its captions as positives, every caption a t2i query with its image."""
    view = SetView()
    view.queries["i2t"] = set(Image.objects.filter(dataset=dataset).values_list("pk", flat=True))
    view.queries["t2i"] = set()
    for caption_id, image_id in (
        Caption.objects.filter(dataset=dataset).values_list("pk", "image_id").iterator(chunk_size=10_000)
    ):
        view.queries["t2i"].add(caption_id)
        view.pairs[("image_caption", image_id, caption_id)] = True
    if not view.pairs:
        raise ApplicationError(f"Dataset {dataset.name} has no captions yet.", status=409)
    return labelset_store(
        dataset=dataset,
        name=name,
        view=view,
        kind=LabelSetKind.ORIGINAL,
        description=description or f"The original pairs of dataset {dataset.name}.",
        created_by=user,
        public=public,
    )


def labelset_derive(
    *,
    operands: Sequence[LabelSet],
    operation: str,
    name: str,
    query_rule: str | None = None,
    user=None,
    description: str = "",
    public: bool = False,
) -> LabelSet:
    """A set computed from others (annotator.analysis.labelsets.combine says how), e.g. ECCV Caption's
    recipe: union of the crowd set, CxC and the original pairs, on the crowd set's queries
    (`query_rule="first"`). The operands stay as they are; the caller checked that `user` may read them.
    A pair keeps the score and choice of the first operand that labels it. See labelset_store for the lock.
    """
    operands = list(operands)
    if operation not in LabelSetOperation.values:
        raise ApplicationError(f"Unknown operation {operation!r}.", extra={"allowed": list(LabelSetOperation.values)})
    query_rule = query_rule or DEFAULT_QUERY_RULE[operation]
    if query_rule not in QueryRule.values:
        raise ApplicationError(f"Unknown query rule {query_rule!r}.", extra={"allowed": list(QueryRule.values)})
    if len(operands) < 2:
        raise ApplicationError("A derived set needs at least two sets.")
    if len({operand.pk for operand in operands}) != len(operands):
        raise ApplicationError("Each set may appear once among the operands.")
    datasets = {operand.dataset_id for operand in operands}
    if len(datasets) != 1:
        raise ApplicationError("The sets of a derived set must be on the same dataset.")
    view = combine(
        [labelset_view(label_set=operand) for operand in operands], operation=operation, query_rule=query_rule
    )
    details = {}
    for operand in operands:
        rows = LabelSetPair.objects.filter(label_set=operand).exclude(score__isnull=True, choice="")
        for kind, image, caption, other_image, other_caption, score, choice in rows.values_list(
            "kind", "image_id", "caption_id", "other_image_id", "other_caption_id", "score", "choice"
        ).iterator(chunk_size=10_000):
            second = (
                caption if kind == "image_caption" else (other_caption if kind == "caption_caption" else other_image)
            )
            first = caption if kind == "caption_caption" else image
            key = (kind, first, second)
            if key in view.pairs and key not in details:
                details[key] = (score, choice)
    annotators = list(dict.fromkeys(name_ for operand in operands for name_ in operand.annotators))
    symbol = {"union": " | ", "intersection": " & ", "difference": " - "}[operation]
    return labelset_store(
        dataset=operands[0].dataset,
        name=name,
        view=view,
        details=details,
        operands=operands,
        kind=LabelSetKind.DERIVED,
        operation=operation,
        query_rule=query_rule,
        description=description or symbol.join(operand.label for operand in operands) + f" (queries: {query_rule})",
        created_by=user,
        public=public,
        annotators=annotators,
        report={"operands": [operand.label for operand in operands]},
    )
