"""Benchmark: the CIDEr relevance matrix N of seed 002 (every image x every caption) and NCS over it.

N[i, j] = CIDEr-D(references of image i, caption j) for a COCO-5K-sized test set: 5,000 synthetic images
with their 25,000 captions (`annotator.scenarios.synthetic`, the references are each image's own five captions).
In a fresh child process: build the corpus (tokenize, n-grams, document frequencies), compute the whole
matrix (`annotator.analysis.cider.CiderCorpus.matrix`), then SR@k and NCS@k of every i2t and t2i query for
two rankings (the oracle, which must score 1.0, and a random one). Prints seconds, the child's peak RSS,
and the ratio to pycocoevalcap's Cider: the reference scores one caption per image against all 5,000
images (its `Cider().compute_score`, a timed sample of `--sample` such calls), extrapolated to the
125,000,000 pairs of the matrix.

    .venv/bin/python bench/ncs.py                       # 5,000 x 25,000
    .venv/bin/python bench/ncs.py --images 1000         # a quick look
"""

import argparse
import json
import multiprocessing
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def references(images: int, seed: int) -> tuple[list[list[str]], list[str], list[int]]:
    from annotator.analysis.cider import tokenize
    from annotator.scenarios.synthetic import generate

    _, captions = generate(images=images, seed=seed)
    by_image: dict[int, list[str]] = {}
    for caption in captions:
        by_image.setdefault(caption.image_id, []).append(tokenize(caption.text))
    ids = sorted(by_image)
    refs = [by_image[image] for image in ids]
    flat = [caption for image_refs in refs for caption in image_refs]
    owner = [row for row, image_refs in enumerate(refs) for _ in image_refs]
    return refs, flat, owner


def ours(args, queue) -> None:
    import numpy as np

    from annotator.analysis.cider import CiderCorpus
    from annotator.analysis.semantic import semantic_table

    refs, captions, owner = references(args.images, args.seed)
    started = time.perf_counter()
    corpus = CiderCorpus(refs)
    corpus_seconds = time.perf_counter() - started
    started = time.perf_counter()
    matrix = corpus.matrix(captions)
    matrix_seconds = time.perf_counter() - started
    peak_matrix = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    images = {str(i): i for i in range(len(refs))}
    targets = {str(j): j for j in range(len(captions))}
    rng = np.random.default_rng(args.seed)
    rankings = {
        "oracle": {
            "i2t": {str(i): [str(j) for j in np.argsort(-matrix[i], kind="stable")[:10]] for i in range(len(refs))},
            "t2i": {
                str(j): [str(i) for i in np.argsort(-matrix[:, j], kind="stable")[:10]] for j in range(len(captions))
            },
        },
        "random": {
            "i2t": {str(i): [str(j) for j in rng.integers(0, len(captions), 10)] for i in range(len(refs))},
            "t2i": {str(j): [str(i) for i in rng.integers(0, len(refs), 10)] for j in range(len(captions))},
        },
    }
    m_i2t = {str(i): 5 for i in range(len(refs))}
    m_t2i = {str(j): 1 for j in range(len(captions))}
    scores = {}
    started = time.perf_counter()
    for name, ranking in rankings.items():
        i2t = semantic_table(ranking["i2t"], matrix, images, targets, m=m_i2t).summary()
        t2i = semantic_table(ranking["t2i"], matrix.T, targets, images, m=m_t2i).summary()
        scores[name] = {
            "i2t": {k: round(v, 4) for k, v in i2t.items()},
            "t2i": {k: round(v, 4) for k, v in t2i.items()},
        }
    ncs_seconds = (time.perf_counter() - started) / len(rankings)
    queue.put(
        {
            "images": len(refs),
            "captions": len(captions),
            "pairs": len(refs) * len(captions),
            "features": corpus.features,
            "corpus_seconds": round(corpus_seconds, 2),
            "matrix_seconds": round(matrix_seconds, 2),
            "matrix_gib": round(matrix.nbytes / 2**30, 3),
            "peak_rss_mib_after_matrix": round(peak_matrix, 1),
            "sr_ncs_seconds_per_model_both_directions": round(ncs_seconds, 2),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "scores": scores,
            "own_caption_mean": round(float(np.mean(matrix[owner, np.arange(len(captions))])), 4),
            "matrix_mean": round(float(matrix.mean()), 4),
        }
    )


def reference(args, queue) -> None:
    """pycocoevalcap: one Cider().compute_score call scores one caption against every image (5,000 pairs,
    with the document frequencies of all 5,000 images, as the matrix has them)."""
    import random

    from pycocoevalcap.cider.cider import Cider

    refs, captions, _ = references(args.images, args.seed)
    rng = random.Random(args.seed)
    gts = dict(enumerate(refs))
    started = time.perf_counter()
    for _ in range(args.sample):
        caption = captions[rng.randrange(len(captions))]
        Cider().compute_score(gts, {image: [caption] for image in gts})
    seconds = time.perf_counter() - started
    pairs = args.sample * len(refs)
    queue.put({"sampled_pairs": pairs, "seconds": round(seconds, 2), "seconds_per_pair": seconds / pairs})


def in_child(target, args) -> dict:
    queue = multiprocessing.get_context("spawn").Queue()
    process = multiprocessing.get_context("spawn").Process(target=target, args=(args, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sample", type=int, default=4, help="reference calls to time (each: 1 caption x all images)")
    args = parser.parse_args()
    mine = in_child(ours, args)
    print(json.dumps({"vectorised": mine}, indent=1))
    theirs = in_child(reference, args)
    extrapolated = theirs["seconds_per_pair"] * mine["pairs"]
    print(json.dumps({"pycocoevalcap_sample": theirs}, indent=1))
    print(
        f"N {mine['images']} x {mine['captions']}: {mine['matrix_seconds']} s for the matrix "
        f"(+ {mine['corpus_seconds']} s corpus), peak RSS {mine['peak_rss_mib']} MiB; "
        f"pycocoevalcap extrapolated {extrapolated:,.0f} s = {extrapolated / 3600:.1f} h; "
        f"ratio {extrapolated / (mine['matrix_seconds'] + mine['corpus_seconds']):,.0f}x "
        f"(goal: under 120 s and 2,048 MiB)"
    )


if __name__ == "__main__":
    main()
