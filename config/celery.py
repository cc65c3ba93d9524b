import os
import time

from celery import Celery
from celery.signals import before_task_publish

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("vericap")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"], related_name="tasks")


@before_task_publish.connect
def _stamp_sent_at(headers=None, **kwargs):
    """When the message was sent: /healthz reports the age of the oldest task waiting in each queue."""
    if headers is not None:
        headers.setdefault("sent_at", time.time())
