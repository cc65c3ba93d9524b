"""A worker does correction HITs with the keyboard in Debian's Chromium: accept one with A, then edit a
known-wrong proposal (E, fix the word, Ctrl+Enter); the caption's history shows the new version."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

import config.urls
from annotator.crowd.services.workers import worker_for_user
from annotator.finegrained.services.refinement.proposals import (
    proposals_import,
    refinement_create,
    refinement_filter,
    refinement_launch,
)
from annotator.models import CaptionVersion, CorrectionAssignment, Role, VersionSource
from annotator.scenarios import synthetic
from tests.annotator.finegrained.refinement_support import RefinementWorld
from tests.e2e.support import assert_accessible, logged_in_context, screenshot, wait_until
from tests.factories import user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def media_served(settings, monkeypatch):
    for pattern in config.urls.urlpatterns:
        if "document_root" in getattr(pattern, "default_args", {}):
            monkeypatch.setitem(pattern.default_args, "document_root", str(settings.MEDIA_ROOT))


def test_correction_hits_with_the_keyboard(live_server, browser, media_served, tmp_path):
    world = RefinementWorld(tmp_path, images=6, seed=4)
    captions = list(world.dataset.captions.select_related("image").order_by("pk")[:2])
    first, second = captions
    scene = world.scenes[first.image.source_id]
    right = f"<b>{first.text.rstrip('.')}</b> on the {scene['background']} ground."  # markup must stay text
    second_scene = world.scenes[second.image.source_id]
    second_group = second_scene["groups"][0]
    wrong_colour_2 = next(c for c in sorted(synthetic.COLORS) if c != second_group["color"])
    noun = second_group["kind"] if second_group["count"] == 1 else synthetic.PLURALS[second_group["kind"]]
    wrong = f"{second.text.rstrip('.')} with {wrong_colour_2} {noun}."
    rows = [
        {"caption_id": first.source_id, "proposal": right},
        {"caption_id": second.source_id, "proposal": wrong},
    ]
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="Refine synthetic", scorer="")
    proposals_import(
        refinement=refinement,
        upload=SimpleUploadedFile("p.jsonl", "\n".join(json.dumps(r) for r in rows).encode()),
    )
    refinement_filter(refinement=refinement)
    refinement_launch(refinement=refinement)
    user = user_with_role(Role.WORKER)
    worker = worker_for_user(user=user)

    context = logged_in_context(browser, live_server, user, viewport={"width": 1100, "height": 800})
    page = context.new_page()
    page.goto(f"{live_server.url}/work/corrections/")
    page.click(f"#start-{refinement.pk}")
    page.wait_for_selector("#correction-form")
    assert page.locator("#proposal mark.added").count() >= 1
    assert "<b>" in page.inner_text("#proposal")  # escaped, shown as text
    assert page.locator("#proposal b").count() == 0
    wait_until(page, "document.getElementById('edit-count').textContent.includes('No changes')")
    screenshot(page, "correction-hit-accept", full_page=False)
    assert_accessible(page)
    accepted_url = page.url
    with page.expect_navigation():
        page.keyboard.press("a")  # accept
    assert page.url != accepted_url
    wait_until(page, f"document.getElementById('correction-text').value.includes('{wrong_colour_2}')")

    # The second proposal is wrong: edit with E, replace the wrong colour, submit with Ctrl+Enter.
    page.keyboard.press("e")
    wait_until(page, "document.activeElement && document.activeElement.id === 'correction-text'")
    value = page.input_value("#correction-text")
    fixed = value.replace(f" with {wrong_colour_2} {noun}", f" with {second_group['color']} {noun}")
    page.fill("#correction-text", fixed)
    wait_until(page, "document.getElementById('edit-count').textContent.includes('changed')")
    screenshot(page, "correction-hit-edit", full_page=False)
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    assert page.url.endswith("/work/corrections/")
    assert "nothing left" in page.inner_text(".messages")

    done = {a.proposal.caption_id: a for a in CorrectionAssignment.objects.filter(worker=worker)}
    assert done[first.pk].action == "accept" and done[first.pk].edit_distance == 0
    assert done[second.pk].action == "correct"
    assert 0 < done[second.pk].edit_distance <= max(len(wrong_colour_2), len(second_group["color"]))
    latest = CaptionVersion.objects.filter(caption=second).order_by("-version").first()
    assert latest.source == VersionSource.CORRECTION and second_group["color"] in latest.text
    assert CaptionVersion.objects.get(caption=first, version=2).source == VersionSource.PROPOSAL

    requester = logged_in_context(browser, live_server, world.requester, viewport={"width": 1100, "height": 700})
    history = requester.new_page()
    history.goto(f"{live_server.url}/captions/{second.pk}/history/")
    rows = history.locator("#history tbody tr")
    assert rows.count() == 2
    assert "Corrected" in rows.nth(1).inner_text() or "corrected" in rows.nth(1).inner_text()
    screenshot(history, "correction-history", full_page=False)
    assert_accessible(history)
    overview = requester.new_page()
    overview.goto(f"{live_server.url}/refinements/{refinement.pk}/")
    assert overview.locator("table mark.added").count() >= 2
    screenshot(overview, "refinement-page", full_page=True)
    assert_accessible(overview)
