import pytest

pytestmark = pytest.mark.django_db


def test_healthz_reports_every_part(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert {"database", "cache", "broker", "workers", "storage"} <= set(body["checks"])
    assert all(value.startswith("ok") for value in body["checks"].values()), body


def test_a_failing_storage_degrades_the_site_but_does_not_take_it_down(client, settings, tmp_path):
    """A broken dependency other than the database is reported with its error; the site still serves (200)."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    settings.MEDIA_ROOT = blocker
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "degraded"
    assert response.json()["checks"]["storage"].startswith("error")


def test_a_cache_that_is_down_is_reported_as_degraded(client, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "annotator.core.resilience.cache.FailSoftRedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        }
    }
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["cache"].startswith("error: ConnectionError")
    assert "sessions are read from the database" in body["checks"]["cache"]
