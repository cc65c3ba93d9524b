import uuid

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection
from django.http import JsonResponse

from config.celery import app as celery_app


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return f"ok ({connection.vendor})"


def _check_broker() -> str:
    if celery_app.conf.task_always_eager:
        return "ok (eager: tasks run in-process)"
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
    return f"ok ({celery_app.conf.broker_url.split('://')[0]})"


def _check_storage() -> str:
    name = default_storage.save(f"healthz/{uuid.uuid4().hex}.txt", ContentFile(b"ok"))
    try:
        with default_storage.open(name) as handle:
            assert handle.read() == b"ok"
    finally:
        default_storage.delete(name)
    return f"ok ({type(default_storage).__name__})"


def healthz(request):
    """Report the database, the broker and the storage; 503 if any of them fails."""
    checks = {}
    healthy = True
    for name, check in (("database", _check_database), ("broker", _check_broker), ("storage", _check_storage)):
        try:
            checks[name] = check()
        except Exception as exc:  # a health check reports every failure instead of raising it
            checks[name] = f"error: {type(exc).__name__}: {exc}"
            healthy = False
    return JsonResponse({"status": "ok" if healthy else "error", "checks": checks}, status=200 if healthy else 503)
