"""Execute a re-ranking run: a cross-encoder scores the source run's top K of every query, i2t and t2i; or a
judge run: a vision-language judge scores every image-caption pair of a campaign (i2t: image -> its captions).

The run is planned like a ranking run (annotator.models.RankingShard, chunks of query rows in id order, no
encoding phase) so it is sharded over the gpu workers, resumable chunk by chunk, cancellable between
chunks and shows the same progress. A chunk reads the source's candidates of its queries (rank <= K),
scores each (image, caption) pair with the cross-encoder, and commits the pairs re-ordered by that score
with the chunk's progress (ShardExecution._commit_chunk). The stored score is the cross-encoder's.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from django.conf import settings
from django.db import transaction

from annotator.models import Candidate, Direction, Pair, PairKind, RankingRun, ShardStatus
from workers.ranking.cross import CrossEncoder, load_pair_scorer
from workers.ranking.pipeline import (
    SPACES,
    RunExecution,
    RunStopped,
    ShardExecution,
    corpus_load,
    load_pil,
    ranking_shard_execute,
    run_finish_if_complete,
    shards_dispatch,
    shards_pending,
    shards_reopen,
)

RERANKED = (Direction.I2T, Direction.T2I)


def rerank_settings() -> dict:
    return {
        "rows_per_chunk": int(getattr(settings, "RERANK_QUERIES_PER_CHUNK", 16)),
        "pair_batch": int(getattr(settings, "RERANK_PAIR_BATCH", 64)),
    }


@dataclass
class RerankShape:
    """What the planner reads of an annotator (workers.ranking.pipeline.RunExecution._plan): nothing to
    encode, the directions the source ranked, and a hash of the weights and of what is re-ranked."""

    directions: tuple[str, ...]
    digest: str
    reads_texts: bool = False
    pivot: bool = True  # no image embeddings either
    sparse: bool = False

    def weights_hash(self) -> str:
        return self.digest


class RerankExecution(RunExecution):
    def __init__(self, run: RankingRun, *, after_unit=None, options: dict | None = None, task_id=None):
        super().__init__(run, after_unit=after_unit, options={**rerank_settings(), **(options or {})}, task_id=task_id)

    def load(self) -> None:
        model = self.run.annotator
        cross = load_pair_scorer(
            kind=model.kind, checkpoint_path=model.checkpoint_path, config=model.config, device=self.device
        )
        weights_hash = cross.weights_hash()
        if model.weights_hash != weights_hash:
            type(model).objects.filter(pk=model.pk).update(weights_hash=weights_hash)
        source = self.run.reranks_id
        if self.run.judges_id is not None:  # a campaign's pairs, one list of captions per image
            directions, source = (Direction.I2T,), f"campaign-{self.run.judges_id}"
        else:
            directions = tuple(d for d in RERANKED if Candidate.objects.filter(run_id=source, direction=d).exists())
        digest = hashlib.sha256(f"{weights_hash}:{source}:{self.run.top_k}".encode()).hexdigest()
        self.corpus = corpus_load(self.run.dataset_id)
        self.annotator = RerankShape(directions=directions, digest=digest)

    def execute(self) -> str:
        self.load()
        self._plan(self.corpus, self.annotator)
        shards_reopen(self.run.pk)
        with transaction.atomic():
            locked = self._locked()
            locked.stage = "re-ranking"
            locked.save(update_fields=["stage"])
        if self.task_id is None or self.options.get("in_process"):
            for shard_id in shards_pending(self.run.pk, order="plan"):
                status = ranking_shard_execute(shard_id, after_unit=self.after_unit, options=self.options)
                if status != ShardStatus.DONE:
                    raise RunStopped(status)
        else:
            shards_dispatch(self.run.pk)
        return run_finish_if_complete(self.run.pk)


@dataclass
class Lookup:
    ids: dict  # space -> query ids in row order
    text_of: dict
    file_of: dict


_LOOKUPS: dict[tuple, Lookup] = {}


class RerankShardExecution(ShardExecution):
    def __init__(self, shard, *, after_unit=None, options: dict | None = None, task_id=None):
        super().__init__(
            shard, after_unit=after_unit, options={**rerank_settings(), **(options or {})}, task_id=task_id
        )

    def lookup(self, run: RankingRun, plan: dict) -> Lookup:
        key = (run.pk, plan["version"])
        if key not in _LOOKUPS:
            corpus = corpus_load(run.dataset_id)
            if corpus.version != plan["version"]:
                raise RunStopped("the dataset changed since the run was planned")
            _LOOKUPS.clear()  # one run's lookups per process
            _LOOKUPS[key] = Lookup(
                ids={"texts": corpus.caption_ids, "images": corpus.image_ids},
                text_of=dict(zip(corpus.caption_ids.tolist(), corpus.texts, strict=True)),
                file_of=dict(zip(corpus.image_ids.tolist(), corpus.image_files, strict=True)),
            )
        return _LOOKUPS[key]

    def execute(self) -> str:
        shard = self.shard
        run = RankingRun.objects.select_related("annotator").get(pk=shard.run_id)
        plan = run.progress["plan"]
        model = run.annotator
        cross = load_pair_scorer(
            kind=model.kind, checkpoint_path=model.checkpoint_path, config=model.config, device=self.device
        )
        lookup = self.lookup(run, plan)
        direction = shard.direction
        query_ids = lookup.ids[SPACES[direction][0]]
        rows = int(plan["rows_per_chunk"][direction])
        for chunk in range(shard.chunk_first + shard.chunks_done, shard.chunk_first + shard.chunks):
            ids = query_ids[chunk * rows : min(len(query_ids), (chunk + 1) * rows)]
            targets, values, indices = self.rescore(run, direction, ids, cross, lookup)
            self._commit_chunk(
                local=chunk - shard.chunk_first,
                direction=direction,
                query_ids=ids,
                target_ids=targets,
                values=values,
                indices=indices,
            )
            if self.after_unit is not None:
                self.after_unit(direction, chunk + 1)
        return self.finish()

    def rescore(self, run: RankingRun, direction: str, ids: np.ndarray, cross: CrossEncoder, lookup: Lookup):
        """The chunk's queries' source candidates re-ordered by the cross-encoder: (targets, [n, K] scores
        with -inf where a query has fewer candidates, [n, K] positions into targets)."""
        pairs = self.pairs(run, direction, ids)
        scores = self.score_pairs(direction, pairs, cross, lookup)
        row_of = {int(query): row for row, query in enumerate(ids.tolist())}
        values = torch.full((len(ids), run.top_k), float("-inf"))
        indices = torch.zeros((len(ids), run.top_k), dtype=torch.long)
        per_row: dict[int, list[int]] = {}
        for position, (query, _target) in enumerate(pairs):
            per_row.setdefault(row_of[query], []).append(position)
        for row, positions in per_row.items():
            ordered = sorted(positions, key=lambda p: -scores[p])  # stable: ties keep the source's order
            values[row, : len(ordered)] = torch.tensor([scores[p] for p in ordered])
            indices[row, : len(ordered)] = torch.tensor(ordered)
        targets = np.array([target for _query, target in pairs] or [0], dtype=np.int64)
        return targets, values, indices

    @staticmethod
    def pairs(run: RankingRun, direction: str, ids: np.ndarray) -> list[tuple[int, int]]:
        """(query, target) of the chunk's queries: the source run's top K, or the judged campaign's
        image-caption pairs (image -> caption, in caption id order)."""
        if run.judges_id is not None:
            return list(
                Pair.objects.filter(
                    campaign_id=run.judges_id,
                    kind=PairKind.IMAGE_CAPTION,
                    image_id__gte=int(ids[0]),
                    image_id__lte=int(ids[-1]),
                )
                .order_by("image_id", "caption_id")
                .values_list("image_id", "caption_id")
            )
        return list(
            Candidate.objects.filter(
                run_id=run.reranks_id,
                direction=direction,
                query_id__gte=int(ids[0]),
                query_id__lte=int(ids[-1]),
                rank__lte=run.top_k,
            )
            .order_by("query_id", "rank")
            .values_list("query_id", "target_id")
        )

    def score_pairs(self, direction: str, pairs: list, cross: CrossEncoder, lookup: Lookup) -> list[float]:
        if not pairs:
            return []
        captions = [(t if direction == Direction.I2T else q) for q, t in pairs]
        images = [(q if direction == Direction.I2T else t) for q, t in pairs]
        unique = sorted(set(images))
        with ThreadPoolExecutor(max_workers=4) as pool:
            pictures = dict(zip(unique, pool.map(lambda i: load_pil(lookup.file_of[i]), unique), strict=True))
        batch = max(1, int(self.options["pair_batch"]))
        scores: list[float] = []
        for start in range(0, len(pairs), batch):
            texts = [lookup.text_of[c] for c in captions[start : start + batch]]
            scores.extend(cross.score(texts, [pictures[i] for i in images[start : start + batch]]).tolist())
        return scores
