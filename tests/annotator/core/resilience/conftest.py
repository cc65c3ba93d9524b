import pytest

from tests.redis_support import start_private_redis


@pytest.fixture
def private_redis(tmp_path):
    """A Redis of the test's own (stopped, or made to refuse writes, without touching the shared one)."""
    server = start_private_redis(tmp_path)
    yield server
    server.stop()
