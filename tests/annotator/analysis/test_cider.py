"""The vectorised CIDEr-D matrix equals pycocoevalcap's Cider, on real and synthetic captions."""

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from pycocoevalcap.cider.cider import Cider

from annotator.analysis.cider import CiderCorpus, ngram_counts, tokenize
from annotator.scenarios.synthetic import generate

DEMO_CAPTIONS = Path(__file__).resolve().parents[3] / "fixtures" / "demo" / "captions.json"


def demo_references() -> tuple[list, list[list[str]]]:
    data = json.loads(DEMO_CAPTIONS.read_text())
    by_image: dict = {}
    for annotation in data["annotations"]:
        by_image.setdefault(annotation["image_id"], []).append(tokenize(annotation["caption"]))
    ids = sorted(by_image)
    return ids, [by_image[image] for image in ids]


def test_the_whole_matrix_of_the_demo_captions_equals_pycocoevalcap():
    """19 real images x their 95 captions: every entry as Cider().compute_score gives it (same corpus)."""
    ids, references = demo_references()
    captions = [caption for refs in references for caption in refs]
    matrix = CiderCorpus(references).matrix(captions)
    assert matrix.shape == (19, 95)
    gts = dict(zip(ids, references, strict=True))
    for column, caption in enumerate(captions):
        _, scores = Cider().compute_score(gts, {image: [caption] for image in ids})
        np.testing.assert_allclose(matrix[:, column], scores, rtol=0, atol=1e-12)
    # Not trivially zero: an image's own captions score high against its references.
    assert matrix[0, :5].min() > 1.0 and matrix.max() > 3.0


def test_a_thousand_random_pairs_of_synthetic_captions_equal_pycocoevalcap():
    """200 images x 1,000 captions: 1,000 random (image, caption) pairs within 1e-6 of the reference.

    Each Cider() call scores one caption per image over all 200 images, so its document frequencies come
    from the same 200 reference sets as the matrix's."""
    _, captions = generate(images=200, seed=3)
    by_image: dict = {}
    for caption in captions:
        by_image.setdefault(caption.image_id, []).append(tokenize(caption.text))
    ids = sorted(by_image)
    references = [by_image[image] for image in ids]
    candidates = [tokenize(caption.text) for caption in captions]
    matrix = CiderCorpus(references).matrix(candidates)
    rng = random.Random(11)
    worst = 0.0
    for _round in range(5):
        chosen = {image: rng.randrange(len(candidates)) for image in ids}
        _, scores = Cider().compute_score(
            dict(zip(ids, references, strict=True)), {image: [candidates[chosen[image]]] for image in ids}
        )
        for row, image in enumerate(ids):
            worst = max(worst, abs(matrix[row, chosen[image]] - scores[row]))
    assert worst < 1e-6
    assert worst < 1e-12  # in practice it agrees to rounding


def test_rows_for_chosen_images_equal_the_full_matrix():
    """Scoring against a subset of images keeps the corpus (df over all images) and gives the same rows."""
    _, references = demo_references()
    captions = [caption for refs in references for caption in refs]
    corpus = CiderCorpus(references)
    full = corpus.matrix(captions)
    part = corpus.matrix(captions[:30], images=[4, 0, 7])
    np.testing.assert_array_equal(part, full[[4, 0, 7]][:, :30])


def test_repeated_ngrams_are_clipped_to_the_reference_count():
    """min(tf_hyp, tf_ref): "dog dog dog" against "dog dog" counts two dogs, as the reference does."""
    references = [["a dog and a dog", "two dogs"], ["a cat", "one cat sitting"]]
    candidates = ["dog dog dog", "a dog and a dog and a dog", "a cat a cat", "nothing in common"]
    matrix = CiderCorpus(references).matrix(candidates)
    gts = {0: references[0], 1: references[1]}
    for column, candidate in enumerate(candidates):
        _, scores = Cider().compute_score(gts, {0: [candidate], 1: [candidate]})
        np.testing.assert_allclose(matrix[:, column], scores, rtol=0, atol=1e-12)
    assert matrix[:, 3].tolist() == [0.0, 0.0]


def test_ngram_counts_are_pycocoevalcaps_precook():
    counts = ngram_counts("a b a b")
    assert counts[("a",)] == 2 and counts[("a", "b")] == 2 and counts[("b", "a")] == 1
    assert counts[("a", "b", "a", "b")] == 1 and len(counts) == 2 + 2 + 2 + 1


def test_bad_corpora_are_refused():
    with pytest.raises(ValueError):
        CiderCorpus([])
    with pytest.raises(ValueError):
        CiderCorpus([["a dog"], []])


@pytest.mark.skipif(shutil.which("java") is None, reason="Java is not installed: PTBTokenizer cannot run")
def test_tokenize_matches_the_java_ptb_tokenizer_on_the_demo_and_synthetic_captions():
    """pycocoevalcap tokenizes with Stanford's PTBTokenizer (Java); ours gives the same tokens here."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    data = json.loads(DEMO_CAPTIONS.read_text())
    texts = [annotation["caption"] for annotation in data["annotations"]]
    texts += [caption.text for caption in generate(images=20, seed=5)[1]]
    texts += ["It's a dog's life, isn't it?", "A man (in red) jumps -- high!", 'One "black" & one white.']
    texts += ["The 3.5 m boat's sail", "a cat-like creature on a 2-seat sofa", "U.S. flag at 5:30"]
    tokenized = PTBTokenizer().tokenize({index: [{"caption": text}] for index, text in enumerate(texts)})
    assert [tokenize(text) for text in texts] == [tokenized[index][0] for index in range(len(texts))]


def test_tokenize_examples():
    assert tokenize("It's a dog's bed.") == "it 's a dog 's bed"
    assert tokenize("A man (in red), jumping!") == "a man -lrb- in red -rrb- jumping"


def test_spice_says_why_it_cannot_run_or_scores_a_pair():
    """SPICE needs Java and Stanford CoreNLP 3.6.0; without them the reason is given, not a download tried."""
    from annotator.analysis.spice import spice_matrix, spice_unavailable_reason

    reason = spice_unavailable_reason()
    if reason is not None:
        with pytest.raises(RuntimeError, match="CoreNLP|Java"):
            spice_matrix([["a dog on a bed"]], ["a dog on a bed"])
        pytest.skip(f"SPICE cannot run here: {reason}")
    matrix = spice_matrix([["a dog on a bed"], ["two red cars"]], ["a dog on a bed", "a red car"])
    assert matrix[0, 0] > matrix[1, 0] and matrix[1, 1] > matrix[0, 1]
