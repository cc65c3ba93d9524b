"""One Debian chromium for the browser tests, driven by Playwright's sync API."""

import os
from pathlib import Path

import pytest
from django.db import connections

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def browser(monkeypatch):
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is missing: `make test` installs it (apt-get install chromium)")
        pytest.skip("Debian chromium is not installed")
    from playwright import sync_api

    # Playwright's sync API runs an event loop in this thread; the ORM calls of the tests stay synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            # ORM calls made while Playwright's loop runs get their own connection (asgiref's context-local
            # storage); close it here, or the test database cannot be dropped at the end of the session.
            connections.close_all()
            browser.close()


@pytest.fixture(autouse=True)
def _autosave_soon(settings):
    """The HIT page sends a batch half a second after the last change (10 s by default), so that the tests
    that wait for "All answers saved." do not wait the whole batch delay; tests of batching set their own."""
    settings.HIT_AUTOSAVE_WAIT_SECONDS = 0.5
