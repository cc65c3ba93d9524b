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
from django.db.models import Min, Q, Sum

from annotator.analysis.posterior import (
    GoldCheck,
    PosteriorFit,
    PosteriorPrior,
    fit_posterior,
    gold_check,
    gold_reference,
)
from annotator.campaigns.models.campaign import (
    Campaign,
    HitItem,
    ItemRole,
    Pair,
    PairKind,
    PairSource,
    Scale,
)
from annotator.crowd.models.crowd import Answer, AssignmentStatus
from annotator.crowd.models.standing import WorkerStanding
from annotator.crowd.scales import answer_verdict
from annotator.quality.selectors.gold_truth import GOLD_TRUTH
from annotator.quality.selectors.judge_prior import judge_pair_prior
from annotator.ranking.models.ranking import Candidate


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


# Item difficulty by the annotators' best rank (annotator.analysis.posterior): class 3 the candidates some annotator
# ranked first, class 2 those ranked second or third, class 1 every other candidate; class 0 is gold (absent from the
# map). Gold negatives are random pairs nobody ranked, far easier to reject than any candidate, so the specificity a
# worker shows on them says little about candidates: with gold in class 0, candidates' specificity is learnt from the
# candidates (the crowd's agreement), and gold teaches it only through the crowd's shared centre.
DIFFICULTY_RANKS = ((1, 3), (3, 2))  # (best rank at most, class), hardest first
ORDINARY_CANDIDATE = 1


def difficulty_classes(*, campaign: Campaign, pair_ids=None) -> dict[int, int]:
    """Per candidate pair: its difficulty class from the best rank any of the campaign's runs gave it (DIFFICULTY_RANKS,
    else ORDINARY_CANDIDATE). Candidates ranked first are harder negatives (ECCV Caption, Table B.2)."""
    rows = PairSource.objects.filter(pair__campaign=campaign)
    if pair_ids is not None:
        rows = rows.filter(pair_id__in=list(pair_ids))
    classes = {}
    for pair_id, best in rows.values("pair_id").annotate(best=Min("rank")).values_list("pair_id", "best"):
        classes[pair_id] = next(
            (difficulty for limit, difficulty in DIFFICULTY_RANKS if best is not None and best <= limit),
            ORDINARY_CANDIDATE,
        )
    return classes


def requester_crowd_accuracy(*, requester_id: int | None) -> float:
    """The requester's crowd at work: the share of gold items answered right in scored HITs on their campaigns
    (WorkerStanding; never qualification tests, which people take more carefully than they work), shrunk
    toward QUALITY_POSTERIOR_WORKER_ACCURACY with QUALITY_POSTERIOR_CROWD_STRENGTH answers' weight."""
    centre = float(getattr(settings, "QUALITY_POSTERIOR_WORKER_ACCURACY", 0.85))
    strength = float(getattr(settings, "QUALITY_POSTERIOR_CROWD_STRENGTH", 20.0))
    if requester_id is None:
        return centre
    sums = WorkerStanding.objects.filter(requester_id=requester_id).aggregate(
        c=Sum("gold_correct"), t=Sum("gold_total")
    )
    return (centre * strength + (sums["c"] or 0)) / (strength + (sums["t"] or 0))


def label_prior(*, check: bool = False, requester_id: int | None = None) -> PosteriorPrior:
    """The model's priors from the settings: for labels and settling, hierarchical (every worker starts from
    the crowd's accuracy at work, the crowd's from the requester's record, requester_crowd_accuracy), each
    worker worth QUALITY_POSTERIOR_WORKER_STRENGTH answers; with `check` (the crowd check before approval),
    one fixed, sceptical prior, QUALITY_POSTERIOR_CHECK_ACCURACY."""
    strength = float(getattr(settings, "QUALITY_POSTERIOR_WORKER_STRENGTH", 10.0))
    folds = int(getattr(settings, "QUALITY_POSTERIOR_PRIOR_FOLDS", 5))
    if check:
        return PosteriorPrior(
            worker_accuracy=float(getattr(settings, "QUALITY_POSTERIOR_CHECK_ACCURACY", 0.8)),
            worker_strength=strength,
            prior_folds=folds,
        )
    return PosteriorPrior(
        worker_accuracy=requester_crowd_accuracy(requester_id=requester_id),
        worker_strength=strength,
        hierarchical=True,
        crowd_strength=float(getattr(settings, "QUALITY_POSTERIOR_CROWD_STRENGTH", 20.0)),
        prior_folds=folds,
    )


def _posterior_inputs(*, campaign: Campaign, approved_only: bool) -> dict:
    """The fit's inputs (pair_ids, worker_ids, verdicts, known, features); see campaign_posterior."""
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
        said = answer_verdict(campaign=campaign, choice=choice, score=score)
        if said is None:
            continue
        pair_ids.append(pair_id)
        worker_ids.append(worker_id)
        verdicts.append(said)
        if role in GOLD_TRUTH and not (approved_only and pair_id in candidates):
            known[pair_id] = GOLD_TRUTH[role]
    features = pair_prior = None
    if campaign.machine_prior:
        features = machine_features(campaign=campaign, pair_ids=candidates | set(known)) or None
        if getattr(settings, "QUALITY_POSTERIOR_JUDGE_PRIOR", False):
            pair_prior = judge_pair_prior(campaign=campaign, pair_ids=candidates | set(known))
        if features is not None:
            width = len(next(iter(features.values())))
            for pair_id in set(pair_ids) | set(known):
                features.setdefault(pair_id, np.zeros(width))
    return {
        "pair_ids": pair_ids,
        "worker_ids": worker_ids,
        "verdicts": verdicts,
        "known": known,
        "features": features,
        "pair_prior": pair_prior,
        "difficulty": (
            difficulty_classes(campaign=campaign, pair_ids=candidates)
            if getattr(settings, "QUALITY_POSTERIOR_RANK_DIFFICULTY", True)
            else None
        ),
        "candidates": candidates,
    }


def campaign_posterior(*, campaign: Campaign, approved_only: bool, prior: PosteriorPrior | None = None) -> PosteriorFit:
    """Fit the campaign's posterior: candidate answers are evidence, gold answers teach the model about the
    workers (their truth is known), and with campaign.machine_prior the machine annotators' evidence is
    each pair's prior (with QUALITY_POSTERIOR_JUDGE_PRIOR, a finished judge run's calibrated P(yes) where it
    scored the pair: annotator.quality.selectors.judge_prior). The prior is label_prior for the campaign owner
    unless given.

    A promoted gold pair (a candidate the crowd settled, then asked again as gold in follow-ups) is known
    in the working posterior, where it judges workers as the gold scoring does; in the label posterior
    (`approved_only`) it is a candidate like any other and its gold answers are more evidence on it: its
    truth is only what the crowd said, so taking it as known would give its Label P = 0 or 1 with an
    interval of width zero, a certainty the model drew from its own settling."""
    inputs = _posterior_inputs(campaign=campaign, approved_only=approved_only)
    inputs.pop("candidates")
    return fit_posterior(**inputs, prior=prior or label_prior(requester_id=campaign.owner_id))


GOLD_CHECK_FOLDS = 5


def campaign_gold_check(*, campaign: Campaign) -> GoldCheck:
    """The working posterior checked on the campaign's own gold pairs (not promoted ones), each scored as if
    unknown: the gold pairs are split in GOLD_CHECK_FOLDS folds and the model is fitted once per fold with that
    fold's truth hidden, so a gold pair's truth never informs its own score (its answers still count, as any
    candidate's). A pair's score is the crowd's evidence only (the fitted log-odds less the machine prior,
    which knows an original pair when it sees one): what the answers and the model's worker weights say.
    Coverage, calibration and the inflation the intervals need: annotator.analysis.posterior.gold_check."""
    inputs = _posterior_inputs(campaign=campaign, approved_only=False)
    candidates = inputs.pop("candidates")
    known = inputs.pop("known")
    answered = set(inputs["pair_ids"])
    gold = sorted(p for p in known if p not in candidates and p in answered)
    prior = label_prior(requester_id=campaign.owner_id)
    rows = []
    for fold in range(min(GOLD_CHECK_FOLDS, len(gold))):
        hidden = set(gold[fold::GOLD_CHECK_FOLDS])
        fit = fit_posterior(**inputs, known={p: v for p, v in known.items() if p not in hidden}, prior=prior)
        row_of = fit.row_of()
        for pair in sorted(hidden):
            row = row_of[pair]
            rows.append(
                (
                    pair,
                    float(fit.log_odds[row] - fit.prior_log_odds[row]),
                    float(max(fit.log_odds_var[row] - fit.prior_var[row], 0.0)),
                )
            )
    reference = gold_reference(
        pair_ids=inputs["pair_ids"],
        worker_ids=inputs["worker_ids"],
        verdicts=inputs["verdicts"],
        known={p: known[p] for p in gold},
        strength=prior.worker_strength,
    )
    return gold_check(
        log_odds=[r[1] for r in rows],
        log_odds_var=[r[2] for r in rows],
        reference=[reference[r[0]] for r in rows],
        truth=[float(known[r[0]]) for r in rows],
    )


def campaign_calibration(*, campaign: Campaign) -> GoldCheck | None:
    """The Quality page's live calibration on gold (campaign_gold_check); None before launch, for a
    similarity-scale campaign, or while no gold pair has an answer."""
    if campaign.scale == Scale.SIMILARITY or campaign.launched_at is None:
        return None
    check = campaign_gold_check(campaign=campaign)
    return check if check.items else None
