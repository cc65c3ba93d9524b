"""One webhook request to one checked address (urllib3), and nothing else.

The connection goes to `address`, an address that annotator.core.services.webhooks.targets checked; no second
DNS lookup happens, so the name cannot rebind to an internal address between the check and the request. The
URL's own host goes in the Host header and, for https, in SNI, and the certificate is verified against it
(the system's CA store). Redirects are never followed and nothing is retried here: the caller decides.
Every failure is a DeliveryError category, never the socket's own words.
"""

from __future__ import annotations

import ssl

import urllib3
from urllib3.exceptions import HTTPError, NewConnectionError, SSLError, TimeoutError

from annotator.core.models.webhooks import DeliveryError
from annotator.core.services.webhooks.targets import WebhookTarget


class DeliveryFailed(Exception):
    """No HTTP answer came back; `category` says why (a DeliveryError value)."""

    def __init__(self, category: str):
        super().__init__(category)
        self.category = category


def webhook_post(
    *,
    target: WebhookTarget,
    address: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
    ssl_context: ssl.SSLContext | None = None,
) -> int:
    """POST `body` to `target` at `address`; returns the HTTP status (a 3xx too: it is not followed) or
    raises DeliveryFailed. No state, no locks; `ssl_context` replaces the system CA store (tests)."""
    options = {"timeout": urllib3.Timeout(total=timeout), "retries": False, "maxsize": 1}
    if target.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            address,
            target.port,
            server_hostname=target.host,
            assert_hostname=target.host,
            cert_reqs="CERT_REQUIRED",
            ssl_context=ssl_context,
            **options,
        )
    else:
        pool = urllib3.HTTPConnectionPool(address, target.port, **options)
    try:
        with pool:
            response = pool.urlopen(
                "POST",
                target.path,
                body=body,
                headers={**headers, "host": target.host_header},
                redirect=False,
                retries=False,
                assert_same_host=False,
                preload_content=False,
            )
            response.close()  # the receiver's body is not read
            return response.status
    except SSLError:
        raise DeliveryFailed(DeliveryError.TLS) from None
    except NewConnectionError as error:  # before TimeoutError: urllib3 derives it from ConnectTimeoutError
        refused = isinstance(error.__cause__, ConnectionRefusedError)
        raise DeliveryFailed(DeliveryError.REFUSED if refused else DeliveryError.CONNECTION) from None
    except TimeoutError:
        raise DeliveryFailed(DeliveryError.TIMEOUT) from None
    except (HTTPError, OSError, ValueError):  # a broken answer, a reset connection
        raise DeliveryFailed(DeliveryError.CONNECTION) from None
