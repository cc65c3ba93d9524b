"""Token authentication that a guesser cannot hammer: DRF's TokenAuthentication, with wrong tokens counted
per client address (api.throttles.FailedTokenThrottle). Over the rate, every token from that address gets
429 with Retry-After before it is looked up, so a guess that happens to be right is not told apart either."""

from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled

from api.throttles import FailedTokenThrottle


class ThrottledTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        if not get_authorization_header(request):
            return None  # no token: a session or anonymous caller, counted by the usual throttles
        throttle = FailedTokenThrottle()
        if throttle.over_limit(request):
            raise Throttled(wait=throttle.wait())
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            throttle.record_failure(request)
            raise
