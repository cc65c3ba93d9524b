"""The Redis transport of config/broker.py against a Redis of the test's own that refuses writes."""

import pytest
from kombu import Connection, Exchange, Queue

from config.broker import REFUSED_WRITES, RedisTransport
from tests.redis_support import start_private_redis


@pytest.fixture
def private_redis(tmp_path):
    server = start_private_redis(tmp_path)
    yield server
    server.stop()


def test_a_refused_ack_frees_the_prefetch_slot_and_the_message_comes_back_later(private_redis):
    """The stock transport keeps a message whose ack Redis refused in the prefetch window: a worker with
    prefetch N stops consuming after N of them. Here the slot is freed and the message stays unacked."""
    queue = Queue("probe", Exchange("probe", type="direct"), routing_key="probe")
    with Connection(f"{private_redis.url}/0", transport=RedisTransport) as connection:
        producer = connection.Producer()
        producer.publish({"n": 1}, exchange=queue.exchange, routing_key="probe", declare=[queue])
        channel = connection.default_channel
        channel.basic_qos(0, 1, False)
        message = queue(channel).get(no_ack=False)
        assert message is not None and message.payload == {"n": 1}
        assert not channel.qos.can_consume()  # prefetch 1, one delivered
        private_redis.refuse_writes()
        message.ack()  # refused by Redis: logged, not raised
        assert channel.qos.can_consume()  # the worker goes on consuming
        private_redis.refuse_writes(False)
        assert private_redis.client().hlen("unacked") == 1  # redelivered after the visibility timeout


def test_refused_writes_count_as_a_lost_connection():
    """A worker reconnects with back-off on a connection error; on a channel error it would stop for good."""
    import redis.exceptions

    assert redis.exceptions.OutOfMemoryError in REFUSED_WRITES
    for error in REFUSED_WRITES:
        assert issubclass(error, RedisTransport.connection_errors)
