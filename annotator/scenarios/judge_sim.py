"""A synthetic vision-language judge for the crowd rehearsal: a judge run whose accuracy is known.

It scores every image-caption pair of a built campaign the way a judge run does (workers/ranking/rerank.py,
`RankingRun.judges`): P(yes) per pair, stored as i2t candidates ordered by it. Its verdict (P >= 0.5) is
right with probability `accuracy`, and its confidence is drawn uniformly on the side it chose, so a 0.5 judge
is a coin. The run joins the campaign's runs, so the machine prior reads it as it reads any run's scores
(annotator.quality.selectors.posterior.machine_features).
"""

from __future__ import annotations

import random
from collections import defaultdict

from django.utils import timezone

from annotator.models import Campaign, Candidate, MachineAnnotator, Pair, PairKind, RankingRun, RunStatus

SYNTHETIC_JUDGE = "synthetic-judge"


def synthetic_judge_run(*, campaign: Campaign, truth_of, accuracy: float, rng: random.Random) -> RankingRun:
    annotator, _ = MachineAnnotator.objects.get_or_create(name=SYNTHETIC_JUDGE, defaults={"kind": "vlm_judge"})
    by_image: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for pair in Pair.objects.filter(campaign=campaign, kind=PairKind.IMAGE_CAPTION).order_by("pk"):
        right = rng.random() < accuracy
        says_yes = truth_of(pair) if right else not truth_of(pair)
        confidence = rng.uniform(0.0, 0.5)
        by_image[pair.image_id].append((0.5 + confidence if says_yes else 0.5 - confidence, pair.caption_id))
    run = RankingRun.objects.create(
        dataset_id=campaign.dataset_id,
        annotator=annotator,
        judges=campaign,
        top_k=max((len(v) for v in by_image.values()), default=1),
        status=RunStatus.SUCCEEDED,
        stage="done",
        finished_at=timezone.now(),
    )
    rows = []
    for image, scored in by_image.items():
        for rank, (score, caption) in enumerate(sorted(scored, key=lambda s: (-s[0], s[1])), start=1):
            rows.append(Candidate(run=run, direction="i2t", query_id=image, target_id=caption, rank=rank, score=score))
    Candidate.objects.bulk_create(rows, batch_size=5000)
    campaign.runs.add(run)
    return run
