"""Each Celery task name has one home (annotator.core.task_names) and matches a registered task."""

from celery import current_app

from annotator.core import task_names


def _declared() -> set[str]:
    return {value for key, value in vars(task_names).items() if key.isupper() and not value.endswith("*")}


def _registered() -> set[str]:
    current_app.loader.import_default_modules()
    return {name for name in current_app.tasks if name.startswith("workers.")}


def test_every_declared_name_is_a_registered_task():
    assert _declared() - _registered() == set()


def test_every_task_of_ours_has_its_name_declared():
    assert _registered() - _declared() == set()


def test_the_beat_schedule_and_routes_name_declared_tasks():
    from django.conf import settings

    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= _declared()
    routed = {name for name in settings.CELERY_TASK_ROUTES if not name.endswith("*")}
    assert routed <= _declared()
    assert current_app.amqp.router.route({}, task_names.RANKING_SHARD)["queue"].name == "gpu"
