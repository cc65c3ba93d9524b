"""A requester, in Debian's Chromium: import an outside pool as a zip from the dataset's pools page, see the
duplicates of test images it reported, score it, look at the preview of each target's proposed images,
add them, and create the verification campaign. Screenshots go to test-artifacts/pool-*.png."""

import zipfile

import pytest

from annotator import models
from tests import factories
from tests.annotator.finegrained.pool_support import PoolWorld
from tests.e2e.support import assert_accessible, logged_in_context, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_requester_imports_a_pool_previews_the_enlargement_and_adds_it(browser, live_server, tmp_path):
    requester = factories.user_with_role(models.Role.REQUESTER, username="req-pool")
    world = PoolWorld(tmp_path, images=16, pool_size=24, owner=requester)
    archive = tmp_path / "pool.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted(world.pool_dir.iterdir()):
            out.write(path, arcname=path.name)

    page = logged_in_context(browser, live_server, requester, viewport={"width": 1200, "height": 900}).new_page()
    page.goto(f"{live_server.url}/datasets/{world.dataset.pk}/")
    page.get_by_role("link", name="Outside image pools and gallery enlargement").click()
    page.get_by_label("Name").fill("flickr extra")
    page.get_by_label("Images (a .zip)").set_input_files(str(archive))
    page.get_by_role("button", name="Import").click()
    page.wait_for_url("**/pools/*/")
    # The import runs beside the request; the job widget follows it and reloads the page when it ends.
    page.get_by_role("button", name="Score and preview").wait_for(timeout=90_000)
    pool = models.ImagePool.objects.get(dataset=world.dataset)
    assert pool.status == models.PoolStatus.READY
    text = page.inner_text("main") if page.locator("main").count() else page.inner_text("body")
    assert "Duplicates of test images" in text and "identical" in text and "near" in text
    assert_accessible(page)
    screenshot(page, "pool-1-imported")

    page.get_by_label("Pool images kept per target").fill("3")
    page.get_by_role("button", name="Score and preview").click()
    page.wait_for_url("**/enlargements/*/")
    # The scoring runs beside the request; the job widget follows it and reloads the page when it ends.
    page.get_by_role("button", name="Add these").wait_for(timeout=90_000)
    enlargement = models.GalleryEnlargement.objects.get(pool=pool)
    assert enlargement.status == models.EnlargementStatus.PROPOSED, enlargement.error
    assert page.locator("section.enlargement-target").count() >= 10
    assert page.locator("section.enlargement-target img").count() > page.locator("section.enlargement-target").count()
    assert not models.GalleryAddition.objects.exists()  # nothing added before the person confirms
    assert_accessible(page)
    screenshot(page, "pool-2-preview")

    page.get_by_role("button", name="Add these").click()
    page.wait_for_url("**/enlargements/*/")
    assert (
        models.GalleryAddition.objects.filter(enlargement=enlargement).count()
        == enlargement.proposal["counts"]["proposed"]
    )
    page.get_by_role("button", name="Create the verification campaign").click()
    page.wait_for_url("**/campaigns/*/")
    enlargement.refresh_from_db()
    assert enlargement.verification is not None
    screenshot(page, "pool-3-verification-campaign")
