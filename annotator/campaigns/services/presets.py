"""Campaign presets: a paper's protocol in one choice, on the form, the API and `build_campaign --preset`.

`cxc` is Crisscrossed Captions' (Parekh et al., Sec. 3): every pair rated on the 0-5 similarity scale by five
raters, the label the mean of the five ratings, positive from CxC's threshold of the task (3 for STS and
SITS, 2.5 for SIS: `similarity_positive_at` left empty), no follow-up HITs (five ratings, not fewer), no
machine prior, and no qualification test unless the requester asks for one (`qualification_items`).
Every campaign samples CxC's way: caption-caption and image-image pairs through the other modality
(co-captions, random pairs), image-caption (SITS) pairs through intramodal similarity (`c2i_intrasim`).

A preset fills the options the request did not give; an option the request gives is kept.
"""

from __future__ import annotations

from collections.abc import Iterable

from annotator.campaigns.models.campaign import CampaignDirection, Sampling, Scale
from annotator.core.errors import ApplicationError

CXC = {
    "scale": Scale.SIMILARITY,
    "redundancy": 5,
    "label_model": "mean",
    "adaptive_redundancy": False,
    "machine_prior": False,
    "similarity_positive_at": None,
    "qualification_items": 0,
    "rationale_followups": False,
}
PRESETS = {"cxc": CXC}
PRESET_CHOICES = [("", "None: every option as set"), ("cxc", "Crisscrossed Captions: 5 ratings, mean, CxC thresholds")]


def preset_options(*, preset: str | None, options: dict, given: Iterable[str]) -> dict:
    """`options` with the preset's value for each of its options not in `given`. No preset: unchanged."""
    if not preset:
        return dict(options)
    if preset not in PRESETS:
        raise ApplicationError(f"Unknown preset {preset!r}.", extra={"allowed": sorted(PRESETS)})
    given = set(given)
    result = dict(options)
    values = dict(PRESETS[preset])
    values["sampling"] = Sampling.CXC  # every task CxC's way: t2t/i2i other-modality, image-caption c2i_intrasim
    if result.get("direction") == CampaignDirection.I2I:
        values["gold_positives_per_hit"] = 0  # image pairs have no original pair to be gold
    for name, value in values.items():
        if name not in given:
            result[name] = value
    return result
