"""/healthz against the real Redis broker (not eager): reachable is ok, unreachable is a 503 naming it."""

import pytest

from config.celery import app as celery_app

pytestmark = pytest.mark.django_db


@pytest.fixture
def real_broker(monkeypatch):
    """Point the Celery app at a broker for one test, the way CELERY_BROKER_URL does in production.

    Celery reads the CELERY_BROKER_URL environment variable before its own setting, so both are set.
    """
    saved = celery_app.conf.task_always_eager, celery_app.conf.broker_url

    def use(url):
        monkeypatch.setenv("CELERY_BROKER_URL", url)
        celery_app.conf.task_always_eager = False
        celery_app.conf.broker_url = url

    yield use
    celery_app.conf.task_always_eager, celery_app.conf.broker_url = saved


def test_healthz_reaches_the_real_redis_broker(client, real_broker):
    real_broker("redis://127.0.0.1:6379/2")
    response = client.get("/healthz")
    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["broker"] == "ok (redis)"


def test_healthz_is_503_when_the_broker_is_down(client, real_broker):
    real_broker("redis://127.0.0.1:1/0")  # nothing listens on port 1
    response = client.get("/healthz")
    assert response.status_code == 503, response.json()
    assert response.json()["checks"]["broker"].startswith("error")
    assert response.json()["checks"]["database"].startswith("ok")
