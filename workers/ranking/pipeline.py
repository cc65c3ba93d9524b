"""Execute one RankingRun: encode (cached), top-K in both directions by chunks, write Candidates.

Every unit of work (an encoded shard, a top-K chunk with its candidates) commits its own progress in
`RankingRun.progress`, so a killed worker resumes from the last committed unit: the plan (chunk sizes) is
fixed on the first execution and reused, candidates of the chunk about to be written are deleted first
(rows a crashed writer may have left), and a chunk already recorded as done is skipped. Cancellation is
checked under the run's row lock before every unit. Running a finished run again does nothing.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse
import torch
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from PIL import Image as PILImage

from annotator.models import (
    Candidate,
    Caption,
    Direction,
    Image,
    RankingRun,
    RankingShard,
    RunStatus,
    ShardStatus,
)
from annotator.ranking.services.lifecycle import (
    DIRECTIONS,
    SPACES,
    run_chunks_done,
    run_claim,
    run_fail,
    run_finish_if_complete,
    shard_claim,
    shard_fail,
    shard_finish,
    shard_release,
    shards_create,
    shards_dispatch,
    shards_pending,
    shards_reopen,
)
from workers.ranking.annotators import Annotator, load_annotator, resolve_device
from workers.ranking.cache import EmbeddingCache, concat, content_version
from workers.ranking.store import candidates_write
from workers.ranking.topk import SelfPivot, chunk_rows, chunked_topk, dense_block, sparse_block

logger = logging.getLogger(__name__)


class RunStopped(Exception):
    """The run was cancelled (or otherwise left RUNNING) while it worked: stop before the next unit."""


def ranking_settings() -> dict:
    return {
        "rows_per_chunk": int(getattr(settings, "RANKING_CHUNK_ROWS", 1024)),
        "block_bytes": int(getattr(settings, "RANKING_BLOCK_MB", 256)) * 1024 * 1024,
        "shard_size": int(getattr(settings, "RANKING_SHARD_SIZE", 4096)),
        "text_batch": int(getattr(settings, "RANKING_TEXT_BATCH", 256)),
        "image_batch": int(getattr(settings, "RANKING_IMAGE_BATCH", 64)),
        "chunks_per_shard": int(getattr(settings, "RANKING_CHUNKS_PER_SHARD", 4)),
        "torch_threads": int(getattr(settings, "RANKING_TORCH_THREADS", 0)),
        "device": resolve_device(getattr(settings, "RANKING_DEVICE", "auto")),
    }


@dataclass
class Corpus:
    """The dataset as the ranking sees it: rows in id order."""

    caption_ids: np.ndarray
    caption_owner_ids: np.ndarray
    texts: list[str]
    image_ids: np.ndarray
    image_files: list[str]
    owner_rows: np.ndarray = field(init=False)  # image row of each caption
    version: str = ""

    def __post_init__(self):
        row_of = {int(image_id): row for row, image_id in enumerate(self.image_ids.tolist())}
        self.owner_rows = np.array([row_of[int(i)] for i in self.caption_owner_ids.tolist()], dtype=np.int64)


def corpus_load(dataset_id: int) -> Corpus:
    captions = list(Caption.objects.filter(dataset_id=dataset_id).order_by("id").values_list("id", "image_id", "text"))
    images = list(Image.objects.filter(dataset_id=dataset_id).order_by("id").values_list("id", "content_hash", "file"))
    corpus = Corpus(
        caption_ids=np.array([c[0] for c in captions], dtype=np.int64),
        caption_owner_ids=np.array([c[1] for c in captions], dtype=np.int64),
        texts=[c[2] for c in captions],
        image_ids=np.array([i[0] for i in images], dtype=np.int64),
        image_files=[i[2] for i in images],
    )
    corpus.version = content_version(captions=captions, images=[(i[0], i[1]) for i in images])
    return corpus


def load_pil(name: str) -> PILImage.Image:
    """Open a stored image file by name (thread-safe: no database access)."""
    with default_storage.open(name, "rb") as handle:
        picture = PILImage.open(handle)
        picture.load()
    return picture.convert("RGB")


def prefetched(batches: list, loader, workers: int = 4):
    """Yield [loader(x) for x in batch] per batch, loading the next batch in threads while the caller encodes."""
    if not batches:
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = [pool.submit(loader, item) for item in batches[0]]
        for index in range(len(batches)):
            current = pending
            following = batches[index + 1] if index + 1 < len(batches) else []
            pending = [pool.submit(loader, item) for item in following]
            yield [future.result() for future in current]


def image_representations(*, texts_embedded, corpus: Corpus):
    """Pivot images: normalised sum of their captions' embeddings, with the norms the self-pivot patch needs."""
    n_images = len(corpus.image_ids)
    owner = torch.from_numpy(corpus.owner_rows)
    if scipy.sparse.issparse(texts_embedded):
        membership = scipy.sparse.csr_matrix(
            (np.ones(len(corpus.owner_rows), dtype=np.float32), (corpus.owner_rows, np.arange(len(corpus.owner_rows)))),
            shape=(n_images, len(corpus.owner_rows)),
        )
        sums = (membership @ texts_embedded).tocsr()
        norms = np.sqrt(np.asarray(sums.multiply(sums).sum(axis=1)).ravel()).astype(np.float32)
        scale = scipy.sparse.diags(np.where(norms > 0, 1.0 / np.maximum(norms, 1e-12), 0.0).astype(np.float32))
        images = (scale @ sums).tocsr().astype(np.float32)
        caption_sq = np.asarray(texts_embedded.multiply(texts_embedded).sum(axis=1)).ravel().astype(np.float32)
        norms_t, caption_sq_t = torch.from_numpy(norms), torch.from_numpy(caption_sq)
    else:
        sums = torch.zeros(n_images, texts_embedded.shape[1], dtype=torch.float32)
        sums.index_add_(0, owner, texts_embedded.float())
        norms_t = sums.norm(dim=1)
        images = sums / norms_t.clamp_min(1e-12).unsqueeze(1)
        caption_sq_t = (texts_embedded.float() ** 2).sum(dim=1)
    pivot = SelfPivot.build(owner=owner, image_sums_norms=norms_t, caption_sq_norms=caption_sq_t)
    return images, pivot


class RunExecution:
    """The coordinator of one run: claim, encode (cached), plan the shards, then hand them out.

    With a broker each shard becomes its own `ranking_shard_task` on the `gpu` queue, taken by whichever
    worker is free; in-process (eager Celery, the embedded default, tests) the shards run here in order.
    """

    def __init__(self, run: RankingRun, *, after_unit=None, options: dict | None = None, task_id: str | None = None):
        self.run = run
        self.task_id = task_id
        self.after_unit = after_unit
        self.options = {**ranking_settings(), **(options or {})}
        self.device = self.options["device"]

    # -- progress, under the run's row lock ------------------------------------------------------------
    def _locked(self) -> RankingRun:
        locked = RankingRun.objects.select_for_update().get(pk=self.run.pk)
        if locked.status != RunStatus.RUNNING:
            raise RunStopped(locked.status)
        if self.task_id and locked.progress.get("task_id") not in (None, self.task_id):
            # The sweep found this run silent for RUN_STALE_AFTER and another task took it over: stop here.
            raise RunStopped("superseded")
        return locked

    def _record(self, locked: RankingRun, key: str, value: int, stage: str) -> None:
        locked.progress[key] = value
        locked.stage = stage
        locked.chunks_done = run_chunks_done(locked)
        locked.progress["beat_at"] = time.time()  # the heartbeat run_claim and the sweep read
        locked.save(update_fields=["progress", "stage", "chunks_done"])
        self.run = locked

    def _unit_done(self, key: str, value: int, stage: str) -> None:
        with transaction.atomic():
            self._record(self._locked(), key, value, stage)
        if self.after_unit is not None:
            self.after_unit(key, value)

    # -- plan -------------------------------------------------------------------------------------------
    def _plan(self, corpus: Corpus, annotator: Annotator) -> dict:
        n_c, n_i = len(corpus.texts), len(corpus.image_ids)
        sizes = {"texts": n_c, "images": n_i}
        shard = self.options["shard_size"]
        directions = [d for d in DIRECTIONS if d in annotator.directions]
        rows = {
            direction: chunk_rows(
                n_targets=sizes[SPACES[direction][1]],
                chunk_size=self.options["rows_per_chunk"],
                block_bytes=self.options["block_bytes"],
            )
            for direction in directions
        }
        plan = {
            "version": corpus.version,
            "weights_hash": annotator.weights_hash(),
            "shard_size": shard,
            "texts": -(-n_c // shard) if annotator.reads_texts else 0,
            "images": 0 if annotator.pivot else -(-n_i // shard),
            "rows_per_chunk": rows,
            "chunks_per_shard": max(1, int(self.options["chunks_per_shard"])),
            "sizes": sizes,
            "directions": directions,
            **{direction: -(-sizes[SPACES[direction][0]] // rows[direction]) for direction in directions},
        }
        with transaction.atomic():
            locked = self._locked()
            old = locked.progress.get("plan")
            if (
                old
                and old.get("version") == plan["version"]
                and old.get("weights_hash") == plan["weights_hash"]
                and "chunks_per_shard" in old
            ):
                plan = old
            else:
                if old:  # the dataset or the weights changed under a half-done run (or it predates shards)
                    logger.warning("Ranking run %s: dataset or weights changed, restarting", locked.pk)
                Candidate.objects.filter(run_id=locked.pk).delete()
                RankingShard.objects.filter(run_id=locked.pk).delete()
                locked.progress = {"plan": plan, **({"task_id": self.task_id} if self.task_id else {})}
            shards_create(locked, plan)
            locked.chunks_total = plan["texts"] + plan["images"] + sum(int(plan.get(d, 0)) for d in DIRECTIONS)
            locked.progress["resumed_at"] = time.time()
            locked.chunks_done = run_chunks_done(locked)
            locked.progress["done_at_resume"] = locked.chunks_done
            locked.save(update_fields=["progress", "chunks_total", "chunks_done"])
            self.run = locked
        return plan

    # -- encoding ---------------------------------------------------------------------------------------
    def encode(
        self,
        *,
        what: str,
        items: list,
        encode_batch,
        batch_size: int,
        cache: EmbeddingCache,
        plan: dict,
        loader=None,
        record: bool = True,
    ):
        """Encode `items` shard by shard (cached), committing progress per shard; returns all embeddings.

        A shard worker calls it with `record=False`: it reads what the coordinator cached (and encodes a
        piece only if the cache lost it), recording nothing.
        """
        shard_size, n_shards = plan["shard_size"], plan[what]
        parts = []
        for shard in range(n_shards):
            part = cache.load(what, shard, shard_size, self.annotator.sparse and what == "texts")
            if part is None:
                chunk = items[shard * shard_size : (shard + 1) * shard_size]
                batches = [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
                loaded = prefetched(batches, loader) if loader else batches
                part = concat([encode_batch(batch) for batch in loaded])
                cache.save(what, shard, shard_size, part)
            parts.append(part)
            if record and int(self.run.progress.get(what, 0)) < shard + 1:
                self._unit_done(what, shard + 1, f"encoding {what}")
        return concat(parts)

    def prepare(self, plan: dict, *, record: bool) -> Prepared:
        """Everything a shard needs: embeddings of both spaces on the device, ids, the self-pivot."""
        run = self.run
        annotator_model = run.annotator
        corpus = self.corpus
        cache = EmbeddingCache(
            dataset_id=run.dataset_id,
            kind=annotator_model.kind,
            weights_hash=plan["weights_hash"],
            version=corpus.version,
        )
        texts = None
        if self.annotator.reads_texts:
            texts = self.encode(
                what="texts",
                items=corpus.texts,
                encode_batch=self.annotator.encode_texts,
                batch_size=self.options["text_batch"],
                cache=cache,
                plan=plan,
                record=record,
            )
        pivot = None
        if self.annotator.pivot:
            images, pivot = image_representations(texts_embedded=texts, corpus=corpus)
        else:
            images = self.encode(
                what="images",
                items=corpus.image_files,
                encode_batch=self.annotator.encode_images,
                batch_size=self.options["image_batch"],
                cache=cache,
                plan=plan,
                loader=load_pil,
                record=record,
            )
            if hasattr(self.annotator, "for_images"):
                images = self.annotator.for_images(images)
        if not scipy.sparse.issparse(images):
            images = images.to(self.device)
            texts = texts.to(self.device) if texts is not None else None
            if pivot is not None:
                pivot = SelfPivot.build(
                    owner=pivot.owner.to(self.device),
                    image_sums_norms=pivot.image_norms.to(self.device),
                    caption_sq_norms=pivot.caption_sq_norms.to(self.device),
                )
        return Prepared(
            spaces={"texts": (texts, corpus.caption_ids), "images": (images, corpus.image_ids)},
            pivot=pivot,
            device=self.device,
        )

    def load(self) -> None:
        """The annotator (loaded once per process) and the dataset as the ranking sees it."""
        annotator_model = self.run.annotator
        base = load_annotator(
            kind=annotator_model.kind,
            checkpoint_path=annotator_model.checkpoint_path,
            config=annotator_model.config,
            device=self.device,
        )
        weights_hash = base.weights_hash()
        if annotator_model.weights_hash != weights_hash:
            type(annotator_model).objects.filter(pk=annotator_model.pk).update(weights_hash=weights_hash)
        self.corpus = corpus_load(self.run.dataset_id)
        self.annotator = base.for_corpus(self.corpus.texts)

    # -- the whole run ----------------------------------------------------------------------------------
    def execute(self) -> str:
        """Encode, plan the shards and rank them (in-process) or hand them out (a broker); the run's status."""
        self.load()
        plan = self._plan(self.corpus, self.annotator)
        prepared = self.prepare(plan, record=True)
        _PREPARED.clear()
        _PREPARED[prepared_key(self.run, plan, self.device)] = prepared
        shards_reopen(self.run.pk)
        with transaction.atomic():
            locked = self._locked()
            locked.stage = "ranking"
            locked.save(update_fields=["stage"])
        if self.task_id is None or self.options.get("in_process"):
            for shard_id in shards_pending(self.run.pk, order="plan"):
                status = ranking_shard_execute(shard_id, after_unit=self.after_unit, options=self.options)
                if status != ShardStatus.DONE:
                    raise RunStopped(status)
        else:
            shards_dispatch(self.run.pk)
        return run_finish_if_complete(self.run.pk)


# -- shards -------------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    spaces: dict
    pivot: SelfPivot | None
    device: str


# One worker process keeps the embeddings of the run it last worked on, so its next shard of that run starts
# at once (keyed by the content version and weights, so a changed dataset never reuses them).
_PREPARED: dict[tuple, Prepared] = {}


def prepared_key(run: RankingRun, plan: dict, device: str) -> tuple:
    return (run.pk, run.annotator_id, plan["version"], plan["weights_hash"], device)


class ShardExecution:
    """Rank one claimed shard: its chunks in order, each committed with its candidates."""

    def __init__(self, shard: RankingShard, *, after_unit=None, options: dict | None = None, task_id=None):
        self.shard = shard
        self.task_id = task_id or ""
        self.after_unit = after_unit
        self.options = {**ranking_settings(), **(options or {})}
        self.device = self.options["device"]

    def prepared(self, run: RankingRun, plan: dict) -> Prepared:
        key = prepared_key(run, plan, self.device)
        if key not in _PREPARED:
            coordinator = RunExecution(run, options=self.options)
            coordinator.load()
            if coordinator.corpus.version != plan["version"]:
                raise RunStopped("the dataset changed since the run was planned")
            _PREPARED.clear()  # one run's embeddings per process
            _PREPARED[key] = coordinator.prepare(plan, record=False)
        return _PREPARED[key]

    def _commit_chunk(self, *, local: int, direction: str, query_ids, target_ids, values, indices) -> bool:
        """One chunk's candidates, the shard's progress and the run's count in one transaction."""
        with transaction.atomic():
            locked = RankingShard.objects.select_for_update().get(pk=self.shard.pk)
            if locked.status != ShardStatus.RUNNING or locked.task_id != self.task_id:
                raise RunStopped("superseded")  # the sweep handed this shard to another worker
            run_status = RankingRun.objects.filter(pk=locked.run_id).values_list("status", flat=True).first()
            if run_status != RunStatus.RUNNING:
                raise RunStopped(run_status)
            if locked.chunks_done > local:  # done already by an earlier delivery
                return False
            Candidate.objects.filter(
                run_id=locked.run_id,
                direction=direction,
                query_id__gte=int(query_ids[0]),
                query_id__lte=int(query_ids[-1]),
            ).delete()  # rows a crashed writer may have left
            candidates_write(
                run_id=locked.run_id,
                direction=direction,
                query_ids=query_ids,
                target_ids=target_ids[indices.numpy()],
                scores=values.numpy(),
            )
            locked.chunks_done = local + 1
            locked.beat_at = timezone.now()
            locked.save(update_fields=["chunks_done", "beat_at"])
            self.shard = locked
        # The run's counter (what the progress bar shows) in its own short statement, so workers never wait
        # on the run's row while another commits a chunk. The shard's chunks_done is the truth: a counter
        # missed by a crash here is recomputed from the shards on resume and when the run finishes.
        RankingRun.objects.filter(pk=self.shard.run_id).update(chunks_done=F("chunks_done") + 1)
        return True

    def execute(self) -> str:
        shard = self.shard
        run = RankingRun.objects.select_related("annotator", "dataset").get(pk=shard.run_id)
        plan = run.progress["plan"]
        prepared = self.prepared(run, plan)
        direction = shard.direction
        (queries, query_ids), (targets, target_ids) = (prepared.spaces[side] for side in SPACES[direction])
        sparse = scipy.sparse.issparse(queries)
        block = sparse_block(queries, targets, self.device) if sparse else dense_block(queries, targets)
        pivot, pivot_patch = prepared.pivot, None
        if pivot is not None and direction in (Direction.I2T, Direction.T2I):
            pivot_patch = pivot.patch_image_queries if direction == Direction.I2T else pivot.patch_caption_queries
        same_space = direction in (Direction.T2T, Direction.I2I)

        def patch(scores, start, stop):
            if pivot_patch is not None:
                pivot_patch(scores, start, stop)
            if same_space:  # a caption or an image is never its own candidate (CxC's diagonal zero)
                rows_here = torch.arange(stop - start, device=scores.device)
                scores[rows_here, rows_here + start] = float("-inf")
            if sparse:  # TF-IDF: no shared word is no evidence, never a candidate (also clears round-off)
                scores[scores <= 1e-6] = float("-inf")

        for chunk, start, stop, values, indices in chunked_topk(
            n_queries=len(query_ids),
            block=block,
            k=run.top_k,
            rows_per_chunk=int(plan["rows_per_chunk"][direction]),
            start_chunk=shard.chunk_first + shard.chunks_done,
            stop_chunk=shard.chunk_first + shard.chunks,
            patch=patch,
        ):
            self._commit_chunk(
                local=chunk - shard.chunk_first,
                direction=direction,
                query_ids=query_ids[start:stop],
                target_ids=target_ids,
                values=values,
                indices=indices,
            )
            if self.after_unit is not None:
                self.after_unit(direction, chunk + 1)
        return self.finish()

    def finish(self) -> str:
        """Every chunk committed: the shard is done, and the run too when it was the last one (shard_finish)."""
        finished = shard_finish(self.shard.pk, task_id=self.task_id)
        if finished is None:
            raise RunStopped("superseded")
        self.shard = finished
        return ShardStatus.DONE


def ranking_shard_execute(
    shard_id: int,
    *,
    after_unit=None,
    options: dict | None = None,
    task_id: str | None = None,
) -> str:
    """Rank shard `shard_id` (or resume it at its first uncommitted chunk); returns the shard's status.

    Idempotent: a done shard, a shard another live task holds, or one of a run that is not running is left
    alone. An error marks the shard and its run failed (the run's Retry resumes every unfinished shard),
    except a lost connection, which the task retries.
    """
    configure_threads({**ranking_settings(), **(options or {})})
    shard = shard_claim(shard_id, task_id=task_id)
    if shard is None:
        found = RankingShard.objects.filter(pk=shard_id).values_list("status", flat=True).first()
        return found or "missing"
    execution = ShardExecution
    if RankingRun.objects.filter(Q(reranks__isnull=False) | Q(judges__isnull=False), pk=shard.run_id).exists():
        from workers.ranking.rerank import RerankShardExecution as execution
    try:
        return execution(shard, after_unit=after_unit, options=options, task_id=task_id).execute()
    except RunStopped as stopped:
        shard_release(shard_id, task_id=task_id)
        return str(stopped)
    except (ConnectionError, TimeoutError):
        raise  # transient: the task retries with backoff and resumes the shard
    except Exception as error:
        logger.exception("Ranking shard %s failed", shard_id)
        shard_fail(shard_id, f"{type(error).__name__}: {error}")
        return ShardStatus.FAILED


def configure_threads(options: dict) -> None:
    """RANKING_TORCH_THREADS > 0 caps torch's threads in this process (one per worker process on a shared CPU)."""
    threads = int(options.get("torch_threads") or 0)
    if threads > 0 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def ranking_run_execute(
    run_id: int, *, after_unit=None, options: dict | None = None, task_id: str | None = None
) -> str:
    """Execute (or resume) run `run_id`; returns its status afterwards.

    In-process (task_id None, or options["in_process"]) the whole run happens here and the final status is
    returned. From a Celery task the run is encoded and planned here and its shards are sent to the `gpu`
    queue: it returns "running" and the worker that finishes the last shard marks the run succeeded.
    Idempotent: a run that is not queued or running is left alone. An error marks the run failed with the
    message (a retry resumes from the last committed unit); `after_unit(key, done)` is a test hook called
    after each committed unit.
    """
    settings_now = {**ranking_settings(), **(options or {})}
    configure_threads(settings_now)
    run = run_claim(run_id, device=settings_now["device"], task_id=task_id)
    if run is None:
        found = RankingRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        return found or "missing"
    execution = RunExecution
    if run.reranks_id is not None or run.judges_id is not None:  # pairs scored one by one (workers/ranking/rerank.py)
        from workers.ranking.rerank import RerankExecution as execution
    try:
        return execution(run, after_unit=after_unit, options=options, task_id=task_id).execute()
    except RunStopped as stopped:
        return str(stopped)
    except Exception as error:  # the person sees the message on the run page and can retry
        logger.exception("Ranking run %s failed", run_id)
        run_fail(run_id, f"{type(error).__name__}: {error}")
        return RunStatus.FAILED
