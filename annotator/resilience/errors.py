"""Which exceptions mean "a component is briefly unavailable" rather than "this code is wrong"."""

from functools import cache


@cache
def outage_errors() -> tuple[type[BaseException], ...]:
    """PostgreSQL unreachable or its connection dropped, Redis unreachable, full or read-only, the broker down.

    A deadlock or a cancelled statement is an OperationalError too: also transient, also worth a retry.
    Imported lazily so that a settings module can name this without importing redis and kombu first.
    """
    import redis.exceptions
    from django.db import InterfaceError, OperationalError
    from kombu.exceptions import OperationalError as BrokerOperationalError

    return (
        OperationalError,
        InterfaceError,
        redis.exceptions.ConnectionError,
        redis.exceptions.TimeoutError,
        redis.exceptions.OutOfMemoryError,
        redis.exceptions.ReadOnlyError,
        redis.exceptions.BusyLoadingError,
        BrokerOperationalError,
    )


def is_outage(error: BaseException | None) -> bool:
    return error is not None and isinstance(error, outage_errors())
