"""A requester in Debian's Chromium: log in, upload the demo set (captions + zip), see its thumbnails.

Screenshots go to test-artifacts/ (gitignored): datasets-01-form.png ... datasets-04-phone.png.
"""

import zipfile
from pathlib import Path

import pytest
from django.conf import settings

from annotator.models import Dataset, Role
from tests.e2e.support import screenshot, wait_until
from tests.factories import user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DEMO = Path(settings.BASE_DIR) / "fixtures" / "demo"


def shot(page, name):
    screenshot(page, f"datasets-{name}", full_page=True)


def test_requester_uploads_the_demo_set_and_sees_thumbnails_with_captions(live_server, browser, tmp_path):
    user_with_role(Role.REQUESTER, username="req-upload", password="correct-horse-battery")
    archive = tmp_path / "demo-images.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for image in sorted((DEMO / "images").glob("*.jpg")):
            zf.write(image, f"images/{image.name}")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(30000)
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("User name").fill("req-upload")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Datasets").click()
    page.get_by_text("Import a dataset from your computer").click()
    page.get_by_label("Name").fill("my-photos")
    page.get_by_label("Captions file").set_input_files(str(DEMO / "captions.json"))
    page.get_by_label("Images (.zip)").set_input_files(str(archive))
    shot(page, "01-form")
    page.get_by_role("button", name="Import").click()
    page.wait_for_url("**/datasets/*/")
    # Answered at once: the import goes on in a thread of the server, and the page follows it until it is done.
    page.get_by_text("A close up of a tabby cat with green eyes.").wait_for(timeout=60_000)

    dataset = Dataset.objects.get(name="my-photos")
    assert dataset.images.count() == 19 and dataset.captions.count() == 95
    page.evaluate(
        "document.querySelectorAll('.thumbs img').forEach(i => { i.loading = 'eager'; })"
    )  # lazy below the fold
    wait_until(page, "Array.from(document.querySelectorAll('.thumbs img')).every(i => i.complete)")
    widths = page.eval_on_selector_all(".thumbs img", "imgs => imgs.map(i => i.naturalWidth)")
    assert len(widths) == 19 and all(0 < w <= settings.THUMBNAIL_SIZE for w in widths)  # thumbnails, served
    shot(page, "02-detail")

    page.get_by_role("link", name="All datasets").click()
    row = page.get_by_role("row", name="my-photos")
    assert "Ready" in row.inner_text() and "19" in row.inner_text()
    shot(page, "03-list")

    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.context.add_cookies(page.context.cookies())
    phone.goto(f"{live_server.url}/datasets/{dataset.pk}/")
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # no sideways scrolling
    shot(phone, "04-phone")


def test_a_refused_upload_lands_on_the_dataset_page_listing_every_offender(live_server, browser, tmp_path):
    """The upload is answered at once; the import (in a thread of the server) refuses it and the page, which
    follows it, names each missing file."""
    user_with_role(Role.REQUESTER, username="req-refused", password="correct-horse-battery")
    archive = tmp_path / "half.zip"
    kept = sorted((DEMO / "images").glob("*.jpg"))[:17]  # two of the 19 images are missing
    with zipfile.ZipFile(archive, "w") as zf:
        for image in kept:
            zf.write(image, image.name)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(30000)
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("User name").fill("req-refused")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Log in").click()
    # The log-in form is sent by script (static/js/retry_form.js): follow the page it lands on, not a URL typed
    # before the session exists.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Datasets").click()
    page.get_by_text("Import a dataset from your computer").click()
    page.get_by_label("Name").fill("half")
    page.get_by_label("Captions file").set_input_files(str(DEMO / "captions.json"))
    page.get_by_label("Images (.zip)").set_input_files(str(archive))
    page.get_by_role("button", name="Import").click()
    page.wait_for_url("**/datasets/*/")
    page.get_by_role("heading", name="The last import was refused").wait_for(timeout=60_000)

    dataset = Dataset.objects.get(name="half")
    assert dataset.status == "failed" and dataset.images.count() == 0
    assert page.get_by_role("heading", name="The last import was refused").is_visible()
    offenders = page.locator(".errorlist li").all_inner_texts()
    assert len(offenders) == 2 and all("not found in" in line for line in offenders)
    shot(page, "05-refused")
