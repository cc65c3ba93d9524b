"""The HIT page from its campaign's frame: the same page the template renders, for every worker and state."""

import re

import pytest
from django.urls import reverse

from annotator.crowd.selectors.work import hit_item_tokens
from annotator.crowd.views import hit_page
from annotator.models import Scale
from tests.annotator.crowd.test_work_views import claim, post_json, worker_client
from tests.factories import live_campaign_with_hits

pytestmark = pytest.mark.django_db

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')


@pytest.fixture(autouse=True)
def _fresh_frames(settings):
    settings.MTURK_VERIFY_ARRIVALS = False
    hit_page._FRAMES.clear()
    yield
    hit_page._FRAMES.clear()


def _template_page(client, assignment, monkeypatch) -> str:
    """The page as the template renders it for this request (the frame turned off)."""
    with monkeypatch.context() as patch:
        patch.setattr(hit_page, "hit_page_editable", lambda request, **kwargs: None)
        return client.get(reverse("work_hit", args=[assignment.pk])).content.decode()


def _same_page(framed: str, rendered: str) -> None:
    # Each page masks the CSRF token afresh; everything else is the same bytes.
    assert CSRF.sub("csrf", framed) == CSRF.sub("csrf", rendered)
    assert len(CSRF.findall(framed)) == 3  # the HIT form, the return form and the log-out form


@pytest.mark.parametrize("scale", [Scale.FOUR_CHOICE, Scale.SIMILARITY])
def test_the_framed_page_is_the_template_page(monkeypatch, scale):
    campaign = live_campaign_with_hits(hits=1, candidates=3, redundancy=2, scale=scale, name='Dogs & "cats" <b>')
    client, worker = worker_client(campaign)
    assignment = claim(client, campaign)
    framed = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    assert hit_page._FRAMES, "the editable page came from a frame"
    _same_page(framed, _template_page(client, assignment, monkeypatch))
    assert "Dogs &amp; &quot;cats&quot; &lt;b&gt;" in framed and "<b>" not in framed.split("<main")[1].split("<h1>")[0]
    assert f'action="/work/assignments/{assignment.pk}/submit"' in framed
    assert f'action="/work/assignments/{assignment.pk}/return"' in framed


def test_a_second_worker_gets_the_same_frame_with_their_own_values(monkeypatch):
    campaign = live_campaign_with_hits(hits=1, candidates=3, redundancy=2)
    first_client, _ = worker_client(campaign)
    second_client, second = worker_client(campaign)
    first, other = claim(first_client, campaign), claim(second_client, campaign)
    first_client.get(reverse("work_hit", args=[first.pk]))
    framed = second_client.get(reverse("work_hit", args=[other.pk])).content.decode()
    assert len(hit_page._FRAMES) == 1
    assert second.user.get_username() in framed and f"/work/assignments/{other.pk}/submit" in framed
    assert f"/work/assignments/{first.pk}/" not in framed
    _same_page(framed, _template_page(second_client, other, monkeypatch))


def test_saved_answers_show_on_the_framed_page_escaped(monkeypatch):
    campaign = live_campaign_with_hits(hits=1, candidates=2)
    client, _ = worker_client(campaign)
    assignment = claim(client, campaign)
    token = next(iter(hit_item_tokens(hit=assignment.hit)))
    body = {"item_token": token, "choice": "mostly_no", "shortcomings": ["wrong_way"], "wrong_aspects": ["color"]}
    post_json(client, reverse("work_answer", args=[assignment.pk]), {**body, "comment": "<script>x</script>"})
    framed = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    assert 'value="mostly_no" checked' in framed and 'value="color" checked' in framed
    assert "<script>x</script>" not in framed and "&lt;script&gt;x&lt;/script&gt;" in framed
    _same_page(framed, _template_page(client, assignment, monkeypatch))


def test_a_username_is_escaped_in_the_frame():
    campaign = live_campaign_with_hits(hits=1, candidates=2)
    client, worker = worker_client(campaign)
    worker.user.username = "<i>eve</i>"
    worker.user.save()
    assignment = claim(client, campaign)
    framed = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    assert "&lt;i&gt;eve&lt;/i&gt;" in framed and "<i>eve</i>" not in framed


def test_flash_messages_are_shown_by_the_template_page():
    campaign = live_campaign_with_hits(hits=2, candidates=2)
    client, worker = worker_client(campaign)
    worker.auto_accept_next = True
    worker.save()
    assignment = claim(client, campaign)
    answers = [{"item_token": token, "choice": "yes"} for token in hit_item_tokens(hit=assignment.hit)]
    submitted = client.post(reverse("work_submit", args=[assignment.pk]), {"answers": answers}, "application/json")
    following = submitted.json()["next_url"]
    page = client.get(following)
    assert "Here is your next HIT" in page.content.decode()
    again = client.get(following).content.decode()  # shown once, then the frame serves the page
    assert "Here is your next HIT" not in again and hit_page._FRAMES


def test_a_changed_rule_gets_a_new_frame():
    campaign = live_campaign_with_hits(hits=2, candidates=2)
    client, _ = worker_client(campaign)
    assignment = claim(client, campaign)
    client.get(reverse("work_hit", args=[assignment.pk]))
    campaign.rationale_followups = not campaign.rationale_followups
    campaign.save()
    client.get(reverse("work_hit", args=[assignment.pk]))
    assert len(hit_page._FRAMES) == 2
