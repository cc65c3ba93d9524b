"""Benchmark: the ranking pipeline against its bare parts, each ratio measured in the same run.

1. encode: the pipeline's encode phase (batches, embedding cache in storage, a committed progress row per
   shard) over calling the bare encoder (`encode_texts`) on the same batches; minilm_pivot on captions.
   Throughput ratio, goal >= 0.9.
2. top-K: the pipeline's top-K phase (chunked products, self-pivot patch, torch.topk with exact ties,
   both directions) over the bare chunked matrix products of the same size. Goal >= 0.7.
3. writes: the pipeline's candidate writes into PostgreSQL (per chunk: transaction, run row lock, delete of
   the chunk's range, COPY, progress) over one plain COPY of the same rows, pre-formatted. Goal >= 0.5.
4. scale: synthetic normalised embeddings at COCO-test size (5,000 images x 25,000 captions) and at ten
   times that (50,000 x 250,000): wall time of the top-K phase in both directions plus turning the results
   into COPY rows, and the peak resident memory of the process (goal < 2 GB), each in its own subprocess.

Each timing is the best of several interleaved repetitions (the machine is shared). It runs on CUDA when
present (RANKING_DEVICE=auto), else on the CPU. It creates and drops its own PostgreSQL database
`bench_ranking` (BENCH_DATABASE_NAME); DATABASE_URL picks the server.

    .venv/bin/python bench/ranking.py                 # everything (the 10x scale takes minutes on a CPU)
    .venv/bin/python bench/ranking.py --skip-large    # without 50,000 x 250,000
Results are also written to bench/out/ranking.json.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
os.environ.setdefault("MEDIA_ROOT", tempfile.mkdtemp(prefix="bench-ranking-media-"))

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402

DIM = 384
TOP_K = 25


def best_of(functions: dict, repeats: int) -> dict:
    """Interleave the functions `repeats` times (ABBA order against drift); the best (lowest) time of each."""
    best = {name: float("inf") for name in functions}
    for repeat in range(repeats):
        items = list(functions.items())
        for name, function in items if repeat % 2 == 0 else items[::-1]:
            start = time.perf_counter()
            measured = function()  # a function that must clean up first returns its own timing
            elapsed = measured if isinstance(measured, float) else time.perf_counter() - start
            best[name] = min(best[name], elapsed)
    return best


def new_run(dataset, annotator):
    from annotator.models import RankingRun, RunStatus

    return RankingRun.objects.create(dataset=dataset, annotator=annotator, status=RunStatus.RUNNING, top_k=TOP_K)


def bench_encode(texts: list[str], repeats: int) -> dict:
    from annotator.models import Dataset
    from annotator.ranking.services.annotators import annotator_register
    from workers.ranking.annotators import load_annotator
    from workers.ranking.cache import EmbeddingCache
    from workers.ranking.pipeline import RunExecution, ranking_settings

    options = ranking_settings()
    batch, shard = options["text_batch"], options["shard_size"]
    dataset = Dataset.objects.create(name="bench-encode", status="ready")
    annotator_model = annotator_register(name="bench-minilm", kind="minilm_pivot")
    encoder = load_annotator(kind="minilm_pivot", device=options["device"])
    batches = [texts[i : i + batch] for i in range(0, len(texts), batch)]
    encoder.encode_texts(batches[0])  # warm-up (first call allocates)
    plan = {"shard_size": shard, "texts": -(-len(texts) // shard)}
    counter = iter(range(10**6))

    def bare():
        torch.cat([encoder.encode_texts(b) for b in batches])

    inside = {"encoder": 0.0, "total": 0.0}

    def timed_encoder(batch_texts):
        start = time.perf_counter()
        try:
            return encoder.encode_texts(batch_texts)
        finally:
            inside["encoder"] += time.perf_counter() - start

    def pipeline():
        start = time.perf_counter()
        execution = RunExecution(new_run(dataset, annotator_model), options=options)
        execution.annotator = encoder
        cache = EmbeddingCache(
            dataset_id=dataset.pk, kind="minilm_pivot", weights_hash="bench", version=f"v{next(counter)}"
        )
        execution.encode(
            what="texts", items=texts, encode_batch=timed_encoder, batch_size=batch, cache=cache, plan=plan
        )
        inside["total"] += time.perf_counter() - start

    times = best_of({"bare": bare, "pipeline": pipeline}, repeats)
    return {
        "texts": len(texts),
        "batch": batch,
        "bare_texts_per_s": len(texts) / times["bare"],
        "pipeline_texts_per_s": len(texts) / times["pipeline"],
        "ratio": times["bare"] / times["pipeline"],
        # The same question without the shared machine's noise: of the pipeline's own wall time, the share
        # spent inside the encoder calls (the rest is batching, cache writes and progress commits).
        "encoder_share_of_pipeline": inside["encoder"] / inside["total"],
    }


def synthetic(n_images: int, n_captions: int, device: str, seed: int = 0):
    """Normalised random embeddings with COCO's shape: each image owns n_captions / n_images captions."""
    generator = torch.Generator().manual_seed(seed)
    captions = torch.nn.functional.normalize(torch.randn(n_captions, DIM, generator=generator), dim=1)
    owner = torch.arange(n_captions) * n_images // n_captions
    return captions.to(device), owner


def topk_phase(captions, owner, n_images, *, rows_per_chunk, block_bytes, collect=None):
    """The pipeline's top-K phase for a pivot annotator, both directions (what RunExecution.rank_direction runs)."""
    from workers.ranking.pipeline import image_representations
    from workers.ranking.topk import SelfPivot, chunk_rows, chunked_topk, dense_block

    class Corpus:
        owner_rows = owner.numpy()
        image_ids = np.arange(n_images)

    images, pivot = image_representations(texts_embedded=captions.cpu(), corpus=Corpus)
    device = captions.device
    images = images.to(device)
    pivot = SelfPivot.build(
        owner=pivot.owner.to(device),
        image_sums_norms=pivot.image_norms.to(device),
        caption_sq_norms=pivot.caption_sq_norms.to(device),
    )
    for queries, targets, patch in (
        (images, captions, pivot.patch_image_queries),
        (captions, images, pivot.patch_caption_queries),
    ):
        rows = chunk_rows(n_targets=targets.shape[0], chunk_size=rows_per_chunk, block_bytes=block_bytes)
        for _chunk, start, stop, values, indices in chunked_topk(
            n_queries=queries.shape[0], block=dense_block(queries, targets), k=TOP_K, rows_per_chunk=rows, patch=patch
        ):
            if collect is not None:
                collect(start, stop, values, indices)


def bare_products(captions, owner, n_images, *, rows_per_chunk, block_bytes):
    """The same chunked matrix products, nothing else."""
    from workers.ranking.topk import chunk_rows

    sums = torch.zeros(n_images, DIM, device=captions.device).index_add_(0, owner.to(captions.device), captions)
    images = sums / sums.norm(dim=1, keepdim=True)
    for queries, targets in ((images, captions), (captions, images)):
        rows = chunk_rows(n_targets=targets.shape[0], chunk_size=rows_per_chunk, block_bytes=block_bytes)
        targets_t = targets.t()
        for start in range(0, queries.shape[0], rows):
            block = queries[start : start + rows] @ targets_t
            del block
    if captions.is_cuda:
        torch.cuda.synchronize()


def bench_topk(n_images: int, n_captions: int, repeats: int) -> dict:
    from workers.ranking.pipeline import ranking_settings

    options = ranking_settings()
    captions, owner = synthetic(n_images, n_captions, options["device"])
    kwargs = {"rows_per_chunk": options["rows_per_chunk"], "block_bytes": options["block_bytes"]}
    times = best_of(
        {
            "bare": lambda: bare_products(captions, owner, n_images, **kwargs),
            "pipeline": lambda: topk_phase(captions, owner, n_images, **kwargs),
        },
        repeats,
    )
    return {
        "images": n_images,
        "captions": n_captions,
        "dim": DIM,
        "bare_s": times["bare"],
        "pipeline_s": times["pipeline"],
        "ratio": times["bare"] / times["pipeline"],
    }


def bench_writes(n_queries: int, n_targets: int, repeats: int) -> dict:
    from annotator.models import Candidate, Dataset, MachineAnnotator, RankingShard
    from workers.ranking import store
    from workers.ranking.pipeline import ShardExecution, ranking_settings

    if connection.vendor != "postgresql":
        return {"skipped": f"needs PostgreSQL, database is {connection.vendor}"}
    rng = np.random.default_rng(0)
    rows_per_chunk = ranking_settings()["rows_per_chunk"]
    query_ids = np.arange(1, n_queries + 1, dtype=np.int64)
    targets = np.stack([rng.choice(n_targets, TOP_K, replace=False) for _ in range(n_queries)]).astype(np.int64) + 1
    scores = -np.sort(-rng.random((n_queries, TOP_K)).astype(np.float32), axis=1)
    dataset = Dataset.objects.create(name="bench-writes", status="ready")
    annotator = MachineAnnotator.objects.create(name="bench-writes", kind="minilm_pivot")

    def pipeline() -> float:
        Candidate.objects.exclude(run_id=plain_run.pk).delete()  # untimed: the previous repetition's rows
        began = time.perf_counter()
        run = new_run(dataset, annotator)
        n_chunks = -(-n_queries // rows_per_chunk)
        shard = RankingShard.objects.create(
            run=run, direction="t2i", start=0, stop=n_queries, chunk_first=0, chunks=n_chunks, status="running"
        )
        execution = ShardExecution(shard)
        identity = np.arange(n_targets + 1, dtype=np.int64)
        for start in range(0, n_queries, rows_per_chunk):
            chunk = slice(start, start + rows_per_chunk)
            execution._commit_chunk(  # what a shard does per chunk: its own transaction and progress
                local=start // rows_per_chunk,
                direction="t2i",
                query_ids=query_ids[chunk],
                target_ids=identity,
                values=torch.from_numpy(scores[chunk]),
                indices=torch.from_numpy(targets[chunk]),
            )
        return time.perf_counter() - began

    plain_run = new_run(dataset, annotator)
    q, t, r, s = store.candidate_arrays(query_ids=query_ids, target_ids=targets, scores=scores)
    text = store.copy_buffer(run_id=plain_run.pk, direction="t2i", queries=q, targets=t, ranks=r, scores=s).getvalue()

    def plain() -> float:
        import io

        Candidate.objects.filter(run_id=plain_run.pk).delete()  # untimed: the previous repetition's rows
        began = time.perf_counter()
        with transaction.atomic():
            store.copy_rows(io.StringIO(text))
        return time.perf_counter() - began

    times = best_of({"plain_copy": plain, "pipeline": pipeline}, repeats)
    return {
        "rows": int(len(q)),
        "chunk_rows": rows_per_chunk,
        "plain_copy_s": times["plain_copy"],
        "pipeline_s": times["pipeline"],
        "ratio": times["plain_copy"] / times["pipeline"],
    }


def scale_child(n_images: int, n_captions: int) -> None:
    """In a fresh process: top-K both directions + COPY rows for the results; print wall time and peak RSS."""
    from workers.ranking import store
    from workers.ranking.pipeline import ranking_settings

    options = ranking_settings()
    captions, owner = synthetic(n_images, n_captions, options["device"], seed=1)
    rows = {"n": 0}

    def collect(start, stop, values, indices):
        q, t, r, s = store.candidate_arrays(
            query_ids=np.arange(start, stop), target_ids=indices.numpy(), scores=values.numpy()
        )
        rows["n"] += len(
            store.copy_buffer(run_id=1, direction="t2i", queries=q, targets=t, ranks=r, scores=s)
            .getvalue()
            .splitlines()
        )

    start = time.perf_counter()
    topk_phase(
        captions,
        owner,
        n_images,
        rows_per_chunk=options["rows_per_chunk"],
        block_bytes=options["block_bytes"],
        collect=collect,
    )
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    if torch.cuda.is_available():
        peak_gpu = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak_gpu = None
    print(
        json.dumps(
            {
                "images": n_images,
                "captions": n_captions,
                "dim": DIM,
                "wall_s": wall,
                "peak_rss_mb": peak,
                "peak_gpu_mb": peak_gpu,
                "candidate_rows": rows["n"],
                "device": options["device"],
            }
        )
    )


def bench_scale(n_images: int, n_captions: int) -> dict:
    output = subprocess.run(
        [sys.executable, __file__, "--scale-child", str(n_images), str(n_captions)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "BENCH_CHILD": "1"},
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def sharded_dataset(n_images: int, n_captions: int):
    """A READY dataset of n_images x n_captions (COCO's 5 captions per image) whose minilm_pivot embeddings are
    already in the embedding cache (normalised random vectors, as in `scale`): the run's encode step is a cache
    hit, so what is measured is the part the shards split (top-K and candidate writes)."""
    from annotator.models import Caption, Dataset, Image
    from annotator.ranking.services.annotators import annotator_register
    from workers.ranking.annotators import load_annotator
    from workers.ranking.cache import EmbeddingCache
    from workers.ranking.pipeline import corpus_load, ranking_settings

    dataset = Dataset.objects.create(name=f"bench-sharded-{n_images}", status="ready")
    images = Image.objects.bulk_create(
        Image(
            dataset=dataset,
            source_id=f"i{i}",
            file_name=f"{i}.jpg",
            file=f"images/{i}.jpg",
            content_hash=f"{i:064x}",
            width=64,
            height=64,
        )
        for i in range(n_images)
    )
    rng = np.random.default_rng(2)
    words = "a the dog cat bus red small big two on in near beach street snow grass ball kite car tree".split()
    Caption.objects.bulk_create(
        (
            Caption(
                dataset=dataset,
                image=images[c * n_images // n_captions],
                source_id=f"c{c}",
                text=" ".join(rng.choice(words, size=6)),
            )
            for c in range(n_captions)
        ),
        batch_size=5000,
    )
    annotator = annotator_register(name="bench-sharded-minilm", kind="minilm_pivot")
    weights = load_annotator(kind="minilm_pivot", device="cpu").weights_hash()
    corpus = corpus_load(dataset.pk)
    cache = EmbeddingCache(dataset_id=dataset.pk, kind="minilm_pivot", weights_hash=weights, version=corpus.version)
    captions, _owner = synthetic(n_images, n_captions, "cpu", seed=3)
    shard = ranking_settings()["shard_size"]
    for index in range(-(-n_captions // shard)):
        cache.save("texts", index, shard, captions[index * shard : (index + 1) * shard])
    return dataset, annotator


def database_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def start_workers(count: int, log_dir: Path) -> list:
    """`count` real `celery -A config worker -Q gpu --pool=solo` processes on this database and broker, one
    torch thread each; returns once every one of them is ready."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "RANKING_TORCH_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "RANKING_PRELOAD": "minilm_pivot",  # as a deployed worker: torch and the model loaded at start
    }
    workers = []
    for number in range(count):
        log_path = log_dir / f"worker-{count}-{number}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "gpu", "--pool=solo"]
            + ["-n", f"bench{count}-{number}@%h", "--without-heartbeat", "--without-gossip", "--without-mingle"]
            + ["-l", "INFO"],
            cwd=ROOT,
            env=env,
            stdout=open(log_path, "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        workers.append((process, log_path))
    deadline = time.monotonic() + 120
    while not all("ranking preloaded" in path.read_text() for _p, path in workers):
        if time.monotonic() > deadline or any(p.poll() is not None for p, _path in workers):
            stop_workers(workers)
            raise RuntimeError("a worker did not start: " + "; ".join(path.read_text()[-500:] for _p, path in workers))
        time.sleep(0.2)
    return workers


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_workers(workers: list) -> None:
    import signal

    for process, _path in workers:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process, _path in workers:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def sharded_run(dataset, annotator, workers: int, log_dir: Path) -> dict:
    """One run of `annotator` over `dataset` by `workers` worker processes: wall time from start to succeeded."""
    from celery import current_app

    from annotator.models import RankingRun, RankingShard
    from annotator.ranking.services.runs import ranking_run_start

    with current_app.connection_for_write() as conn:  # no stale message of an earlier run in our queue
        conn.default_channel.queue_purge("gpu")
    processes = start_workers(workers, log_dir)
    try:
        cpu_before = [cpu_seconds(process.pid) for process, _path in processes]
        began = time.perf_counter()
        run = ranking_run_start(dataset=dataset, annotator=annotator, top_k=TOP_K)
        while run.status in ("queued", "running"):
            time.sleep(0.1)
            run.refresh_from_db()
        wall = time.perf_counter() - began
        cpu = [
            cpu_seconds(process.pid) - before for (process, _path), before in zip(processes, cpu_before, strict=True)
        ]
    finally:
        stop_workers(processes)
    if run.status != "succeeded":
        raise RuntimeError(f"run {run.pk} {run.status}: {run.error}")
    shards = RankingShard.objects.filter(run=run)
    first = run.started_at
    shard_start = min(shards.values_list("started_at", flat=True))
    return {
        "workers": workers,
        "run": run.pk,
        "wall_s": wall,
        "worker_cpu_s": cpu,  # CPU the worker processes used (PostgreSQL's share of the COPYs not included)
        "coordinator_s": (shard_start - first).total_seconds(),  # claim, cached encode, plan, dispatch
        "shards": shards.count(),
        "by_worker": sorted(
            shards.values("worker").annotate(n=models_count("pk")).values_list("n", flat=True), reverse=True
        ),
        "rows": RankingRun.objects.get(pk=run.pk).candidates.count(),
    }


def models_count(field):
    from django.db.models import Count

    return Count(field)


def same_candidates(run_a: int, run_b: int) -> int:
    """Rows in one run's candidates and not the other's (both ways; 0 = identical, scores bit for bit)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*) FROM (
              (SELECT direction, query_id, target_id, rank, score FROM annotator_candidate WHERE run_id = %s
               EXCEPT ALL
               SELECT direction, query_id, target_id, rank, score FROM annotator_candidate WHERE run_id = %s)
              UNION ALL
              (SELECT direction, query_id, target_id, rank, score FROM annotator_candidate WHERE run_id = %s
               EXCEPT ALL
               SELECT direction, query_id, target_id, rank, score FROM annotator_candidate WHERE run_id = %s)
            ) AS difference
            """,
            [run_a, run_b, run_b, run_a],
        )
        return cursor.fetchone()[0]


def encode_once_or_per_shard(dataset, annotator, shards: int) -> dict:
    """What a worker pays to get a run's embeddings: load them from the cache (encode once per run), or
    encode the captions itself (encode per shard), from the bare encoder's measured throughput."""
    from annotator.models import RankingRun, RunStatus
    from workers.ranking.annotators import load_annotator
    from workers.ranking.pipeline import RunExecution

    run = RankingRun.objects.filter(dataset=dataset, annotator=annotator, status=RunStatus.SUCCEEDED).first()
    began = time.perf_counter()
    execution = RunExecution(run)
    execution.load()
    execution.prepare(run.progress["plan"], record=False)
    load_s = time.perf_counter() - began
    encoder = load_annotator(kind="minilm_pivot", device="cpu")
    texts = list(dataset.captions.order_by("id").values_list("text", flat=True)[:512])
    encoder.encode_texts(texts[:64])
    began = time.perf_counter()
    for start in range(0, len(texts), 256):
        encoder.encode_texts(texts[start : start + 256])
    rate = len(texts) / (time.perf_counter() - began)
    n_captions = dataset.captions.count()
    return {
        "load_cached_s": load_s,
        "encoder_texts_per_s": rate,
        "encode_all_s": n_captions / rate,
        "per_shard_total_s": shards * n_captions / rate,
    }


def bench_sharded(n_images: int, n_captions: int) -> dict:
    """The same run by 1 and by 2 real worker processes (Redis broker, this PostgreSQL), one torch thread each."""
    from django.conf import settings as django_settings

    if connection.vendor != "postgresql" or not django_settings.CELERY_BROKER_URL.startswith("redis://"):
        return {"skipped": "needs PostgreSQL and CELERY_BROKER_URL=redis://..."}
    from celery import current_app

    dataset, annotator = sharded_dataset(n_images, n_captions)
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False  # sent to the broker like the web server does
    log_dir = Path(tempfile.mkdtemp(prefix="bench-ranking-workers-"))
    try:
        one = sharded_run(dataset, annotator, 1, log_dir)
        two = sharded_run(dataset, annotator, 2, log_dir)
    finally:
        current_app.conf.task_always_eager = eager
    different = same_candidates(one["run"], two["run"])
    assert different == 0, f"{different} candidate rows differ between 1 and 2 workers"
    return {
        "images": n_images,
        "captions": n_captions,
        "one": one,
        "two": two,
        "speedup": one["wall_s"] / two["wall_s"],
        "different_rows": different,
        "encoding": encode_once_or_per_shard(dataset, annotator, one["shards"]),
    }


def main(args) -> dict:
    from workers.ranking.pipeline import ranking_settings

    device = ranking_settings()["device"]
    print(f"device: {device}, torch threads: {torch.get_num_threads()}, database: {connection.vendor}")
    results = {"device": device, "torch_threads": torch.get_num_threads()}

    rng = np.random.default_rng(0)
    words = (
        "a the dog cat bus red small big two three on in near beach street snow grass ball kite car tree house".split()
    )
    texts = [" ".join(rng.choice(words, size=rng.integers(5, 14))) for _ in range(args.encode_texts)]
    if args.sharded_only:
        return report_sharded(args, results)
    results["encode"] = encode = bench_encode(texts, args.repeats)
    print(
        f"encode : pipeline {encode['pipeline_texts_per_s']:.0f} texts/s / bare encoder {encode['bare_texts_per_s']:.0f} texts/s = {encode['ratio']:.3f} (goal >= 0.9; {encode['texts']} captions, minilm_pivot)"
    )
    print(
        f"encode : time inside the encoder / pipeline encode time, same runs = {encode['encoder_share_of_pipeline']:.3f} (the overhead without timing noise)"
    )

    results["topk"] = topk = bench_topk(args.topk_images, args.topk_images * 5, args.repeats)
    print(
        f"top-K  : bare chunked products {topk['bare_s']:.2f} s / pipeline top-K phase {topk['pipeline_s']:.2f} s = {topk['ratio']:.3f} (goal >= 0.7; {topk['images']} x {topk['captions']}, both directions)"
    )

    results["writes"] = writes = bench_writes(args.write_queries, 25_000, args.repeats)
    if "skipped" in writes:
        print(f"writes : skipped ({writes['skipped']})")
    else:
        print(
            f"writes : plain COPY {writes['plain_copy_s']:.2f} s / pipeline writes {writes['pipeline_s']:.2f} s = {writes['ratio']:.3f} (goal >= 0.5; {writes['rows']} rows)"
        )

    sizes = [(5_000, 25_000)] + ([] if args.skip_large else [(50_000, 250_000)])
    results["scale"] = []
    for n_images, n_captions in sizes:
        scale = bench_scale(n_images, n_captions)
        results["scale"].append(scale)
        print(
            f"scale  : {n_images} x {n_captions}: {scale['wall_s']:.1f} s, peak memory {scale['peak_rss_mb']:.0f} MB (goal < 2048), {scale['candidate_rows']} candidate rows"
        )
    if not args.skip_sharded:
        return report_sharded(args, results)
    return save(results)


def save(results: dict) -> dict:
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "ranking.json").write_text(json.dumps(results, indent=2, default=str))
    return results


def report_sharded(args, results: dict) -> dict:
    results["sharded"] = sharded = bench_sharded(args.sharded_images, args.sharded_images * 5)
    if "skipped" in sharded:
        print(f"sharded: skipped ({sharded['skipped']})")
        return save(results)
    one, two = sharded["one"], sharded["two"]
    size = f"{sharded['images']} x {sharded['captions']}"
    print(
        f"sharded: {size}, {one['shards']} shards, {one['rows']} candidate rows; 1 worker {one['wall_s']:.1f} s, "
        f"2 workers {two['wall_s']:.1f} s (shards per worker {two['by_worker']}): speedup {sharded['speedup']:.2f}x "
        f"(goal >= 1.7; one torch thread per worker process)"
    )
    print(
        f"sharded: candidates of the 2-worker run vs the 1-worker run: {sharded['different_rows']} rows differ; "
        f"coordinator (claim, cached encode, plan, dispatch) {one['coordinator_s']:.1f} s / {two['coordinator_s']:.1f} s"
    )
    print(
        f"sharded: worker CPU seconds: 1 worker {sum(one['worker_cpu_s']):.1f}, 2 workers "
        f"{' + '.join(f'{c:.1f}' for c in two['worker_cpu_s'])} = {sum(two['worker_cpu_s']):.1f} (the same work; "
        f"2 workers got {sum(two['worker_cpu_s']) / two['wall_s']:.2f} cores of the {os.cpu_count()} on average)"
    )
    enc = sharded["encoding"]
    print(
        f"encode once vs per shard: loading the cached embeddings in a worker {enc['load_cached_s']:.1f} s; "
        f"encoding the {sharded['captions']} captions (minilm, {enc['encoder_texts_per_s']:.0f} texts/s here) "
        f"{enc['encode_all_s']:.0f} s, x {one['shards']} shards = {enc['per_shard_total_s']:.0f} s"
    )
    return save(results)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--encode-texts", type=int, default=1024)
    parser.add_argument("--topk-images", type=int, default=5000, help="images for the top-K ratio (x5 captions)")
    parser.add_argument("--write-queries", type=int, default=20_000)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-sharded", action="store_true", help="without the 1 vs 2 worker processes run")
    parser.add_argument("--sharded-only", action="store_true", help="only the 1 vs 2 worker processes run")
    parser.add_argument("--sharded-images", type=int, default=5000, help="images of the sharded run (x5 captions)")
    parser.add_argument("--scale-child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scale_child:
        scale_child(*args.scale_child)
        sys.exit(0)
    test_name = os.environ.get("BENCH_DATABASE_NAME", "bench_ranking")
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = (
        test_name if connection.vendor == "postgresql" else None
    )
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        main(args)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
