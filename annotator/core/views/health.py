from django.http import JsonResponse
from django.views.decorators.cache import never_cache

from annotator.core.resilience.health import system_health


@never_cache
def healthz(request):
    """The database, cache, broker, storage, Celery workers, queues and the sweep.

    200 "ok" or "degraded" (something other than the database is failing: the site still serves, and
    says what is missing), 503 "down" when the database is unreachable. Open to all, like any health
    check; it names components and counts, never data.
    """
    health = system_health()
    return JsonResponse(health.as_dict(), status=503 if health.status == "down" else 200)
