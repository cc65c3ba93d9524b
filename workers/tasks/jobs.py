"""The Celery options every background-job task shares (annotator/core/jobs.py: imports, builds, runs, exports)."""

from celery import shared_task


def job_task(*, name: str, hours: float, soft_margin_seconds: int = 60, transient_retries: int = 0, bind=False):
    """Decorate the task that runs one kind of background job.

    Each job task claims its job under a row lock, so a redelivered or duplicated message does nothing while
    another runs it: that is what makes acks_late with reject_on_worker_lost safe, and a job whose worker
    died is delivered again and resumes. The soft limit lets the job record its own failure before the hard
    limit kills it. With `transient_retries`, a lost connection (broker, storage) is retried with backoff;
    without, every failure is recorded on the job and its requester retries it (annotator.core.jobs.job_retry).
    """
    seconds = int(hours * 3600)
    options = {
        "name": name,
        "bind": bind,
        "acks_late": True,
        "reject_on_worker_lost": True,
        "time_limit": seconds,
        "soft_time_limit": seconds - soft_margin_seconds,
    }
    if transient_retries:
        options.update(autoretry_for=(ConnectionError, TimeoutError), retry_backoff=True, max_retries=transient_retries)
    return shared_task(**options)
