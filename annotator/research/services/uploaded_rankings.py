"""Bring your own ranking: a researcher's model rankings become a ranking run; the pairs of its top k that a
label set has not judged can go to the crowd as a campaign; the campaign's verified labels then merge into
a new version of the set."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign, CampaignDirection
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Dataset
from annotator.labels.models.exports import ExportVariant
from annotator.labels.models.labelsets import LabelSet, LabelSetOperation, QueryRule
from annotator.labels.selectors.labelsets import (
    QUERY_TARGET_SIDES,
    dataset_pks,
    ranking_run_rankings,
)
from annotator.labels.services.labelsets.builds import labelset_derive, labelset_from_campaign
from annotator.ranking.models.ranking import AnnotatorKind, Candidate, MachineAnnotator, RankingRun, RunStatus
from annotator.research.selectors.labelset_analyses import labelset_judged_at_k

MAX_UPLOAD_TOP_K = 1000
BATCH_SIZE = 5_000
CROWD_DIRECTIONS = ("i2t", "t2i")


def _uploaded_annotator(name: str) -> MachineAnnotator:
    """The annotator of that name; a new one of kind `uploaded` when there is none. An existing annotator
    (a model Vericap also runs) keeps its kind: the upload is that model's rankings."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise ApplicationError("Name the model (1 to 100 characters): its runs and scores are filed under it.")
    annotator, _ = MachineAnnotator.objects.get_or_create(name=name, defaults={"kind": AnnotatorKind.UPLOADED})
    return annotator


def ranking_run_upload(*, dataset: Dataset, name: str, rankings: dict, user=None, top_k: int = 100) -> RankingRun:
    """Store a model's rankings ({direction: {query source id: [target source ids, best first]}}) as a
    succeeded RankingRun of the annotator `name`, keeping the first `top_k` distinct known targets of
    each query. Unknown ids are skipped and counted in run.progress["upload"]; a file that matches no
    query of the dataset is refused. Not idempotent: each upload is a new run. No locks.
    """
    if not 1 <= int(top_k) <= MAX_UPLOAD_TOP_K:
        raise ApplicationError(f"top_k is between 1 and {MAX_UPLOAD_TOP_K}.")
    annotator = _uploaded_annotator(name)
    pks = dataset_pks(dataset_id=dataset.pk)
    report = {"queries": {}, "unknown_queries": 0, "unknown_targets": 0, "top_k": top_k}
    rows = []
    for direction, section in rankings.items():
        query_side, target_side = QUERY_TARGET_SIDES[direction]
        kept = 0
        for query, items in section.items():
            query_pk = pks[query_side].get(query)
            if query_pk is None:
                report["unknown_queries"] += 1
                continue
            targets = []
            for item in items:
                target_pk = pks[target_side].get(item)
                if target_pk is None:
                    report["unknown_targets"] += 1
                elif target_pk not in targets and not (direction in ("t2t", "i2i") and target_pk == query_pk):
                    targets.append(target_pk)
                if len(targets) == top_k:
                    break
            kept += 1
            rows.extend((direction, query_pk, target_pk, rank) for rank, target_pk in enumerate(targets, start=1))
        report["queries"][direction] = kept
    if not rows:
        raise ApplicationError(
            f"None of the rankings' queries are in dataset {dataset.name} (use its source ids).", status=400
        )
    now = timezone.now()
    with transaction.atomic():
        run = RankingRun.objects.create(
            annotator=annotator,
            dataset=dataset,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            status=RunStatus.SUCCEEDED,
            top_k=top_k,
            stage="uploaded",
            progress={"upload": report},
            started_at=now,
            finished_at=now,
        )
        Candidate.objects.bulk_create(
            (
                Candidate(run=run, direction=d, query_id=q, target_id=t, rank=rank, score=1.0 / rank)
                for d, q, t, rank in rows
            ),
            batch_size=BATCH_SIZE,
        )
    return run


def labelset_unjudged_campaign(
    *, label_set: LabelSet, run: RankingRun, k: int, owner, name: str = "", **options
) -> Campaign:
    """A draft campaign that asks the crowd about the pairs of `run`'s top k (i2t and t2i) that
    `label_set` has not judged, for the set's queries. The pairs go in as a run of their own (the same
    annotator, only those candidates, their ranks kept) so the campaign's provenance names the model.
    `options` are campaign options (redundancy, reward_cents, ...). The requester builds and launches it
    as any campaign. Raises ApplicationError when nothing is left to judge. Not idempotent.
    """
    from annotator.campaigns.services.lifecycle import campaign_create

    if run.dataset_id != label_set.dataset_id:
        raise ApplicationError("The ranking run and the label set are on different datasets.")
    if run.status != RunStatus.SUCCEEDED:
        raise ApplicationError(f"Run {run.pk} is {run.status}; only a succeeded run's rankings can be judged.")
    if not 1 <= k <= min(run.top_k, 100):
        raise ApplicationError(f"k is between 1 and {min(run.top_k, 100)} (the run keeps its top {run.top_k}).")
    judged = labelset_judged_at_k(label_set=label_set, rankings=ranking_run_rankings(run=run, max_rank=k), k=k)
    unjudged = {d: judged[d]["unjudged"] for d in CROWD_DIRECTIONS if judged.get(d, {}).get("unjudged")}
    if not unjudged:
        raise ApplicationError(f"{label_set.label} has judged every pair of run {run.pk}'s top {k}.", status=409)
    directions = sorted(unjudged)
    direction = CampaignDirection.BOTH if len(directions) == 2 else directions[0]
    with transaction.atomic():
        pending = RankingRun.objects.create(
            annotator=run.annotator,
            dataset=run.dataset,
            created_by=owner,
            status=RunStatus.SUCCEEDED,
            top_k=k,
            stage="unjudged",
            progress={"unjudged_of": {"run": run.pk, "label_set": label_set.pk, "k": k}},
            started_at=timezone.now(),
            finished_at=timezone.now(),
        )
        Candidate.objects.bulk_create(
            (
                Candidate(run=pending, direction=d, query_id=q, target_id=t, rank=rank, score=1.0 / rank)
                for d, pairs in unjudged.items()
                for q, t, rank in pairs
            ),
            batch_size=BATCH_SIZE,
        )
        options.setdefault("pool_depth", k)
        options.setdefault("gold_exclusion_depth", max(k, options["pool_depth"]))
        campaign = campaign_create(
            owner=owner,
            dataset=run.dataset,
            runs=[pending],
            name=name or f"{run.annotator.name}: top {k} unjudged by {label_set.label}",
            direction=direction,
            **options,
        )
    return campaign


def labelset_merge_campaign(
    *,
    label_set: LabelSet,
    campaign: Campaign,
    user=None,
    method: str | None = None,
    variant: str = ExportVariant.LENIENT,
) -> LabelSet:
    """The next version of `label_set`: its pairs and queries, plus the campaign's verified labels of pairs
    of those queries (a union on the set's own queries). The campaign's labels also become a crowd set of
    their own (named `<set>-crowd-<campaign id>`), the new version's second operand.
    """
    if campaign.dataset_id != label_set.dataset_id:
        raise ApplicationError("The campaign and the label set are on different datasets.")
    crowd = labelset_from_campaign(
        campaign=campaign, user=user, method=method, variant=variant, name=f"{label_set.name}-crowd-{campaign.pk}"
    )
    return labelset_derive(
        operands=[label_set, crowd],
        operation=LabelSetOperation.UNION,
        query_rule=QueryRule.FIRST,
        name=label_set.name,
        user=user,
        description=f"{label_set.label} with the crowd's labels of campaign {campaign.name!r} ({crowd.label})",
        public=label_set.public,
    )
