"""Settings from the environment: production refuses unsafe starts, the embedded default needs nothing,
DATABASE_URL and the S3 variables switch backends, and S3 really works (moto's server on loopback)."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from django.conf import settings as django_settings
from django.core.files.storage import default_storage
from PIL import Image as PILImage

from annotator.datasets.services.imports import dataset_import
from annotator.models import Image

BASE_DIR = Path(django_settings.BASE_DIR)
PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'db': s.DATABASES['default'], 'storage': s.STORAGES['default']['BACKEND'], "
    "'eager': s.CELERY_TASK_ALWAYS_EAGER, 'broker': s.CELERY_BROKER_URL, 'debug': s.DEBUG}, default=str))"
)
CLEARED = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_TASK_ALWAYS_EAGER",
    "AWS_STORAGE_BUCKET_NAME",
    "DEBUG",
    "SECRET_KEY",
    "DJANGO_SETTINGS_MODULE",
    "MEDIA_ROOT",
    "CACHE_URL",
    "SESSION_ENGINE",
    "DATABASE_TRANSACTION_POOLING",
)


def run_settings(module: str, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED}
    environment.update(DJANGO_SETTINGS_MODULE=module, **env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=BASE_DIR, env=environment, capture_output=True, text=True, timeout=120
    )


def test_production_refuses_debug_on():
    result = run_settings("config.settings_production", DEBUG="true", SECRET_KEY="s" * 50)
    assert result.returncode != 0
    assert "refuses to start with DEBUG on" in result.stderr


def test_production_refuses_a_missing_secret_key():
    result = run_settings("config.settings_production", DEBUG="false")
    assert result.returncode != 0
    assert "without a SECRET_KEY" in result.stderr


def test_production_starts_with_debug_off_and_a_secret_key():
    result = run_settings("config.settings_production", DEBUG="false", SECRET_KEY="s" * 50)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["debug"] is False


def test_embedded_default_is_sqlite_at_an_absolute_path_eager_celery_and_local_files():
    result = run_settings("config.settings")
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout)
    assert probe["db"]["ENGINE"] == "django.db.backends.sqlite3"
    assert Path(probe["db"]["NAME"]).is_absolute() and Path(probe["db"]["NAME"]).parent == BASE_DIR / "var"
    assert probe["eager"] is True and probe["broker"] == "memory://"
    assert probe["storage"].endswith("FileSystemStorage")


def test_cache_url_reads_sessions_from_the_shared_cache_and_a_session_cache_needs_one():
    probe = PROBE.replace("'debug': s.DEBUG", "'sessions': s.SESSION_ENGINE, 'cache': s.CACHES['default']['BACKEND']")
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED}

    def run(**env):
        return subprocess.run(
            [sys.executable, "-c", probe],
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            env={**environment, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        )

    plain = json.loads(run().stdout)
    assert plain["sessions"] == "django.contrib.sessions.backends.db"
    shared = json.loads(run(CACHE_URL="redis://127.0.0.1:6379/3").stdout)
    assert shared["sessions"] == "django.contrib.sessions.backends.cached_db"
    assert shared["cache"] == "annotator.core.resilience.cache.FailSoftRedisCache"  # degrades to misses, never a 500
    refused = run(SESSION_ENGINE="django.contrib.sessions.backends.cached_db")
    # The traceback quotes the raising line too, so look for the exception as raised, not the message alone.
    assert refused.returncode != 0
    assert "django.core.exceptions.ImproperlyConfigured: SESSION_ENGINE=" in refused.stderr
    assert "needs CACHE_URL" in refused.stderr.strip().splitlines()[-1]


def test_database_url_broker_and_s3_variables_switch_the_backends():
    result = run_settings(
        "config.settings",
        DATABASE_URL="postgres://vericap:pw@db.internal:5433/vericap",
        CELERY_BROKER_URL="redis://redis:6379/0",
        AWS_STORAGE_BUCKET_NAME="vericap-media",
    )
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout)
    assert probe["db"]["ENGINE"] == "django.db.backends.postgresql"
    assert (probe["db"]["NAME"], probe["db"]["HOST"], str(probe["db"]["PORT"])) == ("vericap", "db.internal", "5433")
    assert probe["eager"] is False and probe["broker"] == "redis://redis:6379/0"
    assert probe["storage"] == "storages.backends.s3.S3Storage"
    assert "DISABLE_SERVER_SIDE_CURSORS" not in probe["db"]  # Django talks to PostgreSQL itself


def test_a_transaction_pooler_in_front_of_postgresql_turns_server_side_cursors_off():
    # PgBouncer in transaction mode: a cursor WITH HOLD would outlive the transaction on one server connection.
    result = run_settings(
        "config.settings",
        DATABASE_URL="postgres://vericap@pgbouncer:6432/vericap",
        DATABASE_TRANSACTION_POOLING="true",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["db"]["DISABLE_SERVER_SIDE_CURSORS"] is True


@pytest.fixture
def s3_server():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.mark.django_db
def test_an_import_into_s3_storage_stores_images_and_thumbnails_in_the_bucket(s3_server, settings, tmp_path):
    credentials = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
    client = boto3.client("s3", endpoint_url=s3_server, **credentials)
    client.create_bucket(Bucket="vericap-test")
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "vericap-test",
                "endpoint_url": s3_server,
                "access_key": "testing",
                "secret_key": "testing",
                "region_name": "us-east-1",
            },
        },
    }
    (tmp_path / "images").mkdir()
    PILImage.new("RGB", (64, 48), (10, 120, 200)).save(tmp_path / "images" / "1.png")
    (tmp_path / "captions.json").write_text(
        json.dumps(
            {"images": [{"id": 1, "file_name": "1.png"}], "annotations": [{"id": 9, "image_id": 1, "caption": "Blue."}]}
        )
    )

    dataset = dataset_import(name="on-s3", captions_path=tmp_path / "captions.json", images_path=tmp_path / "images")

    image = Image.objects.get(dataset=dataset)
    keys = {obj["Key"] for obj in client.list_objects_v2(Bucket="vericap-test")["Contents"]}
    assert keys == {image.file.name, image.thumbnail.name}
    body = client.get_object(Bucket="vericap-test", Key=image.thumbnail.name)["Body"].read()
    with default_storage.open(image.thumbnail.name) as handle:
        assert handle.read() == body
    thumbnail = PILImage.open(io.BytesIO(body))
    assert thumbnail.format == "JPEG" and thumbnail.size == (64, 48)
    assert image.thumbnail.url.startswith(s3_server)
    assert type(default_storage._wrapped).__name__ == "S3Storage"


def test_the_gunicorn_config_of_the_image_and_the_bench_loads():
    gunicorn = Path(sys.executable).with_name("gunicorn")
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED}
    result = subprocess.run(
        [str(gunicorn), "--check-config", "--print-config", "--config", "config/gunicorn.conf.py", "config.wsgi"],
        cwd=BASE_DIR,
        env={**environment, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    printed = dict(line.split("=", 1) for line in result.stdout.replace(" ", "").splitlines() if "=" in line)
    assert (printed["workers"], printed["threads"], printed["worker_class"]) == (
        "3",
        "8",
        "config.gunicorn_worker.SheddingWorker",
    )
