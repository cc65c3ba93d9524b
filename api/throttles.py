"""API throttles: per token (the caller's account), per client address, and wrong tokens per client address.
Over any: 429 + Retry-After.

The client address is annotator.core.addresses' (TRUSTED_PROXY_COUNT), never DRF's own reading of
X-Forwarded-For, which believes whatever a client writes there. Counters live in the default cache: with
CACHE_URL (Redis) all server processes share them; the embedded default's per-process cache counts per
process.
"""

from rest_framework.throttling import SimpleRateThrottle

from annotator.core.addresses import client_address


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

    def get_ident(self, request):
        return client_address(request)

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class FailedTokenThrottle(AddressRateThrottle):
    """Wrong tokens per client address (api.authentication): checked before a token is looked up, counted
    only when it was wrong, so a guesser is stopped while the callers with good tokens are not counted."""

    scope = "token_failure"

    def over_limit(self, request) -> bool:
        """Whether this address already sent its allowance of wrong tokens; counts nothing."""
        self.key = self.get_cache_key(request, None)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) >= self.num_requests

    def record_failure(self, request) -> None:
        self.over_limit(request)
        self.throttle_success()  # DRF's name for "add this request to the history"
