"""Qualification before the first HIT, and who a worker is."""

import re

import pytest
from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.work import worker_is_qualified
from annotator.crowd.services.qualification import qualification_start, qualification_submit
from annotator.crowd.services.workers import worker_for_external, worker_for_user, worker_signup
from annotator.models import HitItem, QualificationAttempt, QualificationItem, Role, Worker
from tests.factories import UserFactory, WorkerFactory, live_campaign_with_hits, qualification_right_answers

pytestmark = pytest.mark.django_db


right_answers = qualification_right_answers


def test_qualification_uses_pool_items_never_hit_pairs_and_passing_unlocks_work():
    campaign = live_campaign_with_hits(hits=2, qualification_items=2)
    worker = WorkerFactory()
    assert not worker_is_qualified(campaign=campaign, worker=worker)
    attempt = qualification_start(campaign=campaign, worker=worker)
    pool = {item.pk: item for item in QualificationItem.objects.filter(campaign=campaign)}
    assert len(attempt.items) == 2 and set(attempt.items) <= set(pool)
    hit_keys = {(i.pair.image_id, i.pair.caption_id) for i in HitItem.objects.filter(hit__campaign=campaign)}
    assert not {(pool[pk].image_id, pool[pk].caption_id) for pk in attempt.items} & hit_keys
    assert sorted(pool[pk].role for pk in attempt.items) == ["gold_negative", "gold_positive"]
    assert qualification_start(campaign=campaign, worker=worker).pk == attempt.pk  # resumes, idempotent
    done = qualification_submit(attempt=attempt, worker=worker, answers=right_answers(attempt))
    assert done.passed is True and done.score == 1.0
    assert worker_is_qualified(campaign=campaign, worker=worker)
    with pytest.raises(ApplicationError, match="already passed"):
        qualification_start(campaign=campaign, worker=worker)


def test_failed_qualification_has_a_cooldown_and_attempts_are_kept():
    campaign = live_campaign_with_hits(hits=1, qualification_items=2, qualification_cooldown_minutes=30)
    worker = WorkerFactory()
    attempt = qualification_start(campaign=campaign, worker=worker)
    wrong = {k: ("no" if v == "yes" else "yes") for k, v in right_answers(attempt).items()}
    failed = qualification_submit(attempt=attempt, worker=worker, answers=wrong)
    assert failed.passed is False and failed.score == 0.0
    # a second submit of a finished attempt changes nothing
    assert qualification_submit(attempt=attempt, worker=worker, answers=right_answers(attempt)).passed is False
    with pytest.raises(ApplicationError, match="retake") as error:
        qualification_start(campaign=campaign, worker=worker)
    assert error.value.status == 429
    later = timezone.now() + timezone.timedelta(minutes=31)
    retake = qualification_start(campaign=campaign, worker=worker, now=later)
    assert retake.pk != attempt.pk
    assert QualificationAttempt.objects.filter(worker=worker).count() == 2


def test_qualification_refuses_incomplete_answers_and_other_workers():
    campaign = live_campaign_with_hits(hits=1, qualification_items=2)
    worker = WorkerFactory()
    attempt = qualification_start(campaign=campaign, worker=worker)
    with pytest.raises(ApplicationError, match="missing: 2"):
        qualification_submit(attempt=attempt, worker=worker, answers={"0": "yes"})
    with pytest.raises(ApplicationError) as error:
        qualification_submit(attempt=attempt, worker=WorkerFactory(), answers=right_answers(attempt))
    assert error.value.status == 404
    with pytest.raises(ApplicationError, match="Unknown answer"):
        qualification_submit(attempt=attempt, worker=worker, answers={"0": "perhaps", "1": "yes"})


def test_always_yes_fails_the_balanced_test():
    campaign = live_campaign_with_hits(hits=1, qualification_items=2, qualification_pass_mark=0.8)
    worker = WorkerFactory()
    attempt = qualification_start(campaign=campaign, worker=worker)
    result = qualification_submit(attempt=attempt, worker=worker, answers={"0": "yes", "1": "yes"})
    assert result.passed is False and result.score == 0.5


def test_campaign_without_gold_needs_no_qualification():
    campaign = live_campaign_with_hits(hits=1, qualification_items=0)
    assert worker_is_qualified(campaign=campaign, worker=WorkerFactory())


def test_worker_for_user_and_external_are_stable_and_pseudonymous():
    user = UserFactory()
    first = worker_for_user(user=user)
    assert worker_for_user(user=user).pk == first.pk
    assert re.fullmatch(r"w-[0-9a-f]{10}", first.pseudonym) and user.username not in first.pseudonym
    external = worker_for_external(external_id="A1B2C3D4E5")
    assert worker_for_external(external_id="A1B2C3D4E5").pk == external.pk
    assert external.pseudonym != "A1B2C3D4E5"
    with pytest.raises(ApplicationError):
        worker_for_external(external_id="<script>")


def test_signup_with_and_without_invite_code(settings):
    worker = worker_signup(username="ana", password="a-long-passphrase")
    assert worker.user.profile.role == Role.WORKER and worker.user.check_password("a-long-passphrase")
    with pytest.raises(ApplicationError, match="cannot be used"):
        worker_signup(username="ANA", password="a-long-passphrase")
    with pytest.raises(ApplicationError, match="too short"):
        worker_signup(username="bob", password="short")
    settings.SIGNUP_INVITE_CODE = "letmein"
    with pytest.raises(ApplicationError, match="invite code"):
        worker_signup(username="carl", password="a-long-passphrase", invite_code="nope")
    assert worker_signup(username="carl", password="a-long-passphrase", invite_code="letmein")
    assert Worker.objects.count() == 2
