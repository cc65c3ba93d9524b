"""The fail-soft Redis cache against a real Redis of the test's own: stopped, refusing writes, back again."""

import time

import pytest
import redis.exceptions
from django.contrib.auth import SESSION_KEY
from django.test import override_settings

from annotator.core.resilience.cache import FailSoftRedisCache
from tests.factories import user_with_role


def make_cache(url: str, **options) -> FailSoftRedisCache:
    return FailSoftRedisCache(f"{url}/0", {"OPTIONS": {"down_seconds": 0.5, **options}})


def test_reads_and_writes_go_to_redis_while_it_answers(private_redis):
    cache = make_cache(private_redis.url)
    cache.set("k", {"a": 1}, 60)
    assert cache.get("k") == {"a": 1}
    assert cache.get_many(["k", "missing"]) == {"k": {"a": 1}}
    assert cache.add("k", "other") is False
    assert cache.delete("k") is True
    assert cache.get("k", "default") == "default"


def test_a_stopped_redis_is_a_miss_not_an_error_and_is_left_alone_for_a_moment(private_redis):
    cache = make_cache(private_redis.url)
    cache.set("k", "v", 60)
    private_redis.stop()
    assert cache.get("k", "fallback") == "fallback"
    cache.set("k", "w", 60)  # no exception
    assert cache.get_many(["k"]) == {}
    assert cache.available is False  # the next calls do not even try
    started = time.monotonic()
    for _ in range(100):
        assert cache.get("k") is None
    assert time.monotonic() - started < 0.5
    with pytest.raises(redis.exceptions.ConnectionError):
        cache.ping()  # the health check sees the truth


def test_a_value_that_could_not_be_replaced_is_never_read_back_stale(private_redis):
    """A write refused (maxmemory) leaves the old value in Redis: the cache deletes it on its next call."""
    cache = make_cache(private_redis.url)
    cache.set("session", "logged in", 60)
    private_redis.refuse_writes()
    cache.set("session", "logged out", 60)  # refused by Redis, answered as done
    assert private_redis.client().exists(":1:session")  # the old value is still there ...
    assert cache.get("session") is None  # ... but it is deleted before anything reads it
    assert not private_redis.client().exists(":1:session")
    private_redis.refuse_writes(False)
    cache.set("session", "new", 60)
    assert cache.get("session") == "new"


def test_keys_written_while_redis_was_down_are_invalidated_when_it_answers_again(private_redis):
    cache = make_cache(private_redis.url)
    cache.set("session", "old", 60)
    private_redis.stop()
    cache.delete("session")  # a log-out while Redis is away
    private_redis.start()  # as a Redis that kept its data would: the old value is back
    private_redis.client().set(":1:session", cache._cache._serializer.dumps("old"))
    time.sleep(0.6)  # the cache tries Redis again after down_seconds
    assert cache.get("session") is None


@pytest.mark.django_db
def test_a_logged_in_worker_keeps_working_while_the_session_cache_is_down(client, private_redis):
    """cached_db sessions over the fail-soft cache: with Redis gone they are read from the database."""
    private_redis.stop()
    caches = {
        "default": {
            "BACKEND": "annotator.core.resilience.cache.FailSoftRedisCache",
            "LOCATION": f"{private_redis.url}/1",
        }
    }
    with override_settings(CACHES=caches, SESSION_ENGINE="django.contrib.sessions.backends.cached_db"):
        user = user_with_role("worker")
        client.force_login(user)
        assert client.session[SESSION_KEY] == str(user.pk)
        response = client.get("/work/")
        assert response.status_code == 200
        assert response.context["user"] == user
