"""The HIT page: what it shows (`hit_context`), and the page itself from a frame rendered once.

A crowd worker opens a HIT page once per HIT, and every worker of a campaign sees the same page around
different items: the instructions, the four answers and their follow-ups, the progress bar, the navigation.
Rendering that through the template language was most of the page's CPU. So `hit_page_editable` renders
templates/work/hit.html once per campaign, stage and rules with a *slot* in place of everything that
belongs to one person or one HIT (their name, the CSRF token, the assignment's URLs and lease, the items,
the page's data), keeps the result cut at the slots, and answers each page by joining the pieces with this
request's values. The page is the same bytes the template renders for that request
(tests/annotator/crowd/test_hit_page.py compares them).

The items of a HIT nobody has answered yet are the same markup for every worker of the HIT: that markup is
kept in the shared cache beside the items (`hit_blank_items`), so only the HIT's first page builds it.

Slots are private-use characters, which neither the template's escaping nor the JSON script touches; every
value put into one is escaped here as the template would have escaped it. Nothing a person typed is part
of a frame: the campaign's name is a slot too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from types import SimpleNamespace

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import cache as shared_cache
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.template.defaultfilters import date as date_filter
from django.template.defaultfilters import time as time_filter
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import json_script
from django.utils.safestring import mark_safe

from annotator.campaigns.models.campaign import Campaign, Hit, Scale
from annotator.core.selectors.access import is_operator, user_role
from annotator.crowd import scales
from annotator.crowd.models.crowd import Assignment, Choice, Shortcoming, WrongAspect
from annotator.crowd.selectors import work as work_selectors
from annotator.crowd.views.hit_markup import escape, hit_items_html

# Short labels along the slider, as in the Crisscrossed Captions interfaces (Parekh et al., EACL 2021,
# Figures 4-6); the full wording of each point (its Table 2) comes from annotator/crowd/scales.py and is shown in
# the instructions and as a tooltip. No number is shown.
SLIDER_LABELS = {
    "image_caption": [
        "Completely unmatched",
        "Thematically matched",
        "Share some details",
        "Roughly matched",
        "Mostly matched",
        "Perfectly matched",
    ],
    "caption_caption": [
        "On different topics",
        "Same topic only",
        "Share some details",
        "Roughly equivalent",
        "Mostly equivalent",
        "Completely equivalent",
    ],
    "image_image": [
        "Completely dissimilar",
        "Not equivalent",
        "Partially similar",
        "Roughly equivalent",
        "Mostly equivalent",
        "Completely equivalent",
    ],
}


def similarity_wording(kind: str = "image_caption") -> list[dict]:
    """The 0-5 anchors, lowest first: value, short label and the Crisscrossed wording."""
    labels = SLIDER_LABELS.get(kind, SLIDER_LABELS["image_caption"])
    anchors = {row["score"]: row["text"] for row in scales.similarity_wording(kind=kind)["anchors"]}
    return [{"value": value, "label": labels[value], "text": anchors[value]} for value in range(6)]


def scale_context(campaign: Campaign, stage: str | None = None) -> dict:
    return {
        "similarity": campaign.scale == Scale.SIMILARITY,
        "followups": scales.hit_rules(campaign=campaign, stage=stage)["followups"],
        "choices": [
            {"value": value, "label": label, "key": number}
            for number, (value, label) in enumerate(Choice.choices, start=1)
        ],
        "shortcomings": [{"value": value, "label": label} for value, label in Shortcoming.choices],
        "aspects": [{"value": value, "label": label} for value, label in WrongAspect.choices],
    }


def hit_context(*, campaign: Campaign, items: list[dict], answers: dict, mode: str, stage: str | None = None) -> dict:
    """The HIT page of a HIT of `stage` (its follow-ups are the stage's: annotator.crowd.scales.followups_asked)."""
    scale = scale_context(campaign, stage)
    rules = scales.hit_rules(campaign=campaign, stage=stage)
    rows = []
    for item in items:
        saved = answers.get(item["token"], {})
        picked_reasons, picked_aspects = saved.get("shortcomings") or [], saved.get("wrong_aspects") or []
        needs_reasons, needs_aspects = scales.answer_followups(
            rules=rules, choice=saved.get("choice") or "", shortcomings=picked_reasons
        )
        # What is checked and shown is worked out here once: the template only prints it (the page has
        # 18 items x up to 18 inputs, and template lookups are the page's main cost).
        # Numbers go to the template as strings: an int is localized on every {{ }} (about 250 a page).
        rows.append(
            {
                **item,
                "number": str(len(rows) + 1),
                "saved": saved,
                "choice_rows": [
                    (c["value"], c["label"], str(c["key"]), saved.get("choice") == c["value"]) for c in scale["choices"]
                ],
                "reason_rows": [(r["value"], r["label"], r["value"] in picked_reasons) for r in scale["shortcomings"]],
                "aspect_rows": [(a["value"], a["label"], a["value"] in picked_aspects) for a in scale["aspects"]],
                "reasons_hidden": not needs_reasons,
                "aspects_hidden": not needs_aspects,
            }
        )
    wording = similarity_wording(items[0]["kind"] if items else "image_caption")
    return {
        "campaign": campaign,
        "items": rows,
        "items_html": hit_items_html(
            items=rows, mode=mode, similarity=scale["similarity"], followups=bool(scale["followups"]), wording=wording
        ),
        "mode": mode,
        "wording": wording,
        "total": len(rows),
        "hit_rules": rules,
        # The HIT page's top bar is one frame for every worker (below): it never carries one worker's earnings.
        "nav_without_earnings": True,
        **scale,
    }


def hit_page_data(*, assignment: Assignment, answers: dict, editable: bool) -> dict:
    """What hit.js reads from the page (the "page-data" JSON)."""
    return {
        "pageUrl": reverse("work_hit", args=[assignment.pk]),
        "answerUrl": reverse("work_answer", args=[assignment.pk]),
        "answersUrl": reverse("work_answers", args=[assignment.pk]),
        "assignmentId": assignment.pk,
        "autosave": {
            "items": settings.HIT_AUTOSAVE_BATCH_ITEMS,
            "waitMs": int(settings.HIT_AUTOSAVE_WAIT_SECONDS * 1000),
        },
        "submitUrl": reverse("work_submit", args=[assignment.pk]),
        "expiresAt": assignment.expires_at.isoformat(),
        "answers": answers,
        "editable": editable,
        "campaignId": assignment.hit.campaign_id,
    }


def assignment_page_context(*, assignment: Assignment, page_data: dict) -> dict:
    """The assignment's own values on its page: its URLs, its lease and the page's data."""
    return {
        "assignment": assignment,
        "submit_url": reverse("work_submit", args=[assignment.pk]),
        "return_url": reverse("work_return", args=[assignment.pk]),
        "lease_ends_iso": date_filter(assignment.expires_at, "c"),
        "lease_ends_hm": time_filter(assignment.expires_at, "H:i"),
        "page_data_script": json_script(page_data, "page-data"),
    }


# ---- the frame ----------------------------------------------------------------------------------

_OPEN, _CLOSE = "\ue000", "\ue001"
SLOTS = frozenset(
    {
        "username",
        "csrf",
        "campaign_name",
        "submit_url",
        "return_url",
        "lease_ends_iso",
        "lease_ends_hm",
        "total",
        "items_html",
        "page_data_script",
    }
)
_FRAMES: dict[tuple, tuple[tuple[bool, str], ...]] = {}
_FRAMES_KEPT = 256


def _slot(name: str) -> str:
    return f"{_OPEN}{name}{_CLOSE}"


def _cut(text: str) -> tuple[tuple[bool, str], ...] | None:
    """The rendered frame as (is_slot, text) pieces; None if a slot is not one of SLOTS (never kept)."""
    first, *rest = text.split(_OPEN)
    pieces = [(False, first)]
    for part in rest:
        name, sep, after = part.partition(_CLOSE)
        if not sep or name not in SLOTS:
            return None
        pieces += [(True, name), (False, after)]
    return tuple(pieces)


def _frame(key: tuple, context: Callable[[], dict]) -> tuple[tuple[bool, str], ...] | None:
    frame = _FRAMES.get(key)
    if frame is None:
        frame = _cut(render_to_string("work/hit.html", context()))
        if frame is None:
            return None
        if len(_FRAMES) >= _FRAMES_KEPT:
            _FRAMES.clear()
        _FRAMES[key] = frame
    return frame


def hit_blank_items(*, hit: Hit, campaign: Campaign, rules: dict) -> dict:
    """{"html", "total", "kind"} of the HIT's items with nothing answered, as the edit page shows them.

    In the shared cache for as long as the items are (the key holds the HIT's creation time and the rules,
    so a changed rule or a reused id never gets another HIT's markup).
    """
    digest = hashlib.sha1(json.dumps(rules, sort_keys=True).encode()).hexdigest()[:16]
    key = f"hit-blank-items:{hit.pk}:{hit.created_at.timestamp()}:{digest}"
    blank = shared_cache.get(key)
    if blank is None:
        items = work_selectors.hit_items_for_leased_worker(hit=hit)
        context = hit_context(campaign=campaign, items=items, answers={}, mode="edit", stage=hit.stage)
        blank = {"html": str(context["items_html"]), "total": len(items), "kind": items[0]["kind"] if items else ""}
        if items:  # a HIT being built has no items yet: never remember that
            shared_cache.set(key, blank, work_selectors.HIT_ITEMS_CACHE_SECONDS)
    return blank


def hit_page_editable(request, *, assignment: Assignment, answers: dict) -> HttpResponse | None:
    """The page of an assignment the worker can still answer, from its campaign's frame; None when the
    request has flash messages to show (the caller renders the template then)."""
    if len(get_messages(request)):
        return None
    hit = assignment.hit
    campaign = hit.campaign
    rules = scales.hit_rules(campaign=campaign, stage=hit.stage)
    if answers:
        items = work_selectors.hit_items_for_leased_worker(hit=hit)
        shown = hit_context(campaign=campaign, items=items, answers=answers, mode="edit", stage=hit.stage)
        items_html, total, kind = str(shown["items_html"]), len(items), items[0]["kind"] if items else ""
    else:
        blank = hit_blank_items(hit=hit, campaign=campaign, rules=rules)
        items_html, total, kind = blank["html"], blank["total"], blank["kind"]
    user = request.user
    signed_in = bool(user.is_authenticated)
    role = user_role(user) or "" if signed_in else ""
    operator = is_operator(user) if signed_in else False
    key = (campaign.pk, hit.stage, kind, json.dumps(rules, sort_keys=True), signed_in, role, operator)
    frame = _frame(
        key,
        lambda: {
            **hit_context(campaign=campaign, items=[], answers={}, mode="edit", stage=hit.stage),
            "wording": similarity_wording(kind or "image_caption"),
            "campaign": SimpleNamespace(name=_slot("campaign_name")),
            "items_html": mark_safe(_slot("items_html")),  # noqa: S308 - a slot, filled with escaped markup
            "total": _slot("total"),
            "submit_url": _slot("submit_url"),
            "return_url": _slot("return_url"),
            "lease_ends_iso": _slot("lease_ends_iso"),
            "lease_ends_hm": _slot("lease_ends_hm"),
            "page_data_script": mark_safe(_slot("page_data_script")),  # noqa: S308 - a slot
            "csrf_token": _slot("csrf"),
            "user": SimpleNamespace(is_authenticated=signed_in, get_username=lambda: _slot("username")),
            "user_role": role,
            "user_is_operator": operator,
            "messages": (),
        },
    )
    if frame is None:
        return None
    own = assignment_page_context(
        assignment=assignment, page_data=hit_page_data(assignment=assignment, answers=answers, editable=True)
    )
    values = {
        "username": escape(user.get_username()) if signed_in else "",
        "csrf": get_token(request),
        "campaign_name": escape(campaign.name),
        "submit_url": escape(own["submit_url"]),
        "return_url": escape(own["return_url"]),
        "lease_ends_iso": escape(own["lease_ends_iso"]),
        "lease_ends_hm": escape(own["lease_ends_hm"]),
        "total": str(total),
        "items_html": items_html,
        "page_data_script": own["page_data_script"],
    }
    return HttpResponse("".join(values[text] if is_slot else text for is_slot, text in frame))
