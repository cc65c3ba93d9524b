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
from django.utils import timezone
from PIL import Image as PILImage

from annotator.jobs import job_stalled
from annotator.models import RUN_TRANSITIONS, Candidate, Caption, Direction, Image, RankingRun, RunStatus
from annotator.models.state import check_transition
from workers.ranking.annotators import Annotator, load_annotator, resolve_device
from workers.ranking.cache import EmbeddingCache, concat, content_version
from workers.ranking.store import candidates_write
from workers.ranking.topk import SelfPivot, chunk_rows, chunked_topk, dense_block, sparse_block

logger = logging.getLogger(__name__)

DIRECTIONS = (Direction.I2T, Direction.T2I, Direction.T2T, Direction.I2I)
# Which id space each direction's queries and targets live in.
SPACES = {
    Direction.I2T: ("images", "texts"),
    Direction.T2I: ("texts", "images"),
    Direction.T2T: ("texts", "texts"),
    Direction.I2I: ("images", "images"),
}


class RunStopped(Exception):
    """The run was cancelled (or otherwise left RUNNING) while it worked: stop before the next unit."""


def ranking_settings() -> dict:
    return {
        "rows_per_chunk": int(getattr(settings, "RANKING_CHUNK_ROWS", 1024)),
        "block_bytes": int(getattr(settings, "RANKING_BLOCK_MB", 256)) * 1024 * 1024,
        "shard_size": int(getattr(settings, "RANKING_SHARD_SIZE", 4096)),
        "text_batch": int(getattr(settings, "RANKING_TEXT_BATCH", 256)),
        "image_batch": int(getattr(settings, "RANKING_IMAGE_BATCH", 64)),
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
        locked.chunks_done = sum(int(locked.progress.get(name, 0)) for name in ("texts", "images", *DIRECTIONS))
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
            "directions": directions,
            **{direction: -(-sizes[SPACES[direction][0]] // rows[direction]) for direction in directions},
        }
        with transaction.atomic():
            locked = self._locked()
            old = locked.progress.get("plan")
            if old and old.get("version") == plan["version"] and old.get("weights_hash") == plan["weights_hash"]:
                plan = old
            else:
                if old:  # the dataset or the weights changed under a half-done run: start over
                    logger.warning("Ranking run %s: dataset or weights changed, restarting", locked.pk)
                Candidate.objects.filter(run_id=locked.pk).delete()
                locked.progress = {"plan": plan}
            locked.chunks_total = plan["texts"] + plan["images"] + sum(int(plan.get(d, 0)) for d in DIRECTIONS)
            locked.progress["resumed_at"] = time.time()
            locked.progress["done_at_resume"] = sum(
                int(locked.progress.get(name, 0)) for name in ("texts", "images", *DIRECTIONS)
            )
            locked.save(update_fields=["progress", "chunks_total"])
            self.run = locked
        return plan

    # -- encoding ---------------------------------------------------------------------------------------
    def encode(
        self, *, what: str, items: list, encode_batch, batch_size: int, cache: EmbeddingCache, plan: dict, loader=None
    ):
        """Encode `items` shard by shard (cached), committing progress per shard; returns all embeddings."""
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
            if int(self.run.progress.get(what, 0)) < shard + 1:
                self._unit_done(what, shard + 1, f"encoding {what}")
        return concat(parts)

    # -- top-K ------------------------------------------------------------------------------------------
    def rank_direction(self, direction: str, *, queries, targets, query_ids, target_ids, pivot, plan) -> None:
        rows = plan["rows_per_chunk"][direction]
        sparse = scipy.sparse.issparse(queries)
        block = sparse_block(queries, targets, self.device) if sparse else dense_block(queries, targets)
        pivot_patch = None
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

        start_chunk = int(self.run.progress.get(direction, 0))
        for chunk, start, stop, values, indices in chunked_topk(
            n_queries=len(query_ids),
            block=block,
            k=self.run.top_k,
            rows_per_chunk=rows,
            start_chunk=start_chunk,
            patch=patch,
        ):
            chunk_queries = query_ids[start:stop]
            with transaction.atomic():
                locked = self._locked()
                if int(locked.progress.get(direction, 0)) > chunk:  # a concurrent delivery did it already
                    self.run = locked
                    continue
                Candidate.objects.filter(
                    run_id=locked.pk,
                    direction=direction,
                    query_id__gte=int(chunk_queries[0]),
                    query_id__lte=int(chunk_queries[-1]),
                ).delete()
                candidates_write(
                    run_id=locked.pk,
                    direction=direction,
                    query_ids=chunk_queries,
                    target_ids=target_ids[indices.numpy()],
                    scores=values.numpy(),
                )
                self._record(locked, direction, chunk + 1, f"ranking {direction}")
            if self.after_unit is not None:
                self.after_unit(direction, chunk + 1)

    # -- the whole run ----------------------------------------------------------------------------------
    def execute(self) -> None:
        run = self.run
        annotator_model = run.annotator
        base = load_annotator(
            kind=annotator_model.kind,
            checkpoint_path=annotator_model.checkpoint_path,
            config=annotator_model.config,
            device=self.device,
        )
        weights_hash = base.weights_hash()
        if annotator_model.weights_hash != weights_hash:
            type(annotator_model).objects.filter(pk=annotator_model.pk).update(weights_hash=weights_hash)
        corpus = corpus_load(run.dataset_id)
        self.annotator = base.for_corpus(corpus.texts)
        plan = self._plan(corpus, self.annotator)
        cache = EmbeddingCache(
            dataset_id=run.dataset_id, kind=annotator_model.kind, weights_hash=weights_hash, version=corpus.version
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
        spaces = {"texts": (texts, corpus.caption_ids), "images": (images, corpus.image_ids)}
        for direction in plan.get("directions", [Direction.I2T, Direction.T2I]):
            (queries, query_ids), (targets, target_ids) = (spaces[side] for side in SPACES[direction])
            self.rank_direction(
                direction,
                queries=queries,
                targets=targets,
                query_ids=query_ids,
                target_ids=target_ids,
                pivot=pivot,
                plan=plan,
            )
        with transaction.atomic():
            locked = self._locked()
            check_transition(
                transitions=RUN_TRANSITIONS, current=locked.status, target=RunStatus.SUCCEEDED, what="ranking run"
            )
            locked.status = RunStatus.SUCCEEDED
            locked.stage = "done"
            locked.finished_at = timezone.now()
            locked.save(update_fields=["status", "stage", "finished_at"])
            self.run = locked


def run_claim(run_id: int, *, device: str, task_id: str | None = None) -> RankingRun | None:
    """QUEUED -> RUNNING, or RUNNING again (a redelivered task of a killed worker resumes). None: nothing to do.

    Locks the run row; a finished, failed or cancelled run is left as it is (the task is idempotent). A
    running run belongs to the task that claimed it (`task_id`, kept in progress): a redelivery of that same
    task resumes it, another task (a duplicate the sweep queued while the message was only late) does
    nothing unless the run stalled (annotator.jobs.job_stalled); then it takes the run over and the
    old task, if it still lives, stops at its next unit. In-process calls (task_id None) always resume.
    """
    with transaction.atomic():
        run = RankingRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return None
        owner = (run.progress or {}).get("task_id")
        if (
            run.status == RunStatus.RUNNING
            and task_id is not None
            and owner not in (None, task_id)
            and not job_stalled(run)
        ):
            return None
        if task_id is not None:
            run.progress = {**(run.progress or {}), "task_id": task_id}
        if run.status == RunStatus.QUEUED:
            check_transition(
                transitions=RUN_TRANSITIONS, current=run.status, target=RunStatus.RUNNING, what="ranking run"
            )
            run.status = RunStatus.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.device = device
        run.error = ""
        run.save(update_fields=["status", "started_at", "device", "error", "progress"])
    return RankingRun.objects.select_related("annotator", "dataset").get(pk=run_id)


def run_fail(run_id: int, message: str) -> None:
    with transaction.atomic():
        run = RankingRun.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.RUNNING:
            return
        run.status = RunStatus.FAILED
        run.error = message[:2000]
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])


def ranking_run_execute(
    run_id: int, *, after_unit=None, options: dict | None = None, task_id: str | None = None
) -> str:
    """Execute (or resume) run `run_id`; returns its final status.

    Idempotent: a run that is not queued or running is left alone. An error marks the run failed with the
    message (a retry resumes from the last committed unit); `after_unit(key, done)` is a test hook called
    after each committed unit.
    """
    device = {**ranking_settings(), **(options or {})}["device"]
    run = run_claim(run_id, device=device, task_id=task_id)
    if run is None:
        found = RankingRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        return found or "missing"
    try:
        RunExecution(run, after_unit=after_unit, options=options, task_id=task_id).execute()
    except RunStopped as stopped:
        return str(stopped)
    except Exception as error:  # the person sees the message on the run page and can retry
        logger.exception("Ranking run %s failed", run_id)
        run_fail(run_id, f"{type(error).__name__}: {error}")
        return RunStatus.FAILED
    return RunStatus.SUCCEEDED
