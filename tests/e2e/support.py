"""Helpers of the browser tests: screenshots as test artifacts, a logged-in browser context."""

import time
from pathlib import Path

from django.conf import settings
from django.test import Client

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def screenshot(page, name: str, *, full_page: bool = True) -> Path:
    """Save what the person sees to test-artifacts/<name>.png (gitignored) and return the path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def logged_in_context(browser, live_server, user, **kwargs):
    """A browser context that carries `user`'s session cookie (the log-in form is tested elsewhere)."""
    client = Client()
    client.force_login(user)
    context = browser.new_context(**kwargs)
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    return context


def wait_until(page, expression: str, *, timeout: float = 10.0) -> None:
    """Wait until a JavaScript expression is true in the page. Playwright's wait_for_function evaluates its
    predicate with eval, which the Content-Security-Policy (no 'unsafe-eval') refuses; page.evaluate is not
    subject to it."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {expression}")
        page.wait_for_timeout(50)


AXE_SOURCE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}));
}"""


def axe_violations(page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is now (minor and moderate ones aside).

    axe is put into the page through the DevTools protocol (page.evaluate), which the page's
    Content-Security-Policy does not govern, so the product's pages are checked under their real policy."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_SOURCE.read_text())
    return [v for v in page.evaluate(AXE_RUN) if v["impact"] in ("serious", "critical")]


def assert_accessible(page) -> None:
    """Fail with axe's findings when the page has a serious or critical accessibility violation."""
    found = axe_violations(page)
    assert not found, f"axe-core on {page.url}:\n" + "\n".join(
        f"  {v['impact']} {v['id']}: {v['help']} at {', '.join(v['nodes'])}" for v in found
    )
