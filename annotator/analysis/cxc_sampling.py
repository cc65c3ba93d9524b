"""Crisscrossed Captions' sampling of caption-caption and image-image pairs (numpy, no ORM).

CxC (Sec. 2) picks intra-modal pairs through the *other* modality, so that the pairs span the whole range of
similarity instead of only near-duplicates: image pairs whose captions are similar (S^C, `i2i_csim`), and
caption pairs whose images are similar (S^I, `c2c_isim`; one caption is drawn from each image's co-caption
group). Half of the caption pairs are co-captions instead, captions of the same image (`c2c_cocaption`),
mostly positive. Nothing is paired with itself (the diagonal is zero). On top of CxC's scheme a share of
uniformly random pairs (`*_random`) shows how dissimilar an unbiased pair is.

The output is candidate rows of the stage's own direction, which the ordinary pooling then merges. Rows
that no ranking run proposed carry a negative run id (COCAPTION_RUN, RANDOM_RUN): they have no provenance
to record, only a sampling method.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from annotator.analysis.pooling import CandidateRows, query_keys

COCAPTION_RUN = -1
RANDOM_RUN = -2
# The kinds of annotator whose image-image ranking is the "other modality" of each stage: caption pairs come
# from image similarity (what sees pixels), image pairs from caption similarity (what reads captions).
OTHER_MODALITY_KINDS = {"t2t": ("visual", "clip"), "i2i": ("minilm_pivot", "tfidf_pivot")}
METHODS = {
    "t2t": {"model": "c2c_isim", COCAPTION_RUN: "c2c_cocaption", RANDOM_RUN: "c2c_random"},
    "i2i": {"model": "i2i_csim", RANDOM_RUN: "i2i_random"},
}


def cocaptions_wanted(*, depth: int, share: float) -> int:
    """Co-caption pairs per query so they are `share` of the caption pairs next to `depth` model pairs."""
    if share <= 0:
        return 0
    return max(1, round(depth * share / (1.0 - share)))


def _rows(run, query, target, rank, score) -> CandidateRows:
    return CandidateRows(
        np.asarray(run, dtype=np.int64),
        np.asarray(query, dtype=np.int64),
        np.asarray(target, dtype=np.int64),
        np.asarray(rank, dtype=np.int64),
        np.asarray(score, dtype=np.float64),
    )


def _concat(parts: list[CandidateRows]) -> CandidateRows:
    return CandidateRows(*(np.concatenate([getattr(p, name) for p in parts]) for name in CandidateRows.__annotations__))


def cxc_sample(
    *,
    direction: str,
    image_rows: CandidateRows,
    query_items: np.ndarray,
    depth: int,
    rng: np.random.Generator,
    all_items: np.ndarray,
    captions_of: Mapping[int, list[int]] | None = None,
    query_caption: Mapping[int, int] | None = None,
    cocaption_share: float = 0.5,
    random_share: float = 0.0,
) -> tuple[CandidateRows, dict[int, str]]:
    """Candidate rows of `direction` (t2t or i2i) for the query images `query_items`, and each pair key's
    sampling method.

    image_rows: image-image candidate rows of the other-modality runs. For t2t, `query_caption` names the
    caption that stands for each query image, `captions_of` every image's captions, and a target image
    becomes one of its captions drawn with `rng`. `all_items` is where random partners are drawn from
    (images for i2i, images whose captions are drawn for t2t). Seeded: the same rng state gives the same rows.
    """
    if direction not in METHODS:
        raise ValueError(f"Crisscrossed Captions sampling is for t2t and i2i, not {direction!r}")
    query_items = np.asarray(query_items, dtype=np.int64)
    keep = (image_rows.rank <= depth) & np.isin(image_rows.query, query_items) & (image_rows.query != image_rows.target)
    model = image_rows.select(keep)
    parts = []
    if direction == "i2i":
        parts.append(model)
    else:
        captions_of = captions_of or {}
        query_caption = query_caption or {}
        # One caption drawn from each target image's co-caption group (CxC), in a fixed row order.
        order = np.lexsort((model.run, model.rank, model.query))
        model = model.select(order)
        queries, targets, mask = [], [], []
        for image_a, image_b in zip(model.query.tolist(), model.target.tolist(), strict=True):
            group = captions_of.get(image_b, [])
            ok = image_a in query_caption and bool(group)
            queries.append(query_caption.get(image_a, -1))
            targets.append(group[int(rng.integers(len(group)))] if group else -1)
            mask.append(ok)
        mask = np.array(mask, dtype=bool)
        parts.append(
            _rows(
                model.run[mask], np.array(queries)[mask], np.array(targets)[mask], model.rank[mask], model.score[mask]
            )
        )
        wanted = cocaptions_wanted(depth=depth, share=cocaption_share)
        co = ([], [], [])
        for image in query_items.tolist():
            caption = query_caption.get(image)
            others = [c for c in captions_of.get(image, []) if c != caption]
            if caption is None or not others or not wanted:
                continue
            chosen = rng.permutation(others)[:wanted]
            co[0].extend([caption] * len(chosen))
            co[1].extend(int(c) for c in chosen)
            co[2].extend(range(1, len(chosen) + 1))
        parts.append(_rows([COCAPTION_RUN] * len(co[0]), co[0], co[1], co[2], [0.0] * len(co[0])))
    model_pairs = len(np.unique(query_keys(direction, parts[0].query, parts[0].target)))
    n_random = int(round(random_share * model_pairs))
    candidates = np.asarray(all_items, dtype=np.int64)
    random_rows = ([], [], [])
    if n_random and len(candidates) > 1 and len(query_items):
        for j in range(n_random):
            image_a = int(query_items[int(rng.integers(len(query_items)))])
            image_b = int(candidates[int(rng.integers(len(candidates)))])
            if image_a == image_b:
                continue
            if direction == "i2i":
                first, second = image_a, image_b
            else:
                group = (captions_of or {}).get(image_b, [])
                if image_a not in (query_caption or {}) or not group:
                    continue
                first, second = query_caption[image_a], group[int(rng.integers(len(group)))]
            random_rows[0].append(first)
            random_rows[1].append(second)
            random_rows[2].append(depth + 1 + j)
    parts.append(_rows([RANDOM_RUN] * len(random_rows[0]), *random_rows, [0.0] * len(random_rows[0])))
    rows = _concat(parts)
    methods: dict[int, str] = {}
    names = METHODS[direction]
    # Priority: what a model proposed, then a co-caption, then chance.
    for run_marker in ("model", COCAPTION_RUN, RANDOM_RUN):
        if run_marker not in names:
            continue
        mask = rows.run >= 0 if run_marker == "model" else rows.run == run_marker
        for key in query_keys(direction, rows.query[mask], rows.target[mask]).tolist():
            methods.setdefault(int(key), names[run_marker])
    return rows, methods
