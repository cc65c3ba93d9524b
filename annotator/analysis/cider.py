"""CIDEr-D (Vedantam et al.) as the COCO caption evaluation code computes it, for whole matrices at once.

`pycocoevalcap.cider.CiderScorer` is the reference: same n-grams (1..4 over whitespace tokens), the same
document frequencies (one document per image: the n-grams of all its reference captions), the same tf-idf
weights `tf * (log(#images) - log(max(1, df)))`, the clipped similarity `sum min(v_hyp, v_ref) * v_ref`
divided by the two norms of each n-gram order, the Gaussian length penalty on the difference of the two
bigram counts (sigma 6), the mean over the four orders and over the image's references, times 10.

What it adds is speed. Scored pair by pair, the N matrix of "Is an image worth five sentences?"
(CIDEr(G_i, c_j) for every image i and caption j of a 5K test set: 125 million pairs) takes days. Here it
is a few sparse products:

- The clipping is not bilinear, but min(a, b) = sum_{t >= 1} [a >= t][b >= t] for whole counts, so
  min(tf_h, tf_r) * tf_r * w^2 = sum_t [tf_h >= t] * ([tf_r >= t] * tf_r * w^2). Each (n-gram, t) is one
  feature: a caption holds 1/|v_hyp| on the features t <= tf_h of its n-grams, a reference holds
  tf_r * w^2 / |v_ref| on t <= tf_r. Their dot product is the sum over orders of the normalised clipped
  similarities, exactly.
- The length penalty depends on the caption's length and the reference's length only. Captions are taken
  one length at a time; for that length the penalty is a weight per reference, so the references fold
  into their images before the product: Z = Y^T diag(penalty) A, with A[r, i] = 10 / (4 |G_i|) for each
  reference r of image i. N^T for the captions of that length is X Z.
- Features that many images share (a, on, of the, ...) make X Z almost dense: those go through a dense
  block (sparse X times dense Z), the rare rest through a sparse product.

`tokenize` is a small PTB-like tokenizer (lower case, punctuation split off and dropped), the Python
counterpart of what pycocoevalcap's Java PTBTokenizer does before scoring; CIDEr itself only splits on
whitespace, so a caller that tokenized otherwise gets the same scores as the reference for the same text.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import sparse

ORDERS = 4
SIGMA = 6.0
# Tokens PTBTokenizer leaves that pycocoevalcap drops before scoring (a double quote becomes `` or '').
PUNCTUATION = {"''", "'", "``", "`", '"', ".", "?", "!", ",", ":", "-", "--", "...", ";"}
BRACKETS = {"(": "-lrb-", ")": "-rrb-", "{": "-lcb-", "}": "-rcb-", "[": "-lsb-", "]": "-rsb-"}
_CLITIC = re.compile(r"(?<=[a-z])(n't|'(?:s|re|ve|ll|d|m))\b")
_TOKEN = re.compile(
    r"n't|'(?:s|re|ve|ll|d|m)\b"  # clitics, split off as PTB does ("is n't", "dog 's")
    r"|(?:[a-z]\.){2,}"  # abbreviations: u.s.
    r"|\d+(?:[.,:]\d+)+"  # 3.5, 5:30, 1,000
    r"|[a-z0-9]+(?:-[a-z0-9]+)*"  # words, hyphenated words
    r"|\.\.\.|--|[^\sa-z0-9]"
)
# A feature whose n-gram occurs in at least this share of the images goes to the dense block.
DENSE_SHARE = 0.01
BLOCK_ROWS = 2048  # captions per product: bounds the temporary sparse result


def tokenize(text: str) -> str:
    """PTB-like tokens, lower case, punctuation dropped: "It's a dog's bed." -> "it 's a dog 's bed"."""
    text = _CLITIC.sub(r" \1", text.lower())
    tokens = (BRACKETS.get(token, token) for token in _TOKEN.findall(text))
    return " ".join(token for token in tokens if token not in PUNCTUATION)


def ngram_counts(sentence: str, orders: int = ORDERS) -> dict[tuple[str, ...], int]:
    """Counts of the 1..orders-grams of a whitespace-tokenized sentence (pycocoevalcap's `precook`)."""
    words = sentence.split()
    counts: dict[tuple[str, ...], int] = defaultdict(int)
    for k in range(1, orders + 1):
        for i in range(len(words) - k + 1):
            counts[tuple(words[i : i + k])] += 1
    return counts


def length_penalty(delta: np.ndarray | float, sigma: float = SIGMA):
    """exp(-delta^2 / (2 sigma^2)), written as the reference writes it."""
    return np.e ** (-(np.asarray(delta, dtype=np.float64) ** 2) / (2 * sigma**2))


class CiderCorpus:
    """Reference captions grouped by image: the document frequencies, weights and reference features.

    `references[i]` is the list of (tokenized) reference captions of image i; every image needs at least one.
    """

    def __init__(self, references: Sequence[Sequence[str]], *, orders: int = ORDERS, sigma: float = SIGMA):
        if not references:
            raise ValueError("CIDEr needs at least one image with references.")
        if any(len(refs) == 0 for refs in references):
            raise ValueError("Every image needs at least one reference caption.")
        self.orders = orders
        self.sigma = sigma
        self.images = len(references)
        self.ref_len = np.log(float(self.images))
        ref_counts = [[ngram_counts(ref, orders) for ref in refs] for refs in references]
        document_frequency: dict[tuple, int] = defaultdict(int)
        for refs in ref_counts:
            for ngram in {ngram for counts in refs for ngram in counts}:
                document_frequency[ngram] += 1
        self.ngram_id = {ngram: index for index, ngram in enumerate(document_frequency)}
        self.ngram_order = np.fromiter((len(ngram) for ngram in self.ngram_id), dtype=np.int8, count=len(self.ngram_id))
        self.weight = np.array(
            [self.ref_len - np.log(max(1.0, float(document_frequency[ngram]))) for ngram in self.ngram_id],
            dtype=np.float64,
        )
        self._feature_id: dict[tuple[int, int], int] = {}  # (n-gram id, t) -> column, t >= 1
        rows, cols, values, lengths, owners = [], [], [], [], []
        for image, refs in enumerate(ref_counts):
            for counts in refs:
                ref_index = len(lengths)
                norms = self._norms(counts)
                for ngram, tf in counts.items():
                    g = self.ngram_id[ngram]
                    norm = norms[len(ngram) - 1]
                    if norm == 0.0:
                        continue
                    value = float(tf) * self.weight[g] ** 2 / norm
                    for t in range(1, tf + 1):
                        rows.append(ref_index)
                        cols.append(self._feature(g, t))
                        values.append(value)
                lengths.append(self._length(counts))
                owners.append(image)
        self.ref_lengths = np.asarray(lengths, dtype=np.int64)
        self.ref_image = np.asarray(owners, dtype=np.int64)
        self.refs_per_image = np.bincount(self.ref_image, minlength=self.images)
        self.features = len(self._feature_id)
        # Y^T: features x references.
        self.reference_features = sparse.csr_matrix(
            (values, (cols, rows)), shape=(self.features, len(lengths)), dtype=np.float64
        )

    def _feature(self, ngram: int, t: int) -> int:
        key = (ngram, t)
        column = self._feature_id.get(key)
        if column is None:
            column = self._feature_id[key] = len(self._feature_id)
        return column

    def _norms(self, counts: dict) -> list[float]:
        """|v| per order, v = tf * weight; an n-gram no reference has weighs log(#images) (its df is 0)."""
        squares = [0.0] * self.orders
        for ngram, tf in counts.items():
            g = self.ngram_id.get(ngram)
            weight = self.weight[g] if g is not None else self.ref_len - np.log(1.0)
            squares[len(ngram) - 1] += pow(float(tf) * weight, 2)
        return [float(np.sqrt(square)) for square in squares]

    @staticmethod
    def _length(counts: dict) -> int:
        """pycocoevalcap's length: the number of bigrams."""
        return sum(tf for ngram, tf in counts.items() if len(ngram) == 2)

    def candidate_features(self, candidates: Sequence[str]) -> tuple[sparse.csr_matrix, np.ndarray]:
        """X (candidates x features, 1/|v_hyp| on the features t <= tf of each n-gram) and the lengths."""
        rows, cols, values, lengths = [], [], [], []
        for index, sentence in enumerate(candidates):
            counts = ngram_counts(sentence, self.orders)
            norms = self._norms(counts)
            for ngram, tf in counts.items():
                g = self.ngram_id.get(ngram)
                norm = norms[len(ngram) - 1]
                if g is None or norm == 0.0:
                    continue
                for t in range(1, tf + 1):
                    column = self._feature_id.get((g, t))
                    if column is None:  # no reference repeats this n-gram t times: min(.) never reaches t
                        break
                    rows.append(index)
                    cols.append(column)
                    values.append(1.0 / norm)
            lengths.append(self._length(counts))
        matrix = sparse.csr_matrix((values, (rows, cols)), shape=(len(candidates), self.features), dtype=np.float64)
        return matrix, np.asarray(lengths, dtype=np.int64)

    def _image_weights(self, caption_length: int, images: np.ndarray | None) -> sparse.csr_matrix:
        """W = diag(penalty(caption_length - ref length)) A: references x images (or the chosen images)."""
        penalty = length_penalty(caption_length - self.ref_lengths, self.sigma)
        scale = 10.0 / (self.orders * self.refs_per_image[self.ref_image])
        columns = self.ref_image
        keep = slice(None)
        width = self.images
        if images is not None:
            position = np.full(self.images, -1, dtype=np.int64)
            position[images] = np.arange(len(images))
            columns = position[self.ref_image]
            keep = columns >= 0
            width = len(images)
        rows = np.arange(len(self.ref_lengths))
        return sparse.csr_matrix(
            ((penalty * scale)[keep], (rows[keep], columns[keep])), shape=(len(self.ref_lengths), width)
        )

    def matrix(self, candidates: Sequence[str], *, images: Iterable[int] | None = None, dtype=np.float64) -> np.ndarray:
        """N[i, j] = CIDEr-D(references of image i, candidates[j]) for every image (or the given images).

        Returns an (images x candidates) array; it is the transpose of a C-ordered (candidates x images)
        array, so a column (one caption against every image) is contiguous.
        """
        image_index = None if images is None else np.asarray(list(images), dtype=np.int64)
        width = self.images if image_index is None else len(image_index)
        out = np.zeros((len(candidates), width), dtype=dtype)
        if not len(candidates) or not width:
            return out.T
        features, lengths = self.candidate_features(candidates)
        for length in np.unique(lengths):
            z = (self.reference_features @ self._image_weights(int(length), image_index)).tocsr()
            shared = np.diff(z.indptr)
            dense_rows = np.flatnonzero(shared >= max(1, DENSE_SHARE * width))
            sparse_rows = np.flatnonzero((shared > 0) & (shared < max(1, DENSE_SHARE * width)))
            z_dense = z[dense_rows].toarray()
            z_sparse = z[sparse_rows]
            rows = np.flatnonzero(lengths == length)
            for start in range(0, len(rows), BLOCK_ROWS):
                block = rows[start : start + BLOCK_ROWS]
                x = features[block]
                scores = x[:, dense_rows] @ z_dense
                scores += (x[:, sparse_rows] @ z_sparse).toarray()
                out[block] = scores
        return out.T
