"""What an evaluation is scored against: a campaign's labels (an aggregation method, lenient or strict)
or a label set, graded, with the quick ECCV numbers of the rankings and the coverage warnings."""

from __future__ import annotations

from dataclasses import dataclass

from annotator.campaigns.models.campaign import Campaign
from annotator.core.errors import ApplicationError
from annotator.labels.models.exports import ExportVariant
from annotator.labels.models.labelsets import LabelSet
from annotator.research.coverage import low_coverage_warnings
from annotator.research.selectors.scorecards import (
    campaign_annotator_names,
    campaign_grades,
    labelset_grades,
    removed_caption_ids,
)
from annotator.research.services.evaluation import campaign_evaluate
from annotator.research.services.labelset_evaluation import labelset_evaluate


@dataclass
class Target:
    """What an evaluation is scored against: its graded labels, its dataset, who built the labels."""

    campaign: Campaign | None
    label_set: LabelSet | None
    method: str
    variant: str
    judgements: dict
    quick: dict  # the ECCV numbers of the rankings: {"verified": ..., "original": ..., "counts": ...}
    builders: set[str]
    removed: set[int]
    warnings: list[str]

    @property
    def dataset(self):
        return self.campaign.dataset if self.campaign is not None else self.label_set.dataset


def evaluation_target(
    *,
    rankings: dict,
    campaign: Campaign | None = None,
    label_set: LabelSet | None = None,
    method: str | None = None,
    variant: str = ExportVariant.LENIENT,
    model_name: str = "",
) -> Target:
    """The labels of a campaign (an aggregation method, lenient or strict) or of a label set, graded
    ("Partially YES" 0.5), with the quick ECCV numbers of `rankings` against them. Read-only."""
    if (campaign is None) == (label_set is None):
        raise ApplicationError("Evaluate against either a campaign's labels or a label set.")
    if campaign is not None:
        outcome = campaign_evaluate(campaign=campaign, rankings=rankings, method=method, variant=variant)
        return Target(
            campaign=campaign,
            label_set=None,
            method=outcome["method"],
            variant=outcome["variant"],
            judgements=campaign_grades(campaign=campaign, method=outcome["method"], label_map=outcome["labels"]),
            quick={key: outcome[key] for key in ("verified", "original", "counts")},
            builders={name.lower() for name in campaign_annotator_names(campaign=campaign)},
            removed=removed_caption_ids(campaign=campaign),
            warnings=[],
        )
    outcome = labelset_evaluate(label_set=label_set, rankings=rankings, model_name=model_name)
    return Target(
        campaign=None,
        label_set=label_set,
        method="",
        variant=ExportVariant.LENIENT,
        judgements=labelset_grades(label_set=label_set),
        quick={"verified": outcome["scores"], "counts": outcome["counts"]},
        builders={name.lower() for name in label_set.annotators},
        removed=set(),
        warnings=outcome["warnings"],
    )


def coverage_warnings(*, rankings: dict, labels: dict, test_set) -> list[str]:
    """Say when rankings cover few of the label queries, or of the test set's queries."""
    warnings = []
    everyone = {"i2t": {image for _, image in test_set.caption_image}, "t2i": {c for c, _ in test_set.caption_image}}
    for direction in ("i2t", "t2i"):
        ranked = rankings.get(direction, {})
        for what, queries in (("labelled", set(labels.get(direction, {}))), ("test-set", everyone[direction])):
            covered = len(queries & set(ranked))
            warnings += low_coverage_warnings(
                direction=direction, covered=covered, queries=len(queries), of=f"{what} queries"
            )
    return warnings
