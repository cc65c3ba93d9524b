"""Coarse captions (MSCOCO-FG, Sec. 3.2.1): a caption is coarse when the machine annotators do not rank its
own image first among the (enlarged) gallery; it then fits other images as well as its own.

The gallery is the dataset's images, which after a gallery enlargement's add step include the added pool
images; a ranking run made after the add ranks them like any other image. Pool images the crowd verified
as described by a caption (the enlargement's verification campaign) confuse it whatever the rankings say.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.core.files.storage import default_storage
from django.db.models import F

from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.finegrained.models.pools import EnlargementStatus, GalleryAddition
from annotator.labels.models.labels import Label
from annotator.ranking.models.ranking import AnnotatorKind, Candidate, RankingRun, RunStatus

RULES = ("all", "majority", "any")
# Runs that are not a model's own judgement of caption-image similarity.
NOT_ANNOTATORS = (AnnotatorKind.EXTERNAL, AnnotatorKind.ENLARGEMENT)


@dataclass
class CoarseCaption:
    caption_id: int
    source_id: str
    text: str
    image_id: int  # its own image (pk)
    image_source_id: str
    own_ranks: dict[int, int | None]  # run pk -> rank of its own image (None: not in that run's top K)
    confusers: list[dict] = field(default_factory=list)  # images ranked above its own, best first
    verified_confusers: list[int] = field(default_factory=list)  # added images the crowd said it describes

    def as_dict(self) -> dict:
        return {
            "caption_id": self.caption_id,
            "source_id": self.source_id,
            "text": self.text,
            "image_id": self.image_id,
            "image_source_id": self.image_source_id,
            "own_ranks": {str(run): rank for run, rank in self.own_ranks.items()},
            "confusers": self.confusers,
            "verified_confusers": self.verified_confusers,
        }


def coarse_runs(*, dataset: Dataset, run_ids: list[int] | None = None) -> list[RankingRun]:
    """The runs that judge: the given ones (each a succeeded run on `dataset`), else the latest succeeded
    run of every model annotator on it."""
    succeeded = RankingRun.objects.filter(dataset=dataset, status=RunStatus.SUCCEEDED).select_related("annotator")
    if run_ids:
        runs = list(succeeded.filter(pk__in=run_ids))
        missing = sorted(set(run_ids) - {run.pk for run in runs})
        if missing:
            raise ApplicationError(f"No succeeded ranking run {missing[0]} on dataset {dataset.name}.", status=404)
        return runs
    latest: dict[int, RankingRun] = {}
    for run in succeeded.exclude(annotator__kind__in=NOT_ANNOTATORS).order_by("-finished_at", "-pk"):
        latest.setdefault(run.annotator_id, run)
    return sorted(latest.values(), key=lambda run: run.pk)


def _verified_confusers(dataset: Dataset) -> dict[int, set[int]]:
    """caption pk -> added images the verification campaigns of the dataset's enlargements found positive."""
    campaigns = list(
        GalleryAddition.objects.filter(enlargement__dataset=dataset, enlargement__status=EnlargementStatus.ADDED)
        .exclude(enlargement__verification=None)
        .values_list("enlargement__verification_id", flat=True)
        .distinct()
    )
    added = set(
        GalleryAddition.objects.filter(
            enlargement__dataset=dataset, enlargement__status=EnlargementStatus.ADDED
        ).values_list("image_id", flat=True)
    )
    found: dict[int, set[int]] = defaultdict(set)
    rows = Label.objects.filter(
        pair__campaign_id__in=campaigns, is_positive=True, method=F("pair__campaign__label_model")
    ).values_list("pair__caption_id", "pair__image_id")
    for caption_id, image_id in rows:
        if image_id in added:
            found[caption_id].add(image_id)
    return found


def coarse_captions(
    dataset: Dataset,
    *,
    run_ids: list[int] | None = None,
    rule: str = "majority",
    caption_ids: list[int] | None = None,
    max_confusers: int = 5,
    use_verified: bool = True,
    within: int = 1,
) -> list[CoarseCaption]:
    """The dataset's coarse captions, each with the images it confuses with its own (best first).

    A run "ranks its own image first" when the caption's own image is rank 1 of its caption-to-image list
    (the paper's test, with CLIP); `within` > 1 loosens it to "within its top `within`", for annotators
    that see the gallery less sharply than CLIP (a pivot annotator sees an image only through its other
    captions, so even a fine caption's own image often comes second or third).
    `rule` says how many runs must fail to do so: `all`, a strict `majority`, or `any`. A caption whose own
    image no run ranks (it is in no run's caption-to-image queries) is left out, not called coarse. With
    `use_verified`, a caption the crowd verified to describe an added pool image is coarse whatever the
    rule. Reads only; no locks. `caption_ids` limits the answer to those captions.
    """
    if within < 1:
        raise ApplicationError("within is at least 1.")
    if rule not in RULES:
        raise ApplicationError(f"rule is one of {', '.join(RULES)}.")
    runs = coarse_runs(dataset=dataset, run_ids=run_ids)
    own = dict(Caption.objects.filter(dataset=dataset).values_list("pk", "image_id"))
    wanted = set(caption_ids) if caption_ids is not None else None
    ranks: dict[int, dict[int, int | None]] = defaultdict(dict)
    above: dict[int, dict[int, list]] = defaultdict(lambda: defaultdict(lambda: [0, 10**9]))
    for run in runs:
        lists: dict[int, list[tuple[int, int]]] = defaultdict(list)
        rows = Candidate.objects.filter(run=run, direction="t2i").values_list("query_id", "target_id", "rank")
        if wanted is not None:
            rows = rows.filter(query_id__in=wanted)
        for query_id, target_id, rank in rows.iterator(chunk_size=20_000):
            if query_id in own:
                lists[query_id].append((rank, target_id))
        for caption_id, items in lists.items():
            items.sort()
            own_image = own[caption_id]
            rank_of_own = next((rank for rank, target in items if target == own_image), None)
            ranks[caption_id][run.pk] = rank_of_own
            for rank, target in items:
                if rank_of_own is not None and rank >= rank_of_own:
                    break
                entry = above[caption_id][target]
                entry[0] += 1
                entry[1] = min(entry[1], rank)
    verified = _verified_confusers(dataset) if use_verified else {}
    coarse_ids = []
    for caption_id in set(ranks) | set(verified):
        if wanted is not None and caption_id not in wanted:
            continue
        run_ranks = ranks.get(caption_id, {})
        failures = sum(1 for rank in run_ranks.values() if rank is None or rank > within)
        judged = len(run_ranks)
        by_rule = judged > 0 and (
            (rule == "all" and failures == judged)
            or (rule == "majority" and failures * 2 > judged)
            or (rule == "any" and failures > 0)
        )
        if by_rule or verified.get(caption_id):
            coarse_ids.append(caption_id)
    captions = Caption.objects.in_bulk(coarse_ids)
    image_ids = {captions[pk].image_id for pk in coarse_ids}
    for pk in coarse_ids:
        image_ids |= set(above[pk]) | verified.get(pk, set())
    images = {
        row["pk"]: row for row in Image.objects.filter(pk__in=image_ids).values("pk", "source_id", "thumbnail", "file")
    }
    result = []
    for pk in sorted(coarse_ids):
        caption = captions[pk]
        ordered = sorted(above[pk].items(), key=lambda item: (-item[1][0], item[1][1], item[0]))[:max_confusers]
        result.append(
            CoarseCaption(
                caption_id=pk,
                source_id=caption.source_id,
                text=caption.text,
                image_id=caption.image_id,
                image_source_id=images[caption.image_id]["source_id"],
                own_ranks=dict(ranks.get(pk, {})),
                confusers=[
                    {
                        "image_id": image_id,
                        "source_id": images[image_id]["source_id"],
                        "thumbnail": default_storage.url(images[image_id]["thumbnail"] or images[image_id]["file"]),
                        "runs_ranking_it_higher": votes,
                        "best_rank": best,
                    }
                    for image_id, (votes, best) in ordered
                ],
                verified_confusers=sorted(verified.get(pk, set())),
            )
        )
    return result
