"""The HIT rules are said once (annotator/crowd/scales.py): the services apply them and the HIT page hands the
same data to static/js/hit.js, which has no copy of its own."""

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from annotator.crowd.scales import MISSING, answer_followups, answer_missing_part, hit_rules
from annotator.crowd.services.answers import answer_save
from annotator.models import Choice, Shortcoming, WrongAspect
from tests.annotator.crowd.test_work_views import claim, post_json, worker_client
from tests.factories import live_campaign_with_hits

pytestmark = pytest.mark.django_db

HIT_JS = Path(settings.BASE_DIR) / "static" / "js" / "hit.js"


def _page_rules(html: str) -> dict:
    return json.loads(re.search(r'<script id="hit-rules" type="application/json">(.*?)</script>', html, re.S).group(1))


@pytest.mark.parametrize("followups", [True, False])
def test_the_hit_page_hands_hit_js_the_server_rules(followups):
    campaign = live_campaign_with_hits(hits=1, candidates=2, rationale_followups=followups)
    client, _worker = worker_client(campaign)
    assignment = claim(client, campaign)
    html = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    assert _page_rules(html) == hit_rules(campaign=campaign)
    assert _page_rules(html)["needsReasons"] == (["mostly_no", "partially_yes"] if followups else [])


def test_hit_js_has_no_copy_of_the_rules():
    source = HIT_JS.read_text()
    for literal in (*sorted({Choice.PARTIALLY_YES, Choice.MOSTLY_NO}), Shortcoming.WRONG_WAY, *MISSING.values()):
        assert f'"{literal}"' not in source and f"'{literal}'" not in source, literal
    assert 'getElementById("hit-rules")' in source


def test_follow_ups_and_what_is_missing():
    campaign = live_campaign_with_hits(hits=1, candidates=1)
    rules = hit_rules(campaign=campaign)
    assert answer_followups(rules=rules, choice=Choice.YES, shortcomings=[Shortcoming.WRONG_WAY]) == (False, False)
    assert answer_followups(rules=rules, choice=Choice.MOSTLY_NO, shortcomings=[]) == (True, False)
    assert answer_followups(rules=rules, choice=Choice.MOSTLY_NO, shortcomings=[Shortcoming.WRONG_WAY]) == (True, True)

    def missing(choice, shortcomings=(), aspects=()):
        return answer_missing_part(
            rules=rules, choice=choice, score=None, shortcomings=list(shortcomings), wrong_aspects=list(aspects)
        )

    assert missing("") == MISSING["answer"]
    assert missing(Choice.YES) is None
    assert missing(Choice.PARTIALLY_YES) == MISSING["reason"]
    assert missing(Choice.PARTIALLY_YES, [Shortcoming.WRONG_WAY]) == MISSING["aspects"]
    assert missing(Choice.PARTIALLY_YES, [Shortcoming.WRONG_WAY], [WrongAspect.values[0]]) is None
    campaign.rationale_followups = False
    assert (
        answer_missing_part(
            rules=hit_rules(campaign=campaign), choice=Choice.MOSTLY_NO, score=None, shortcomings=[], wrong_aspects=[]
        )
        is None
    )


def test_autosave_answers_with_the_same_rule():
    """What autosave reports missing is the rule's words; follow-ups that no longer apply are dropped."""
    campaign = live_campaign_with_hits(hits=1, candidates=2)
    client, _worker = worker_client(campaign)
    assignment = claim(client, campaign)
    html = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    token = re.search(r'data-token="([^"]+)"', html).group(1)
    response = post_json(
        client,
        reverse("work_answer", args=[assignment.pk]),
        {"item_token": token, "choice": "mostly_no", "shortcomings": ["wrong_way"]},
    )
    assert response.json()["missing"] == MISSING["aspects"]
    answer = answer_save(
        assignment=assignment,
        item_token=token,
        choice="yes",
        shortcomings=["wrong_way"],
        wrong_aspects=["color"],
        worker=assignment.worker,
    )
    assert answer.shortcomings == [] and answer.wrong_aspects == []
