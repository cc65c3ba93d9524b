"""The crowd's half of `make image-smoke` (bench/image_smoke.sh): HITs driven over HTTP through the containers.

Runs on the host, after the script has started the containers and `demo_setup` has made the demo campaign:
1. makes one local worker account per web container (a password, the worker role, the demo campaign's
   qualification passed, as bench/seeding.py does) straight in the smoke's database;
2. each worker, at the same time, through its own web container: GET the log-in page, POST the log-in form,
   open the worker home, claim a HIT of the demo campaign, load the HIT page, autosave every item, submit,
   as a browser does, with its cookies and the CSRF token (every request says it came through the TLS proxy,
   X-Forwarded-Proto: https, since production marks its cookies Secure and redirects plain http); then the
   same submit again through the other web container (a retry after the load balancer moved the browser);
3. checks the database: every acknowledged answer stored once, every acknowledged submit submitted once
   (one submit event), no HIT over its redundancy, and the worker container's Celery worker scored each
   submission (scored_at).
Exits non-zero with the reason when anything is off.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/image_smoke SECRET_KEY=<the containers' key> \\
        .venv/bin/python bench/image_smoke.py http://127.0.0.1:18080 http://127.0.0.1:18081
"""

import os
import re
import sys
import threading
import time
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PASSWORD = "smoke-Pass-4821"
TOKEN = re.compile(r'data-token="([0-9a-f]+)"')
CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
STATIC = re.compile(r'(?:href|src)="(/static/[^"]+)"')


def make_workers(*, campaign, count: int) -> list[str]:
    """`count` worker accounts with the smoke's password that passed `campaign`'s qualification: usernames."""
    from bench.seeding import seed_qualified_workers

    users = seed_qualified_workers(campaign=campaign, prefix=f"smoke-{int(time.time())}", count=count)
    for user in users:
        user.set_password(PASSWORD)
        user.save(update_fields=["password"])
    return [user.username for user in users]


class Browser:
    """One person's browser on one web container: cookies kept, Secure ones included (the TLS proxy's
    side of the connection is https), the CSRF token sent as Django expects it."""

    def __init__(self, base: str):
        self.base = base
        self.http = requests.Session()
        # The cookies go in a header of our own: requests' jar never sends a Secure cookie over plain http,
        # and this hop is plain http only because the TLS proxy in front of production is left out.
        self.http.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
        self.cookies = {}
        # One public name for every web container, as behind a load balancer: the Host header stays the
        # first container's when the browser is moved to another, and so do Origin and Referer (CSRF).
        host = base.split("://", 1)[1]
        origin = f"https://{host}"
        self.http.headers.update(
            {"Host": host, "X-Forwarded-Proto": "https", "Origin": origin, "Referer": origin + "/"}
        )

    def _send(self, method: str, path: str, headers: dict, **kwargs) -> requests.Response:
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        response = self.http.request(
            method, self.base + path, timeout=60, allow_redirects=False, headers={"Cookie": cookie, **headers}, **kwargs
        )
        for header in response.raw.headers.getlist("Set-Cookie"):
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response

    def get(self, path: str, **kwargs) -> requests.Response:
        return self._send("GET", path, kwargs.pop("headers", {}), **kwargs)

    def post(self, path: str, **kwargs) -> requests.Response:
        headers = {"X-CSRFToken": self.cookies.get("csrftoken", ""), **kwargs.pop("headers", {})}
        return self._send("POST", path, headers, **kwargs)


def expect(response: requests.Response, status: int, what: str) -> requests.Response:
    if response.status_code != status:
        raise AssertionError(f"{what}: {response.status_code} (expected {status}): {response.text[:300]}")
    return response


def one_hit(*, base: str, other: str, username: str, campaign_id: int, done: dict) -> None:
    """Log in and do one HIT through `base`, then send its submit again through `other`; records what the
    server acknowledged in `done`."""
    browser = Browser(base)
    form = expect(browser.get("/accounts/login/"), 200, "log-in page")
    static = STATIC.findall(form.text)
    if not static:
        raise AssertionError("log-in page links no static file")
    expect(browser.get(static[0]), 200, f"static file {static[0]} (collectstatic, WhiteNoise)")
    logged_in = browser.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": CSRF_INPUT.search(form.text).group(1),
        },
    )
    expect(logged_in, 302, "log-in")
    expect(browser.get("/work/"), 200, "worker home")
    claim = expect(browser.post(f"/work/campaigns/{campaign_id}/claim"), 200, "claim (answered with the HIT page)")
    location = claim.headers.get("Content-Location", "")
    if "/work/assignments/" not in location:
        raise AssertionError(f"claim gave no HIT: {location}")
    assignment_id = int(location.rstrip("/").rsplit("/", 1)[1])
    page = expect(browser.get(location), 200, "HIT page")
    tokens = list(dict.fromkeys(TOKEN.findall(page.text)))
    if not tokens:
        raise AssertionError("HIT page has no items")
    answers = []
    for n, token in enumerate(tokens):
        answer = {"item_token": token, "choice": "yes" if n % 3 else "no", "seconds_spent": 4.0}
        saved = browser.post(
            f"/work/assignments/{assignment_id}/answer", json=answer, headers={"Accept": "application/json"}
        )
        expect(saved, 200, f"autosave {n + 1}")
        done["answers"][(assignment_id, token)] = answer["choice"]
        answers.append(answer)
    submitted = browser.post(
        f"/work/assignments/{assignment_id}/submit", json={"answers": answers}, headers={"Accept": "application/json"}
    )
    expect(submitted, 200, "submit")
    done["submits"].add(assignment_id)
    # The same submit again through the other web container, as a browser retries after a lost answer
    # when the load balancer has moved it: the session is shared (Redis), and nothing is done twice.
    browser.base = other
    again = browser.post(
        f"/work/assignments/{assignment_id}/submit", json={"answers": answers}, headers={"Accept": "application/json"}
    )
    expect(again, 200, f"the same submit again via {other}")
    done["items"][assignment_id] = len(tokens)
    with done["lock"]:
        print(
            f"  {username} via {base}: logged in, claimed assignment {assignment_id}, {len(tokens)} autosaves,"
            f" submitted; the same submit via {other}: {again.status_code}"
        )


def check(*, done: dict, redundancy: int, wait_s: float = 120.0) -> list[str]:
    """What is wrong in the database after the run (empty: nothing)."""
    from django.db.models import Count

    from annotator.models import Answer, Assignment, AssignmentEvent, AssignmentStatus
    from bench.hit_serving import INVARIANTS, Recorder, verify

    recorder = Recorder()
    recorder.acked_answers = done["answers"]
    recorder.acked_submits = done["submits"]
    found = verify(recorder, redundancy)
    print("  database:", found)
    problems = [f"{key}: {found[key]}" for key in INVARIANTS if found[key]]
    for assignment_id, items in done["items"].items():
        stored = Answer.objects.filter(assignment_id=assignment_id).count()
        if stored != items:
            problems.append(f"assignment {assignment_id}: {stored} answers for {items} items")
        events = AssignmentEvent.objects.filter(assignment_id=assignment_id, to_status="submitted").count()
        if events != 1:
            problems.append(f"assignment {assignment_id}: {events} submit events")
    deadline = time.time() + wait_s  # the worker container scores each submission (Celery, default queue)
    while Assignment.objects.filter(pk__in=done["submits"], scored_at__isnull=True).exists():
        if time.time() > deadline:
            problems.append(f"the Celery worker scored no submission within {wait_s:.0f} s")
            break
        time.sleep(2)
    statuses = dict(
        Assignment.objects.filter(pk__in=done["submits"]).values_list("status").annotate(n=Count("id")).order_by()
    )
    print(f"  scored by the worker container: {statuses} (statuses after scoring)")
    if not set(statuses) <= {AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED}:
        problems.append(f"unexpected statuses after scoring: {statuses}")
    return problems


def main(bases: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from annotator.models import Campaign, CampaignStatus
    from annotator.scenarios.demo import DEMO_CAMPAIGN_NAME

    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN_NAME, status=CampaignStatus.LIVE)
    usernames = make_workers(campaign=campaign, count=len(bases))
    done = {"answers": {}, "submits": set(), "items": {}, "lock": threading.Lock()}
    errors = []

    def run(base, other, username):
        try:
            one_hit(base=base, other=other, username=username, campaign_id=campaign.pk, done=done)
        except Exception as error:  # reported below, the smoke fails
            errors.append(f"{username} via {base}: {error!r}")

    others = bases[1:] + bases[:1]
    threads = [threading.Thread(target=run, args=row) for row in zip(bases, others, usernames, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    problems = errors or check(done=done, redundancy=campaign.redundancy)
    for problem in problems:
        print("  FAILED:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:  # `make bench` runs every bench/*.py: this one needs the smoke's containers
        print("bench/image_smoke.py needs the web containers' addresses: run `make image-smoke`.")
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
