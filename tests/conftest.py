import pytest


@pytest.fixture(autouse=True)
def _media_in_tmp(settings, tmp_path):
    """Every test writes its files under its own temporary directory, never into var/."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    }


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Factories hash a password per user; the production hasher would make every test slow."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: the API throttles count requests per address in it, and the
    schemathesis run alone makes more calls from 127.0.0.1 than a minute allows, which would refuse the
    next test's calls with 429."""
    from django.core.cache import cache

    cache.clear()


def _transactional(request) -> bool:
    marker = request.node.get_closest_marker("django_db")
    in_marker = marker is not None and (marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    return bool(in_marker) or bool({"transactional_db", "live_server"} & set(request.fixturenames))


@pytest.fixture(autouse=True)
def background_tasks(request, monkeypatch):
    """The long tasks a request handed to the background (annotator.core.queue), as (task name, args).

    A test inside a transaction that is rolled back (pytest-django's default) cannot let a thread do the
    work: the thread's own connection would not see the test's rows. There the handed-over task runs in the
    test's thread at the moment it would have started (django_capture_on_commit_callbacks(execute=True)),
    as eager Celery ran it before, and is recorded so the test can check that the request did not run it
    itself. Tests with transaction=True (and the browser tests) get the real threads; they join them with
    annotator.core.queue.background_threads().
    """
    handed: list[tuple] = []
    if _transactional(request):
        from tests.background_support import background_join

        yield handed
        background_join()  # none may go on writing into the next test's database
        return
    from annotator.core import queue

    def run_here(task, args, kwargs):
        handed.append((task.name, *args))
        task.apply(args=list(args), kwargs=kwargs)

    monkeypatch.setattr(queue, "_background_start", run_here)
    yield handed


@pytest.fixture
def held_task():
    """held_task(name) holds that Celery task at its start until `.release` is set (see HeldTask)."""
    from tests.background_support import HeldTask

    held: list = []

    def hold(name: str):
        held.append(HeldTask(name))
        return held[-1]

    yield hold
    for each in held:
        each.close()


@pytest.fixture(autouse=True)
def webhook_dns(monkeypatch):
    """Webhook host names resolve from this table (name -> addresses), never from the network; a test adds
    its own names, and a name not in it fails as a DNS failure would. This replaces the one resolver hook
    (annotator.core.services.webhooks.targets.resolve). A webhook request to an address that is not loopback is
    refused here too, so no test sends traffic beyond the loopback whatever its endpoints' names are."""
    import ipaddress
    import socket

    from annotator.core.services.webhooks import targets, transport
    from annotator.models import DeliveryError

    public = ["93.184.215.14"]
    table = {
        "example.org": public,
        "hooks.example": public,
        "xn--bcher-kva.example": public,
        "private.example": ["10.1.2.3"],  # a public-looking name with an internal answer
        "mixed.example": [*public, "10.1.2.3"],
    }

    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(table[host])

    real_post = transport.webhook_post

    def loopback_only(*, address: str, **kwargs) -> int:
        if not ipaddress.ip_address(address).is_loopback:
            raise transport.DeliveryFailed(DeliveryError.REFUSED)
        return real_post(address=address, **kwargs)

    monkeypatch.setattr(targets, "resolve", resolve)
    monkeypatch.setattr(transport, "webhook_post", loopback_only)
    return table


@pytest.fixture(scope="session")
def tiny_clip_checkpoint(tmp_path_factory):
    """A tiny random-weight Hugging Face CLIP directory (tests/ranking_models.py), built once per session."""
    from tests.ranking_models import tiny_clip_dir

    return tiny_clip_dir(tmp_path_factory.mktemp("tiny-clip"))
