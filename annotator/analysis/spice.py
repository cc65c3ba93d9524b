"""SPICE (Anderson et al.) through pycocoevalcap, where it can run: Java plus Stanford CoreNLP 3.6.0.

pycocoevalcap ships spice-1.0.jar but downloads CoreNLP 3.6.0 and its models (about 400 MB) from
nlp.stanford.edu the first time it runs. Where that cannot happen (no Java, no network, the jars not put
in place by hand), SPICE is skipped with the reason rather than attempted: `spice_unavailable_reason`.
SPICE parses every caption into a scene graph (seconds per hundred pairs), so it scores small test sets;
CIDEr (annotator.analysis.cider) is the metric for a whole 5K x 25K matrix.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")


def spice_directory() -> Path:
    import pycocoevalcap.spice  # a regular package (pycocoevalcap itself is a namespace package)

    return Path(pycocoevalcap.spice.__file__).resolve().parent


def spice_unavailable_reason() -> str | None:
    """None when SPICE can run here, else a sentence saying what is missing and how to provide it."""
    if shutil.which("java") is None:
        return "Java is not installed (SPICE runs on the JVM; apt-get install default-jre-headless)."
    lib = spice_directory() / "lib"
    missing = [name for name in CORENLP_JARS if not (lib / name).is_file()]
    if missing:
        return (
            f"Stanford CoreNLP 3.6.0 is missing from {lib} ({', '.join(missing)}); pycocoevalcap would download it "
            "from nlp.stanford.edu, which this machine cannot reach. Copy the two jars of "
            "stanford-corenlp-full-2015-12-09 there to enable SPICE."
        )
    return None


def spice_matrix(references: Sequence[Sequence[str]], candidates: Sequence[str]) -> np.ndarray:
    """N[i, j] = SPICE F-score of candidates[j] against references[i]. Raises RuntimeError with the reason
    when SPICE cannot run (checked before pycocoevalcap would try a download)."""
    reason = spice_unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    from pycocoevalcap.spice.spice import Spice

    gts, res = {}, {}
    for i, refs in enumerate(references):
        for j, candidate in enumerate(candidates):
            key = f"{i}:{j}"
            gts[key], res[key] = list(refs), [candidate]
    _, scores = Spice().compute_score(gts, res)
    matrix = np.zeros((len(references), len(candidates)))
    for key, score in zip(sorted(gts), scores, strict=True):  # Spice returns the scores in sorted key order
        i, j = (int(part) for part in key.split(":"))
        matrix[i, j] = score["All"]["f"]
    return matrix
