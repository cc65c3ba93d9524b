"""The answer scales, as data the worker pages and the docs show.

four_choice: ECCV Caption (Chun et al., ECCV 2022, Sec. 3.2 and App. B.1): four answers; the two middle ones ask why
(shortcomings), and "in a wrong way" asks what is wrong (aspects). The follow-ups are a per-campaign switch
(ECCV asked them in the image-to-caption stage and dropped them in the caption-to-image stage).

similarity: Crisscrossed Captions (Parekh et al., EACL 2021, Sec. 2 and Table 2): a continuous 0-5 rating (raters are
encouraged to answer e.g. 2.87), five ratings per pair averaged, positive at >= 3. The wording of each
integer point depends on what is compared: two captions (STS), two images (SIS) or an image and a caption
(SITS). The slider shows these anchors, not the number, so raters do not round to integers.
"""

from annotator.campaigns.models.campaign import Campaign, PairKind, Scale
from annotator.crowd.models.crowd import (
    CHOICES_NEEDING_SHORTCOMINGS,
    POSITIVE_CHOICES,
    Choice,
    Shortcoming,
    WrongAspect,
)

FOUR_CHOICE_QUESTION = "Is the image correctly described?"
FOUR_CHOICE = {
    "question": FOUR_CHOICE_QUESTION,
    "choices": [{"value": c.value, "label": c.label} for c in Choice],
    "shortcomings_question": "Why? The description ...",
    "shortcomings": [{"value": s.value, "label": s.label} for s in Shortcoming],
    "wrong_way": Shortcoming.WRONG_WAY.value,
    "aspects_question": "What is described in a wrong way?",
    "aspects": [{"value": a.value, "label": a.label} for a in WrongAspect],
    "positive": [Choice.YES.value, Choice.PARTIALLY_YES.value],
}

SIMILARITY_MIN = 0.0
SIMILARITY_MAX = 5.0
SIMILARITY_STEP = 0.01
# Crisscrossed Captions, Table 2 (STS after Agirre et al., 2012), from 5 down to 0.
SIMILARITY_WORDING = {
    PairKind.CAPTION_CAPTION: {
        "task": "Semantic Textual Similarity (STS)",
        "question": "How similar are the meanings of these two descriptions?",
        "anchors": {
            5: "The texts are completely equivalent as they mean the same thing.",
            4: "The texts are mostly equivalent but some unimportant details differ.",
            3: "The texts are roughly equivalent but some important information differs or is missing.",
            2: "The texts are not equivalent but share some details.",
            1: "The texts are not equivalent but are on the same topic.",
            0: "The texts are on different topics.",
        },
    },
    PairKind.IMAGE_IMAGE: {
        "task": "Semantic Image Similarity (SIS)",
        "question": "How similar are the scenes in these two images?",
        "anchors": {
            5: "The scenes are near duplicates, possibly being viewed from a different perspective.",
            4: "The two scenes are mostly equivalent, but some unimportant details differ such as involving "
            "different but the same or highly similar types of participants, actions, objects and background.",
            3: "The two scenes are roughly equivalent, but some important details are different or missing such "
            "as involving a notable difference in the types of participants, actions, objects or background.",
            2: "The two scenes are not equivalent, but share some details in terms of the types of participants, "
            "actions, objects or background.",
            1: "The two scenes are not equivalent, but are loosely thematically related.",
            0: "The two scenes are completely dissimilar.",
        },
    },
    PairKind.IMAGE_CAPTION: {
        "task": "Semantic Image-Text Similarity (SITS)",
        "question": "How well does the description match the image?",
        "anchors": {
            5: "The image and sentence are perfectly matched. The sentence is an almost perfect description for "
            "the image.",
            4: "The image and sentence are mostly matched, but some unimportant details differ such as involving "
            "different but the same or highly similar types of participants, actions, objects and background. "
            "The text can partially describe the image.",
            3: "The image and sentence are roughly matched, but some important details are different or missing "
            "such as involving a notable difference in the types of participants, actions, objects or "
            "background. The image cannot be described using the text.",
            2: "The image and sentence are not matched, but share some details in one or more of the types of "
            "participants, actions, objects or background.",
            1: "The image and sentence are not matched, but are loosely thematically related.",
            0: "The image and sentence are completely unmatched.",
        },
    },
}


def similarity_wording(*, kind: str) -> dict:
    """The question and the 0-5 anchors (highest first) for a pair kind, for the slider's labels."""
    wording = SIMILARITY_WORDING[PairKind(kind)]
    return {
        "task": wording["task"],
        "question": wording["question"],
        "anchors": [{"score": score, "text": text} for score, text in sorted(wording["anchors"].items(), reverse=True)],
        "min": SIMILARITY_MIN,
        "max": SIMILARITY_MAX,
        "step": SIMILARITY_STEP,
    }


def scale_for(*, scale: str, kind: str = PairKind.IMAGE_CAPTION, rationale_followups: bool = True) -> dict:
    """Everything a worker page needs to ask one item on `scale` (`kind` picks the similarity wording)."""
    if scale == Scale.SIMILARITY:
        return {"scale": Scale.SIMILARITY.value, **similarity_wording(kind=kind)}
    if scale == Scale.FOUR_CHOICE:
        return {
            "scale": Scale.FOUR_CHOICE.value,
            **FOUR_CHOICE,
            "rationale_followups": bool(rationale_followups),
            "needs_shortcomings": _choices_needing_reasons(scale=scale, followups=rationale_followups),
        }
    raise ValueError(f"unknown scale {scale!r}")


def followups_asked(*, campaign, stage: str | None = None) -> bool:
    """Whether `campaign` asks the rationale follow-ups in `stage` (a Hit's stage; None: the first stage).

    The second stage of a `both` campaign (caption-to-image) has its own switch; every other stage follows
    rationale_followups."""
    if campaign.direction == "both" and stage == "t2i":
        return bool(campaign.stage2_rationale_followups)
    return bool(campaign.rationale_followups)


def campaign_scale(*, campaign, kind: str | None = None) -> dict:
    """The scale of a campaign as its worker page shows it (the follow-ups of its first stage)."""
    if kind is None:
        kind = {"t2t": PairKind.CAPTION_CAPTION, "i2i": PairKind.IMAGE_IMAGE}.get(
            campaign.direction, PairKind.IMAGE_CAPTION
        )
    return scale_for(scale=campaign.scale, kind=kind, rationale_followups=campaign.rationale_followups)


# ---- the HIT rules -----------------------------------------------------------------------------------------
# Which answers need follow-ups and what is missing before a HIT can be submitted, said once. The services
# apply them (answer_followups, answer_missing_part); the HIT page hands hit_rules() to static/js/hit.js as
# JSON (json_script), and hit.js applies that data, so the page and the server cannot disagree.

MISSING = {
    "answer": "an answer",
    "score": "a similarity rating",
    "reason": "a reason (what is wrong with the description)",
    "aspects": "what is described in a wrong way",
}


def _choices_needing_reasons(*, scale: str, followups: bool) -> list[str]:
    """The answers that ask why: the two middle ones of four_choice, when the campaign asks follow-ups."""
    return sorted(CHOICES_NEEDING_SHORTCOMINGS) if followups and scale == Scale.FOUR_CHOICE else []


def hit_rules(*, campaign, stage: str | None = None) -> dict:
    """The HIT rules of `campaign` in `stage` (the Hit's stage) as data, the same for the server and the page."""
    needs_reasons = _choices_needing_reasons(
        scale=campaign.scale, followups=followups_asked(campaign=campaign, stage=stage)
    )
    return {
        "scale": campaign.scale,
        "followups": bool(needs_reasons),
        "needsReasons": needs_reasons,
        "wrongWay": Shortcoming.WRONG_WAY.value,
        "missing": MISSING,
    }


def answer_followups(*, rules: dict, choice: str, shortcomings) -> tuple[bool, bool]:
    """Whether the answer `choice` asks why (reasons), and whether those reasons ask what is wrong (aspects)."""
    reasons = choice in rules["needsReasons"]
    return reasons, reasons and rules["wrongWay"] in shortcomings


def answer_missing_part(*, rules: dict, choice: str, score, shortcomings, wrong_aspects) -> str | None:
    """What one item's answer still lacks, in words (rules["missing"]); None when it is complete."""
    if rules["scale"] == Scale.SIMILARITY:
        return None if score is not None else MISSING["score"]
    if not choice:
        return MISSING["answer"]
    reasons, aspects = answer_followups(rules=rules, choice=choice, shortcomings=shortcomings)
    if reasons and not shortcomings:
        return MISSING["reason"]
    if aspects and not wrong_aspects:
        return MISSING["aspects"]
    return None


def answer_verdict(*, campaign: Campaign, choice: str, score) -> bool | None:
    """Whether one answer calls its pair positive: the one home of this rule, for the labels' posterior, the
    crowd check, the peer verdicts and collusion alike. On the similarity scale a rating at or above the
    campaign's own `positive_at` (CxC's 3, 2.5 for SIS, or the requester's); on four choices "100% YES" and
    "Partially YES". None when the answer says nothing (no rating, no choice)."""
    if campaign.scale == Scale.SIMILARITY:
        return None if score is None else float(score) >= campaign.positive_at
    return None if not choice else choice in POSITIVE_CHOICES
