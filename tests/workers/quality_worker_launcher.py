"""Start a Celery worker for the kill test: short Redis visibility timeout, optionally a scoring that hangs.

With SLOW_SCORING_MARK set, assignment scoring writes that file and then sleeps inside its transaction
(holding the assignment's row lock), so the test can kill the process mid-task.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from config.celery import app  # noqa: E402

app.conf.broker_transport_options = {
    "visibility_timeout": 3,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
mark = os.environ.get("SLOW_SCORING_MARK")
if mark:
    from annotator.quality.services import scoring as quality

    original = quality._gold_outcome

    def hanging_gold_outcome(**kwargs):
        result = original(**kwargs)
        Path(mark).write_text("inside the scoring transaction")
        time.sleep(120)
        return result

    quality._gold_outcome = hanging_gold_outcome

app.worker_main(
    [
        "worker",
        "-Q",
        "default",
        "--pool=solo",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
        "-l",
        "INFO",
    ]
)
