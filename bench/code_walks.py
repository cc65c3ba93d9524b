"""How far a reader walks through the code for three journeys (issue 33): the files and folders of the project
that run, from the URL to the database and back, for

- build: a requester builds a campaign (the page's build button; Celery runs the build in the same thread);
- claim: a worker takes a HIT (POST work/campaigns/<id>/claim/);
- evaluate: a researcher evaluates uploaded rankings through POST /api/v1/evaluations/ (the task runs on commit).

Every Python function call is traced (sys.settrace) and its file kept if it lies under annotator/, api/ or
workers/; Django, DRF and the test's own helpers are not counted, nor module bodies that run on a first import. A folder is a file's directory; a step is the
first folder under annotator/ (a pipeline step of docs/architecture.md, or a package of the layer-first tree).

    .venv/bin/python bench/code_walks.py            # on the embedded SQLite, about a minute

The script uses only URL names, the REST API and the test factories, so the same file runs on an older commit
(copy it into a worktree of that commit) and the two reports compare. Output: one line per journey and the file
list with --files.
"""

import json
import os
import sys
import tempfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COUNTED = ("annotator", "api", "workers")
SKIPPED = ("annotator/migrations",)
# pytest imports this file as a module of its own: the walks go through a file, not a global.
WALKS_FILE = Path(os.environ.get("CODE_WALKS_FILE", Path(tempfile.gettempdir()) / "code_walks.json"))


class Tracer:
    def __init__(self):
        self.files: set[str] = set()

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code.co_name != "<module>":  # a function ran, not a first import
            path = frame.f_code.co_filename
            if path.startswith(str(ROOT)):
                relative = os.path.relpath(path, ROOT)
                if relative.startswith(COUNTED) and not relative.startswith(SKIPPED):
                    self.files.add(relative)
        return None

    def __enter__(self):
        sys.settrace(self)
        threading.settrace(self)  # the queue may enqueue, and eager Celery run, on a thread of its own
        return self

    def __exit__(self, *exc):
        sys.settrace(None)
        threading.settrace(None)


def walked(name: str, action):
    with Tracer() as tracer:
        result = action()
        for thread in threading.enumerate():  # long work the request handed to a background thread
            if thread.name.startswith("background ") and thread is not threading.current_thread():
                thread.join(timeout=600)
    walks = json.loads(WALKS_FILE.read_text()) if WALKS_FILE.exists() else {}
    walks[name] = sorted(tracer.files)
    WALKS_FILE.write_text(json.dumps(walks))
    return result


@pytest.fixture(autouse=True)
def long_work_here(monkeypatch):
    """Long work a request hands to a background thread runs in the request's thread at that moment (as the
    suite's conftest does): the test's transaction is never committed, so a thread would not see its rows."""
    import importlib

    try:
        queue = importlib.import_module("annotator.core.queue")
    except ImportError:  # the layer-first tree before the steps
        queue = importlib.import_module("annotator.core.queue")
    monkeypatch.setattr(
        queue, "_background_start", lambda task, args, kwargs: task.apply(args=list(args), kwargs=kwargs)
    )


@pytest.mark.django_db
def test_walk_build(django_capture_on_commit_callbacks):
    from django.test import Client
    from django.urls import reverse
    from rest_framework.test import APIClient

    from annotator.models import CampaignStatus, Role
    from tests.annotator.campaign_support import add_run, make_dataset
    from tests.factories import user_with_role

    requester = user_with_role(Role.REQUESTER)
    dataset = make_dataset(images=12)
    dataset.owner = requester
    dataset.save()
    runs = [add_run(dataset=dataset, name=name, seed=seed) for seed, name in enumerate(("clip", "minilm"))]
    api = APIClient()
    api.force_authenticate(requester)
    created = api.post(
        "/api/v1/campaigns/", {"dataset": dataset.pk, "runs": [r.pk for r in runs], "name": "walk"}, format="json"
    )
    assert created.status_code == 201, created.content
    campaign_id = created.json()["id"]
    client = Client()
    client.force_login(requester)

    def build():
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(reverse("campaign-action", args=[campaign_id, "build"]))

    response = walked("build", build)
    assert response.status_code == 302
    from annotator.models import Campaign

    assert Campaign.objects.get(pk=campaign_id).status == CampaignStatus.BUILT


@pytest.mark.django_db
def test_walk_claim():
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone

    from annotator.models import QualificationAttempt, Role, Worker
    from tests.factories import live_campaign_with_hits, user_with_role

    campaign = live_campaign_with_hits(hits=2, candidates=4)
    user = user_with_role(Role.WORKER)
    worker = Worker.objects.create(user=user)
    QualificationAttempt.objects.create(
        worker=worker, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
    )
    client = Client()
    client.force_login(user)
    client.get(reverse("work_home"))  # the session is warm, as a worker's is
    response = walked("claim", lambda: client.post(reverse("work_claim", args=[campaign.pk])))
    # The claim answers with the HIT page itself, naming its address (annotator/crowd/views/work.py).
    assert response.status_code == 200 and "/assignments/" in response["Content-Location"]


@pytest.mark.django_db
def test_walk_evaluate(tmp_path, django_capture_on_commit_callbacks):
    from rest_framework.test import APIClient

    from annotator.models import Role
    from tests.factories import user_with_role
    from tests.leaderboard_support import labelled_campaign, labelled_dataset, noisy_rankings

    owner = user_with_role(Role.REQUESTER)
    researcher = user_with_role(Role.RESEARCHER)
    dataset, truth = labelled_dataset(tmp_path=tmp_path)
    campaign = labelled_campaign(owner=owner, dataset=dataset, truth=truth)
    campaign.shared_with.add(researcher)
    body = {
        "campaign": campaign.pk,
        "name": "uploaded",
        "rankings": noisy_rankings(truth, dataset=dataset, noise=0.3, seed=5),
        "resamples": 20,
    }
    api = APIClient()
    api.force_authenticate(researcher)

    def evaluate():
        with django_capture_on_commit_callbacks(execute=True):
            return api.post("/api/v1/evaluations/", body, format="json")

    response = walked("evaluate", evaluate)
    assert response.status_code == 201, response.content


def report(show_files: bool) -> None:
    print(f"{'journey':<10} {'files':>5} {'folders':>7} {'steps':>5}  steps (annotator/<first folder>)")
    walks = json.loads(WALKS_FILE.read_text()) if WALKS_FILE.exists() else {}
    for name in ("build", "claim", "evaluate"):
        files = walks.get(name)
        if files is None:
            print(f"{name:<10} (did not run)")
            continue
        folders = {os.path.dirname(f) for f in files}
        steps = {f.split("/")[1] for f in files if f.startswith("annotator/") and f.count("/") >= 2}
        print(f"{name:<10} {len(files):>5} {len(folders):>7} {len(steps):>5}  {', '.join(sorted(steps))}")
        if show_files:
            for f in sorted(files):
                print(f"    {f}")


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    for name in ("DATABASE_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
    WALKS_FILE.unlink(missing_ok=True)
    code = pytest.main([__file__, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(ROOT)])
    report("--files" in sys.argv)
    sys.exit(code)
