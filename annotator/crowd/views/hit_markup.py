"""The HIT page's items as HTML, built in Python: the same markup templates/work/hit.html used to loop over.

A HIT page holds 18 items of up to 18 inputs each; through the template language that was about a
thousand variable lookups, each resolved, localized and escaped, and half the page's CPU. Here each item
is a few string joins, with every value from the items or the worker's answers passed through `escape`
(the same escaping as the template's autoescape). The parts that depend only on the campaign (the
choices, reasons and aspects with their labels, the slider's anchors) are escaped once per page.
Nothing here decides what a worker sees: the items come from hit_worker_items, unchanged.
"""

import html

from django.utils.safestring import SafeString, mark_safe


def escape(value) -> str:
    """django.utils.html.escape's output (html.escape of the text, quotes included), without its lazy-string
    wrapper, which cost more than the escaping itself over the page's ~350 values."""
    return html.escape(str(value))


def _attr_disabled(mode: str, lead: str = " ") -> str:
    return "" if mode == "edit" else f"{lead}disabled"


def _has_score(saved: dict) -> bool:
    score = saved.get("score")
    return score is not None and score != ""


def _pair(item: dict, number: str) -> str:
    kind = item["kind"]
    out = [f'<div class="pair pair-{escape(kind)}">\n']
    if kind != "caption_caption":
        out.append(
            f'  <a class="thumb" href="{escape(item["image_url"])}" data-zoom aria-label="Enlarge the image of item'
            f' {number}">\n    <img src="{escape(item["thumbnail_url"])}" alt="Image of item {number}"'
            ' decoding="async">\n  </a>\n'
        )
    if kind == "image_image":
        out.append(
            f'  <a class="thumb" href="{escape(item["other_image_url"])}" data-zoom aria-label="Enlarge the second'
            f' image of item {number}">\n    <img src="{escape(item["other_thumbnail_url"])}" alt="Second image of'
            f' item {number}" decoding="async">\n  </a>\n'
        )
    else:
        out.append(
            '  <div class="texts">\n    <p class="caption"><span class="visually-hidden">Description: </span>'
            f"{escape(item['caption'])}</p>\n"
        )
        if kind == "caption_caption":
            out.append(
                '    <p class="caption"><span class="visually-hidden">Second sentence: </span>'
                f"{escape(item['other_caption'])}</p>\n"
            )
        out.append("  </div>\n")
    out.append("</div>\n")
    return "".join(out)


def _slider(item: dict, number: str, token: str, saved: dict, mode: str, anchors: str) -> str:
    kind = item["kind"]
    if kind == "caption_caption":
        question = "How similar in meaning are the two sentences?"
    elif kind == "image_image":
        question = "How similar are the two scenes?"
    else:
        question = "How well does the sentence match the image?"
    rated = _has_score(saved)
    value = escape(str(saved["score"])) if rated else "2.5"
    return (
        f'    <fieldset class="slider"{_attr_disabled(mode)}>\n'
        f'      <legend id="q-{number}">{question}</legend>\n'
        f'      <input type="range" min="0" max="5" step="0.01" name="score-{token}" id="score-{token}"\n'
        f'             value="{value}"\n'
        f'             data-touched="{"1" if rated else "0"}"\n'
        f'             aria-labelledby="q-{number}" aria-describedby="anchors-{number}">\n'
        f'      <ol class="anchors" id="anchors-{number}" aria-hidden="true">{anchors}</ol>\n'
        f'      <p class="slider-state muted" aria-live="polite">'
        f"{'Rated' if rated else 'Not rated yet: move the slider'}</p>\n"
        "    </fieldset>\n"
    )


def _choices(item: dict, token: str, mode: str, parts: dict) -> str:
    out = [
        f'    <fieldset class="choices"{_attr_disabled(mode)}>\n'
        "      <legend>Is the image correctly described?</legend>\n"
    ]
    for value, label, key, checked in item["choice_rows"]:
        out.append(
            f'      <label class="choice"><input type="radio" name="choice-{token}" value="{escape(value)}"'
            f'{" checked" if checked else ""}> <kbd aria-hidden="true">{key}</kbd> {escape(label)}</label>\n'
        )
    out.append("    </fieldset>\n")
    if parts["followups"]:
        if not item["reasons_hidden"]:
            out.append(
                f'    <fieldset class="reasons"{_attr_disabled(mode, " ")}>\n'
                '      <legend>Why? The description ... <span class="muted">(tick all that apply)</span></legend>\n'
            )
            for value, label, checked in item["reason_rows"]:
                out.append(
                    f'      <label><input type="checkbox" name="shortcomings-{token}" value="{escape(value)}"'
                    f"{' checked' if checked else ''}> {escape(label)}</label>\n"
                )
            out.append("    </fieldset>\n")
        if not item["aspects_hidden"]:
            out.append(
                f'    <fieldset class="aspects"{_attr_disabled(mode, " ")}>\n'
                '      <legend>What is described in a wrong way?</legend>\n      <div class="aspect-grid">\n'
            )
            for value, label, checked in item["aspect_rows"]:
                out.append(
                    f'      <label><input type="checkbox" name="aspects-{token}" value="{escape(value)}"'
                    f"{' checked' if checked else ''}> {escape(label)}</label>\n"
                )
            out.append("      </div>\n    </fieldset>\n")
    return "".join(out)


def hit_items_html(
    *, items: list[dict], mode: str, similarity: bool, followups: bool, wording: list[dict]
) -> SafeString:
    """The <section class="item"> of every row of _hit_context's items, in order."""
    total = str(len(items))
    anchors = "".join(
        f'<li title="{escape(w["text"])}" class="anchor-{w["value"]}">{escape(w["label"])}</li>' for w in wording
    )
    parts = {"followups": followups}
    out = []
    for item in items:
        number, saved = item["number"], item["saved"]
        token = escape(item["token"])
        comment = saved.get("comment") or ""
        seconds = saved.get("seconds_spent") or 0
        answer = (
            _slider(item, number, token, saved, mode, anchors) if similarity else _choices(item, token, mode, parts)
        )
        out.append(
            f'  <section class="item" id="item-{number}" data-token="{token}" data-number="{number}" tabindex="-1"'
            f' aria-labelledby="item-{number}-title">\n'
            f'    <h2 class="item-title" id="item-{number}-title">Item {number} <span class="muted">of {total}</span>'
            ' <span class="state" aria-hidden="true"></span></h2>\n'
            f'    <div class="item-body layout-{escape(item["kind"])}">\n'
            f"{_pair(item, number)}"
            '    <div class="answer">\n'
            f"{answer}"
            f'    <details class="comment"{" open" if comment else ""}>\n'
            '      <summary>Comment <span class="muted">(optional)</span></summary>\n'
            f'      <label for="comment-{token}" class="visually-hidden">Comment on item {number}</label>\n'
            f'      <textarea id="comment-{token}" name="comment-{token}" rows="2" maxlength="2000"'
            f"{_attr_disabled(mode)}>{escape(comment)}</textarea>\n"
            "    </details>\n"
            "    </div>\n"
            "    </div>\n"
            f'    <input type="hidden" name="seconds-{token}" value="{escape(str(seconds))}">\n'
            "  </section>\n"
        )
    return mark_safe("".join(out))  # noqa: S308 - every value above went through escape()
