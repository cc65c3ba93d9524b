"""kombu's Redis transport, made to ride out a Redis that refuses writes.

A Redis at its maxmemory (noeviction) or a replica left read-only after a failover answers writes with an
error. Two things then go wrong in a Celery worker with the stock transport:
- kombu files the error under channel errors, and a worker that meets one while it restores unacknowledged
  messages stops for good ("Unrecoverable error: OutOfMemoryError");
- a refused acknowledgement leaves the message in the worker's prefetch window: after `prefetch` of them
  the worker consumes nothing more, ever, while it looks alive.
Here the refusal counts as a lost connection (the worker reconnects with back-off, as after a Redis
restart), and a refused acknowledgement still frees the prefetch slot; the message stays in Redis's
unacknowledged set and is delivered again after the visibility timeout, which every task tolerates (they
are idempotent, and the sweep scores what is left over anyway).

Selected by CELERY_BROKER_TRANSPORT in config/settings.py when the broker is Redis.
"""

import logging

import redis.exceptions
from kombu.transport import virtual
from kombu.transport.redis import Channel as KombuRedisChannel
from kombu.transport.redis import QoS as KombuRedisQoS
from kombu.transport.redis import Transport as KombuRedisTransport

logger = logging.getLogger(__name__)

REFUSED_WRITES = (redis.exceptions.OutOfMemoryError, redis.exceptions.ReadOnlyError, redis.exceptions.ExecAbortError)


class QoS(KombuRedisQoS):
    def ack(self, delivery_tag):
        try:
            self._remove_from_indices(delivery_tag).execute()
        except REFUSED_WRITES as error:
            logger.warning("Redis refused the ack of %s (%s); it will be delivered again later", delivery_tag, error)
        virtual.QoS.ack(self, delivery_tag)


class Channel(KombuRedisChannel):
    QoS = QoS


class RedisTransport(KombuRedisTransport):
    Channel = Channel
    connection_errors = tuple(KombuRedisTransport.connection_errors) + REFUSED_WRITES
