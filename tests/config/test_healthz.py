import pytest

pytestmark = pytest.mark.django_db


def test_healthz_reports_database_broker_and_storage(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "broker", "storage"}
    assert all(value.startswith("ok") for value in body["checks"].values())


def test_healthz_is_503_when_the_storage_fails(client, settings, tmp_path):
    """A broken dependency is reported with its error, not raised as a 500."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    settings.MEDIA_ROOT = blocker
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["storage"].startswith("error")
