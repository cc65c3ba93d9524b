"""A machine annotator's similarity of given pairs (caption-caption, image-image, image-caption), for
Crisscrossed Captions' Table 5 when the model is one of Vericap's annotators: the cosine of the two items'
embeddings, images as the ranking sees them (a pivot annotator: the normalised sum of the image's caption
embeddings; a pixel annotator: its own image encoding). `labelset_cxc_annotator_scores` is the one home of
"an annotator's scores of a CxC label set's rated pairs", for `manage.py cxc_annotator_scores` and the
scores task behind `evaluate --cxc --annotator`, the label set's page and the API."""

from __future__ import annotations

import numpy as np
import scipy.sparse
import torch

from annotator.labels.models.labelsets import LabelSet
from annotator.research.selectors.cxc_table5 import labelset_cxc_rated_pairs
from workers.ranking.annotators import load_annotator
from workers.ranking.pipeline import corpus_load, image_representations, load_pil

BATCH = 64


def _rows(matrix, index: np.ndarray):
    return matrix[index] if scipy.sparse.issparse(matrix) else matrix[torch.from_numpy(index)]


def _cosines(left, right) -> np.ndarray:
    if scipy.sparse.issparse(left):
        return np.asarray(left.multiply(right).sum(axis=1)).ravel()
    return (left.float() * right.float()).sum(dim=1).numpy()


def pair_similarities(*, dataset_id: int, kind: str, pairs: list[tuple[str, int, int]]) -> list[float]:
    """The annotator `kind`'s cosine of each (pair kind, first pk, second pk): caption_caption (caption,
    caption), image_image (image, image), image_caption (image, caption). Raises ValueError for a pair kind
    the annotator cannot score (a pixel annotator reads no caption)."""
    corpus = corpus_load(dataset_id)
    annotator = load_annotator(kind=kind).for_corpus(list(corpus.texts))
    needs_texts = any(pair_kind != "image_image" for pair_kind, _, _ in pairs) or annotator.pivot
    if needs_texts and not annotator.reads_texts:
        raise ValueError(f"The {kind} annotator reads no caption: it scores image-image pairs only.")
    texts = annotator.encode_texts(list(corpus.texts)) if needs_texts else None
    if annotator.pivot:
        images, _ = image_representations(texts_embedded=texts, corpus=corpus)
    else:
        encoded = [
            annotator.encode_images([load_pil(name) for name in corpus.image_files[start : start + BATCH]])
            for start in range(0, len(corpus.image_files), BATCH)
        ]
        images = torch.cat(encoded) if encoded else torch.zeros(0, 1)
    caption_row = {int(pk): row for row, pk in enumerate(corpus.caption_ids.tolist())}
    image_row = {int(pk): row for row, pk in enumerate(corpus.image_ids.tolist())}
    scores = np.zeros(len(pairs), dtype=np.float64)
    for pair_kind, left_space, right_space, left_rows, right_rows in (
        ("caption_caption", texts, texts, caption_row, caption_row),
        ("image_image", images, images, image_row, image_row),
        ("image_caption", images, texts, image_row, caption_row),
    ):
        where = [n for n, (k, _, _) in enumerate(pairs) if k == pair_kind]
        if not where:
            continue
        left = np.array([left_rows[pairs[n][1]] for n in where], dtype=np.int64)
        right = np.array([right_rows[pairs[n][2]] for n in where], dtype=np.int64)
        scores[where] = _cosines(_rows(left_space, left), _rows(right_space, right))
    return [float(value) for value in scores]


def labelset_cxc_annotator_scores(*, label_set: LabelSet, kind: str) -> dict[str, dict[tuple[str, str], float]]:
    """{task ("sts", "sis", "sits"): {(first, second): score}} of annotator `kind` for every rated pair of
    the set, in CxC's id spellings and column order (the scores files `evaluate --cxc` reads). Raises
    ValueError when the set has no rated pair or the annotator cannot score a pair kind it holds."""
    rated = labelset_cxc_rated_pairs(label_set=label_set)
    if not rated:
        raise ValueError(f"Label set {label_set.label} has no 0-5 ratings (import a CxC file).")
    scores = pair_similarities(
        dataset_id=label_set.dataset_id, kind=kind, pairs=[(pair.kind, pair.first_pk, pair.second_pk) for pair in rated]
    )
    by_task: dict[str, dict[tuple[str, str], float]] = {}
    for pair, score in zip(rated, scores, strict=True):
        by_task.setdefault(pair.task, {})[(pair.first, pair.second)] = score
    return by_task
