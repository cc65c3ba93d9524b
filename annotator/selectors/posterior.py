"""The crowd's posterior for a campaign: load answers, gold and machine evidence, fit the model, read it.

Two views of the same model (`annotator.analysis.posterior`):
- the *working* posterior, over every scored answer not rejected (approved, or submitted and waiting):
  it decides which pairs still need answers (adaptive redundancy) and whether an assignment disagrees
  with the crowd (the last check before approval). A bad worker's answers are in it, at the weight the
  model gives them, so nobody has to be approved before the crowd can judge them;
- the *label* posterior, over approved answers only: the Labels researchers download.

Reads only; no locks.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from django.conf import settings
from django.db.models import Q

from annotator.analysis.posterior import PosteriorFit, PosteriorPrior, fit_posterior
from annotator.models import (
    Answer,
    AssignmentStatus,
    Campaign,
    Candidate,
    HitItem,
    ItemRole,
    Pair,
    PairKind,
    PairSource,
    Scale,
)

GOLD_TRUTH = {ItemRole.GOLD_POSITIVE: True, ItemRole.GOLD_NEGATIVE: False}
SIMILARITY_POSITIVE_AT = 3.0


def verdict(choice: str, score, scale: str) -> bool | None:
    """Positive or not, from one answer; None when it says nothing."""
    if scale == Scale.SIMILARITY:
        return None if score is None else float(score) >= SIMILARITY_POSITIVE_AT
    return None if not choice else choice in ("yes", "partially_yes")


def working_answers() -> Q:
    """Scored answers that were not rejected: approved, or submitted and scored."""
    return Q(assignment__status=AssignmentStatus.APPROVED) | Q(
        assignment__status=AssignmentStatus.SUBMITTED, assignment__scored_at__isnull=False
    )


def machine_features(*, campaign: Campaign, pair_ids=None) -> dict[int, np.ndarray]:
    """Per pair, for each of the campaign's runs: proposed (0/1), 1/rank and the score standardised within
    the run (0 when the run did not propose the pair); then for each run and each direction (image to
    caption, caption to image) whether the pair is in the run's whole top-k, 1/rank and the standardised
    score there (what every run thinks of the pairs the others proposed, deeper than the pool, and from the
    other side); then how many runs proposed it and whether it is one of the dataset's own (original)
    pairs. The machine prior's logistic model reads these."""
    run_ids = sorted(campaign.runs.values_list("pk", flat=True))
    if not run_ids:
        return {}
    column = {run: k for k, run in enumerate(run_ids)}
    deep = 3 * len(run_ids)  # where the top-k columns start
    width = 9 * len(run_ids) + 2
    rows = PairSource.objects.filter(pair__campaign=campaign, run_id__in=run_ids)
    pairs = Pair.objects.filter(campaign=campaign)
    if pair_ids is not None:
        rows = rows.filter(pair_id__in=list(pair_ids))
        pairs = pairs.filter(pk__in=list(pair_ids))
    best: dict[tuple[int, int], tuple[int, float]] = {}
    for pair_id, run_id, rank, score in rows.values_list("pair_id", "run_id", "rank", "score"):
        key = (pair_id, run_id)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, score)
    scores = defaultdict(list)
    for (_, run_id), (_, score) in best.items():
        scores[run_id].append(score)
    stats = {run: (float(np.mean(v)), float(np.std(v)) or 1.0) for run, v in scores.items()}
    features: dict[int, np.ndarray] = {}
    for (pair_id, run_id), (rank, score) in best.items():
        vector = features.setdefault(pair_id, np.zeros(width))
        k = 3 * column[run_id]
        mean, std = stats[run_id]
        vector[k : k + 3] = (1.0, 1.0 / max(rank, 1), (score - mean) / std)
        vector[-2] += 1.0
    image_caption = pairs.filter(kind=PairKind.IMAGE_CAPTION)
    keys = {(image, caption): pk for pk, image, caption in image_caption.values_list("pk", "image_id", "caption_id")}
    for offset, direction, queries, targets in (
        (0, "i2t", "image_id", "caption_id"),
        (3, "t2i", "caption_id", "image_id"),
    ):
        if not keys:
            break
        rows = Candidate.objects.filter(
            run_id__in=run_ids,
            direction=direction,
            query_id__in=image_caption.values(queries),
            target_id__in=image_caption.values(targets),
        ).values_list("run_id", "query_id", "target_id", "rank", "score")
        found = defaultdict(list)
        for run_id, query, target, rank, score in rows:
            key = (query, target) if direction == "i2t" else (target, query)
            if key in keys:
                found[run_id].append((keys[key], rank, score))
        for run_id, hits in found.items():
            values = np.array([score for _, _, score in hits])
            mean, std = float(values.mean()), float(values.std()) or 1.0
            k = deep + 6 * column[run_id] + offset
            for pair_id, rank, score in hits:
                vector = features.setdefault(pair_id, np.zeros(width))
                vector[k : k + 3] = (1.0, 1.0 / max(rank, 1), (score - mean) / std)
    for pair_id in pairs.filter(is_original=True).values_list("pk", flat=True):
        features.setdefault(pair_id, np.zeros(width))[-1] = 1.0
    return features


def label_prior(*, check: bool = False) -> PosteriorPrior:
    """The model's priors from the settings: QUALITY_POSTERIOR_WORKER_ACCURACY and _STRENGTH for labels and
    settling; with `check`, QUALITY_POSTERIOR_CHECK_ACCURACY (the crowd check before approval)."""
    name = "QUALITY_POSTERIOR_CHECK_ACCURACY" if check else "QUALITY_POSTERIOR_WORKER_ACCURACY"
    return PosteriorPrior(
        worker_accuracy=float(getattr(settings, name, 0.8)),
        worker_strength=float(getattr(settings, "QUALITY_POSTERIOR_WORKER_STRENGTH", 10.0)),
    )


def campaign_posterior(*, campaign: Campaign, approved_only: bool, prior: PosteriorPrior | None = None) -> PosteriorFit:
    """Fit the campaign's posterior: candidate answers are evidence, gold answers teach the model about the
    workers (their truth is known), and with campaign.machine_prior the machine annotators' evidence is
    each pair's prior.

    A promoted gold pair (a candidate the crowd settled, then asked again as gold in follow-ups) is known
    in the working posterior, where it judges workers as the gold scoring does; in the label posterior
    (`approved_only`) it is a candidate like any other and its gold answers are more evidence on it: its
    truth is only what the crowd said, so taking it as known would give its Label P = 0 or 1 with an
    interval of width zero, a certainty the model drew from its own settling."""
    answers = Answer.objects.filter(item__hit__campaign=campaign)
    answers = (
        answers.filter(assignment__status=AssignmentStatus.APPROVED)
        if approved_only
        else answers.filter(working_answers())
    )
    candidates = set(
        HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values_list("pair_id", flat=True)
    )
    pair_ids, worker_ids, verdicts, known = [], [], [], {}
    for pair_id, role, worker_id, choice, score in answers.values_list(
        "item__pair_id", "item__role", "assignment__worker_id", "choice", "score"
    ):
        said = verdict(choice, score, campaign.scale)
        if said is None:
            continue
        pair_ids.append(pair_id)
        worker_ids.append(worker_id)
        verdicts.append(said)
        if role in GOLD_TRUTH and not (approved_only and pair_id in candidates):
            known[pair_id] = GOLD_TRUTH[role]
    features = None
    if campaign.machine_prior:
        features = machine_features(campaign=campaign, pair_ids=candidates | set(known)) or None
        if features is not None:
            width = len(next(iter(features.values())))
            for pair_id in set(pair_ids) | set(known):
                features.setdefault(pair_id, np.zeros(width))
    return fit_posterior(
        pair_ids=pair_ids,
        worker_ids=worker_ids,
        verdicts=verdicts,
        known=known,
        features=features,
        prior=prior or label_prior(),
    )
