"""API throttles: per token (the caller's account) and per client address. Over either: 429 + Retry-After.

Counters live in the default cache: with CACHE_URL (Redis) all server processes share them; the embedded
default's per-process cache counts per process.
"""

from rest_framework.throttling import SimpleRateThrottle


class TokenRateThrottle(SimpleRateThrottle):
    """Requests per account (a token and a session of the same person count together)."""

    scope = "token"

    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None  # anonymous callers are counted by address only
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class AddressRateThrottle(SimpleRateThrottle):
    """Requests per client address, whoever the caller is."""

    scope = "address"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
