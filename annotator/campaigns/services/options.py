"""Campaign options: which a requester sets, which change what a build produces, and the rules
between them that field validators cannot express.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ValidationError

from annotator.analysis.gold import QUALIFICATION_PASS_MARK_ABOVE
from annotator.campaigns.models.campaign import Campaign, CampaignDirection, Scale
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Dataset
from annotator.ranking.models.ranking import RankingRun, RunStatus

MAX_HIT_SIZE = 100
# Options a requester sets, in the groups the form shows them in; everything else on Campaign is state kept by
# the services. The one list: the form, the API's input and output fields and build_campaign's flags read it.
OPTION_GROUPS = (
    ("What to verify", ("name", "direction", "scale", "rationale_followups", "stage2_rationale_followups")),
    (
        "Which queries and candidates",
        (
            "sample_count",
            "sample_fraction",
            "seed",
            "query_list",
            "pool_depth",
            "gold_exclusion_depth",
            "sampling",
            "cocaption_share",
            "random_pair_share",
        ),
    ),
    (
        "HIT composition",
        ("candidates_per_hit", "gold_positives_per_hit", "gold_negatives_per_hit", "gold_reuse_limit", "redundancy"),
    ),
    ("Pay and time", ("reward_cents", "platform_fee_percent", "budget_cents", "lease_minutes", "max_hits_per_worker")),
    (
        "Quality",
        (
            "qualification_items",
            "qualification_pass_mark",
            "qualification_cooldown_minutes",
            "qualification_pool_size",
            "qualification_positive_share",
            "gold_max_exposure",
            "strict_gold",
            "similarity_gold_threshold",
            "similarity_positive_at",
            "gold_fail_action",
            "auto_approve_hours",
            "min_seconds_per_item",
            "confidence_threshold",
            "extra_assignment_cap",
            "tolerated_gold_misses",
        ),
    ),
    (
        "Labels and redundancy",
        (
            "label_model",
            "machine_prior",
            "adaptive_redundancy",
            "settle_probability",
            "settle_min_answers",
            "max_answers_per_pair",
            "gold_light_share",
        ),
    ),
)
OPTION_FIELDS = tuple(name for _title, names in OPTION_GROUPS for name in names)
# What each option means, in the words the form, the API's schema and `build_campaign --help` show.
OPTION_HELP = {
    "direction": "Both = ECCV's two stages: image-to-caption HITs first, then caption-to-image HITs.",
    "scale": "Caption-caption and image-image campaigns use the 0-5 similarity scale.",
    "rationale_followups": "Ask why for 'Partially YES' and 'Mostly NO' (four-choice scale only); for `both`, "
    "in the first (image-to-caption) stage.",
    "stage2_rationale_followups": "`both` only: ask why in the second (caption-to-image) stage too. ECCV Caption "
    "asks it without.",
    "sample_count": "Queries drawn per stage with the seed; leave both empty to take every query.",
    "sample_fraction": "Between 0 and 1, instead of a count.",
    "query_list": 'Exact queries per stage instead of a sample, as JSON {"i2t": [image ids], "t2i": [caption ids]} '
    "with the dataset's source ids (ECCV Caption's own queries, re-run); a listed query no run ranks is reported.",
    "seed": "The same seed and options build the same HITs.",
    "sampling": "The runs' own top k, or Crisscrossed Captions' way: caption-caption and image-image pairs through "
    "the other modality (image pairs from caption similarity, caption pairs from a visual or CLIP run), "
    "image-caption pairs through intramodal similarity (a caption of an image whose captions or pixels are "
    "similar: c2i_intrasim).",
    "cocaption_share": "Crisscrossed Captions sampling: the share of caption pairs taken from the same image.",
    "random_pair_share": "Crisscrossed Captions sampling: random pairs added, as a share of the model pairs.",
    "similarity_positive_at": "A pair is positive from this mean rating; empty: 3 (STS, SITS) or 2.5 (SIS).",
    "pool_depth": "Each annotator's top k per query goes into the pool (ECCV: 5).",
    "gold_exclusion_depth": "Gold negatives are in no annotator's top this many for their query (ECCV: 25).",
    "gold_reuse_limit": "A gold pair appears in at most this many HITs.",
    "qualification_pass_mark": "Above 0.5: the mean of the accuracy on matching and on non-matching items, so "
    "answering the same to everything scores 0.5 and fails.",
    "qualification_pool_size": "Pairs set aside for the qualification test only; never shown in a HIT.",
    "qualification_positive_share": "The share of matching pairs in the qualification pool and in every test "
    "(0.3 to 0.7); the rest are sure non-matching pairs.",
    "gold_max_exposure": "A HIT gold pair seen by this many workers is replaced in the HITs nobody has opened.",
    "redundancy": "Distinct workers per HIT, 1 to 9.",
    "reward_cents": "Paid per approved HIT, in cents.",
    "platform_fee_percent": "Added on top of the rewards in the cost estimate.",
    "max_hits_per_worker": "Leave empty for no cap.",
    "tolerated_gold_misses": "Gold misses per HIT forgiven when the crowd vouches for the worker.",
    "label_model": "How answers become labels; the posterior also gives each label a 90% interval.",
    "machine_prior": "Let the ranking runs' scores inform each pair's prior.",
    "adaptive_redundancy": "Ask again only about pairs whose label is not settled yet (follow-up HITs).",
    "settle_probability": "A pair is settled when P(positive) or P(negative) reaches this (0.5 to 0.9999).",
    "settle_min_answers": "Answers a pair needs before it can settle (the machine prior counts as one).",
    "max_answers_per_pair": "No follow-up HIT asks about a pair that has this many answers.",
    "gold_light_share": "Adaptive gold: this share of the HITs holds one gold item instead of two and, in the "
    "other's place, a candidate ranked just below the pooling depth; workers with a clean gold record get them "
    "first. 0 = every HIT has the full gold.",
}

# Options that change what a build produces (a rebuild with the same values is a no-op).
BUILD_FIELDS = (
    "direction",
    "sample_count",
    "sample_fraction",
    "seed",
    "query_list",
    "pool_depth",
    "sampling",
    "cocaption_share",
    "random_pair_share",
    "gold_exclusion_depth",
    "candidates_per_hit",
    "gold_positives_per_hit",
    "gold_negatives_per_hit",
    "gold_reuse_limit",
    "redundancy",
    "qualification_pool_size",
    "qualification_positive_share",
    "gold_light_share",
)


def validation_error(error: ValidationError) -> ApplicationError:
    if hasattr(error, "message_dict"):
        errors = [f"{field}: {message}" for field, messages in error.message_dict.items() for message in messages]
    else:
        errors = list(error.messages)
    return ApplicationError("The campaign options are not valid: " + "; ".join(errors), extra={"errors": errors})


def check_runs(*, dataset: Dataset, runs: list[RankingRun]) -> None:
    if not runs:
        raise ApplicationError("Choose at least one finished ranking run.")
    for run in runs:
        if run.dataset_id != dataset.pk:
            raise ApplicationError(f"Ranking run {run.pk} ranks another dataset, not {dataset.name}.")
        if run.status != RunStatus.SUCCEEDED:
            raise ApplicationError(f"Ranking run {run.pk} is {run.status}; only succeeded runs can be pooled.")


SAME_MODALITY = (CampaignDirection.T2T, CampaignDirection.I2I)
CAMPAIGN_STAGES = {"i2t": ("i2t",), "t2i": ("t2i",), "both": ("i2t", "t2i"), "t2t": ("t2t",), "i2i": ("i2i",)}


def query_list_problem(campaign: Campaign) -> str | None:
    """What is wrong with the campaign's query list, or None (an empty list is none: the stages sample)."""
    listed = campaign.query_list
    if not listed:
        return None
    if not isinstance(listed, dict):
        return "not an object"
    stages = CAMPAIGN_STAGES.get(campaign.direction, ())
    for stage, ids in listed.items():
        if stage not in stages:
            return f"{stage!r} is not a stage of this campaign"
        if not isinstance(ids, list) or not ids or not all(isinstance(i, (str, int)) for i in ids):
            return f"{stage!r} is not a list of ids"
    return None


# The rules between options that field validators cannot express: (broken when, what the requester is told).
OPTION_RULES: tuple[tuple[Callable[[Campaign], bool], str], ...] = (
    (
        lambda c: c.sample_count is not None and c.sample_fraction is not None,
        "Give a sample count or a sample fraction, not both.",
    ),
    (
        lambda c: bool(c.query_list) and (c.sample_count is not None or c.sample_fraction is not None),
        "Give a query list or a sample count or fraction, not both.",
    ),
    (
        lambda c: bool(query_list_problem(c)),
        'The query list is {"<stage>": ["<source id>", ...]} for the campaign\'s own stages, each list not empty.',
    ),
    (lambda c: c.sample_count is not None and c.sample_count < 1, "The sample count must be at least 1."),
    (lambda c: c.pool_depth < 1, "The pooling depth must be at least 1."),
    (
        lambda c: c.gold_exclusion_depth < c.pool_depth,
        "The gold-negative exclusion depth must be at least the pooling depth.",
    ),
    (
        lambda c: c.stage2_rationale_followups and c.direction != CampaignDirection.BOTH,
        "Follow-ups in the second stage are for `both` campaigns; the others have one stage.",
    ),
    (lambda c: c.hit_size > MAX_HIT_SIZE, f"A HIT holds at most {MAX_HIT_SIZE} items."),
    (lambda c: c.gold_reuse_limit < 1, "The gold reuse limit must be at least 1."),
    (
        lambda c: c.qualification_items and not QUALIFICATION_PASS_MARK_ABOVE < c.qualification_pass_mark <= 1,
        "The qualification pass mark must be above 0.5 and at most 1: a worker who gives the same answer to "
        "everything scores 0.5.",
    ),
    (
        lambda c: c.direction in SAME_MODALITY and c.scale != Scale.SIMILARITY,
        "Caption-caption and image-image pairs are rated on the similarity (0-5) scale.",
    ),
    (
        lambda c: c.direction == CampaignDirection.I2I and c.gold_positives_per_hit,
        "Image-image campaigns have no original pairs to use as gold positives; set them to 0.",
    ),
)


def _run_errors(campaign: Campaign, run: RankingRun) -> list[str]:
    """What a run's kept depth rules out: pooling deeper than it, or checking gold negatives deeper than it."""
    errors = []
    if run.top_k < campaign.pool_depth:
        errors.append(f"Run {run.pk} kept only its top {run.top_k}; the pooling depth can be at most that.")
    if campaign.gold_negatives_per_hit and run.top_k < campaign.gold_exclusion_depth:
        errors.append(
            f"Run {run.pk} kept only its top {run.top_k}, so gold negatives cannot be checked against a top "
            f"{campaign.gold_exclusion_depth}; lower the exclusion depth to {run.top_k}."
        )
    return errors


def check_options(*, campaign: Campaign, runs: list[RankingRun]) -> None:
    """The rules between options (OPTION_RULES and each run's depth); one ApplicationError lists every one broken."""
    errors = [message for broken, message in OPTION_RULES if broken(campaign)]
    errors += [error for run in runs for error in _run_errors(campaign, run)]
    if errors:
        raise ApplicationError("The campaign options are not valid: " + " ".join(errors), extra={"errors": errors})
