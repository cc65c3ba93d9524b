"""A Redis cache that degrades to misses instead of failing the request.

Every request of a logged-in person reads its session through the cache (cached_db sessions), so with
Django's own RedisCache a Redis restart, or a Redis that refuses writes (maxmemory), turns every page,
autosave and submit into a 500. Here a cache error is logged and the call answers as a miss: a read
returns the default, a write returns as if done. Sessions then come from the database, which cached_db
writes first, so nothing a person did is lost.

Two things keep it honest:
- A key that could not be written or deleted may still hold an older value in Redis (a Redis that keeps
  its data across a restart, or that refused the write). Such keys are remembered and deleted as soon as
  Redis answers again, so a logged-out session or a changed one is never read back stale from the cache
  by the process that saw the failure (DEL is allowed even when Redis refuses writes for lack of memory).
- After a connection failure Redis is left alone for DOWN_SECONDS (answers are misses at once), so a
  Redis that is down costs one refused connection per process every few seconds, not one per call.

    CACHES = {"default": {"BACKEND": "annotator.core.resilience.cache.FailSoftRedisCache", "LOCATION": url,
                          "OPTIONS": {"down_seconds": 2.0, "socket_timeout": 1.0}}}
"""

import logging
import threading
import time

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

logger = logging.getLogger(__name__)

# Keys remembered for deletion while Redis cannot be written; beyond this many the oldest are dropped
# (a Redis that stays away that long comes back empty or is an operator's matter, docs/operations.md).
MAX_STALE_KEYS = 10_000


def _redis_errors() -> tuple[type[BaseException], ...]:
    import redis.exceptions

    return (redis.exceptions.RedisError, OSError)


def _connection_errors() -> tuple[type[BaseException], ...]:
    import redis.exceptions

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


class ReusingRedisCacheClient(RedisCacheClient):
    """Django's client builds a new redis.Redis object for every cache call (its response-callback table
    alone is ~170 entries); a redis.Redis is thread-safe over its pool, so one per pool serves them all.
    Every worker request reads its session from the cache, so this is paid on every request."""

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        clients = self.__dict__.setdefault("_clients", {})
        client = clients.get(index)
        if client is None:
            client = clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class FailSoftRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient
        options = dict(self._options)
        self.down_seconds = float(options.pop("down_seconds", 2.0))
        # Short socket timeouts: a cache that does not answer within a second is treated as down.
        options.setdefault("socket_connect_timeout", 1.0)
        options.setdefault("socket_timeout", 1.0)
        self._options = options
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._stale_keys: dict[str, None] = {}  # insertion-ordered set
        self._errors = _redis_errors()
        self._connection_errors = _connection_errors()
        self._last_logged = 0.0

    # -- state --------------------------------------------------------------------------------------------
    @property
    def available(self) -> bool:
        """False while a recent connection failure keeps Redis out of the way."""
        return time.monotonic() >= self._down_until

    def _failed(self, operation: str, error: BaseException, keys=()) -> None:
        now = time.monotonic()
        with self._lock:
            if isinstance(error, self._connection_errors):
                self._down_until = now + self.down_seconds
            for key in keys:
                self._stale_keys[key] = None
            while len(self._stale_keys) > MAX_STALE_KEYS:
                self._stale_keys.pop(next(iter(self._stale_keys)))
            quiet = now - self._last_logged < self.down_seconds
            self._last_logged = now
        if not quiet:  # one line per outage and process, not one per request
            logger.warning(
                "cache %s failed, answering without the cache: %s: %s", operation, type(error).__name__, error
            )

    def _forget_stale(self) -> None:
        """Delete the keys that could not be written while Redis was failing (one DEL)."""
        with self._lock:
            keys = list(self._stale_keys)
        if not keys:
            return
        self._cache.delete_many(keys)
        with self._lock:
            for key in keys:
                self._stale_keys.pop(key, None)
        logger.info("cache reachable again; %d keys written during the outage were invalidated", len(keys))

    def _call(self, operation: str, call, *, fallback, keys=(), writes=False):
        if not self.available:
            if writes:
                with self._lock:
                    for key in keys:
                        self._stale_keys[key] = None
            return fallback
        try:
            if self._stale_keys:
                self._forget_stale()
            return call()
        except self._errors as error:
            self._failed(operation, error, keys if writes else ())
            return fallback

    # -- the cache API ------------------------------------------------------------------------------------
    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        made = self.make_and_validate_key(key, version=version)
        return self._call(
            "add",
            lambda: self._cache.add(made, value, self.get_backend_timeout(timeout)),
            fallback=False,
            keys=[made],
            writes=True,
        )

    def get(self, key, default=None, version=None):
        made = self.make_and_validate_key(key, version=version)
        return self._call("get", lambda: self._cache.get(made, default), fallback=default)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        made = self.make_and_validate_key(key, version=version)
        self._call(
            "set",
            lambda: self._cache.set(made, value, self.get_backend_timeout(timeout)),
            fallback=None,
            keys=[made],
            writes=True,
        )

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        made = self.make_and_validate_key(key, version=version)
        return self._call(
            "touch",
            lambda: self._cache.touch(made, self.get_backend_timeout(timeout)),
            fallback=False,
            keys=[made],
            writes=True,
        )

    def delete(self, key, version=None):
        made = self.make_and_validate_key(key, version=version)
        return self._call("delete", lambda: self._cache.delete(made), fallback=False, keys=[made], writes=True)

    def get_many(self, keys, version=None):
        key_map = {self.make_and_validate_key(key, version=version): key for key in keys}

        def read():
            found = self._cache.get_many(key_map.keys())
            return {key_map[k]: v for k, v in found.items()}

        return self._call("get_many", read, fallback={})

    def has_key(self, key, version=None):
        made = self.make_and_validate_key(key, version=version)
        return self._call("has_key", lambda: self._cache.has_key(made), fallback=False)

    def incr(self, key, delta=1, version=None):
        # A counter that cannot be read is an error for its caller (rate limits decide for themselves).
        return super().incr(key, delta, version)

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        if not data:
            return []
        safe = {self.make_and_validate_key(key, version=version): value for key, value in data.items()}
        self._call(
            "set_many",
            lambda: self._cache.set_many(safe, self.get_backend_timeout(timeout)),
            fallback=None,
            keys=list(safe),
            writes=True,
        )
        return []

    def delete_many(self, keys, version=None):
        if not keys:
            return
        safe = [self.make_and_validate_key(key, version=version) for key in keys]
        self._call("delete_many", lambda: self._cache.delete_many(safe), fallback=None, keys=safe, writes=True)

    def clear(self):
        return self._call("clear", self._cache.clear, fallback=False)

    def ping(self) -> None:
        """Raise unless Redis answers now (for /healthz; bypasses the fail-soft path on purpose)."""
        self._cache.get_client(None).ping()
