"""Where a webhook may go: the one check of a webhook URL, at save and again before every delivery.

A URL is http or https without user info; its host is read the way the resolver reads it (an IPv4 literal
in any inet_aton spelling: 127.1, 2130706433, 0x7f000001, 0177.0.0.1; an IPv6 literal; a trailing dot
dropped) and, if it is a name, resolved with getaddrinfo. Every address must be public unicast: loopback,
private, link-local, CGNAT, multicast, reserved, unspecified, broadcast, documentation and site-local
addresses are refused, and so are the IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible,
NAT64, 6to4, Teredo). Names that only mean something inside a network (localhost, *.internal, *.local,
single labels that the resolver's search list would complete) are refused before any lookup.

An operator who runs receivers inside the network names them in WEBHOOK_ALLOWED_NETWORKS (addresses or
CIDR networks: an address inside one passes) or WEBHOOK_ALLOWED_HOSTS (host names that are trusted,
whatever they resolve to). Both are empty by default.

The delivery connects to an address that this check returned (annotator.core.services.webhooks.transport), so
a name that resolves to a public address when checked cannot rebind to an internal one for the request.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from django.conf import settings

from annotator.core.errors import ApplicationError
from annotator.core.models.webhooks import DeliveryError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Names that a public receiver cannot have: RFC 6761 localhost, ICANN's private-use .internal (the cloud
# metadata host metadata.google.internal is one), mDNS .local, and the home and local-domain conventions.
INTERNAL_SUFFIXES = ("localhost", "internal", "local", "localdomain", "home.arpa", "lan", "intranet", "corp")
NAT64_NETWORKS = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
CGNAT = ipaddress.ip_network("100.64.0.0/10")
HOST_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_")


class WebhookTargetRefused(ApplicationError):
    """A webhook URL that may not be used; `category` is what a delivery log records for it."""

    def __init__(self, message: str, *, category: str):
        super().__init__(message)
        self.category = category


@dataclass(frozen=True)
class WebhookTarget:
    """A checked webhook URL: where to connect (`addresses`, every one checked) and what to send."""

    scheme: str
    host: str  # the normalised name or address literal: SNI and the certificate are checked against it
    port: int
    host_header: str  # the URL's own host[:port], sent as the Host header
    path: str  # path and query
    addresses: tuple[str, ...]


def resolve(host: str, port: int) -> list[str]:
    """The addresses getaddrinfo gives for `host`, in its order, without repeats. The one DNS lookup of
    webhook delivery; tests replace it to answer names without the network. Raises OSError."""
    answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(ipaddress.ip_address(answer[4][0].split("%")[0])) for answer in answers))


def ip_literal(host: str) -> IPAddress | None:
    """`host` as an address if the resolver would read it as one (inet_aton for IPv4, so 127.1 and
    0x7f000001 are 127.0.0.1), else None. `host` is lower-case, without brackets or a trailing dot."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]
    if any(address in network for network in NAT64_NETWORKS) or (address in IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_refusal(address: IPAddress) -> str | None:
    """Why `address` is not public unicast (a few words), or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return "an address with a network interface"
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = address_refusal(embedded)
            return f"an IPv6 form of {embedded}" + (f", {inner}" if inner else "")
        if address.is_site_local:
            return "a site-local address"
    checks = (
        ("is_unspecified", "the unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address (cloud metadata lives there)"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
    )
    for attribute, reason in checks:
        if getattr(address, attribute):
            return reason
    if address in CGNAT:
        return "a carrier-grade NAT address (100.64.0.0/10)"
    if address.is_private or not address.is_global:
        return "a private, documentation or otherwise non-public address"
    return None


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(entry, strict=False) for entry in settings.WEBHOOK_ALLOWED_NETWORKS]


def _allowed_hosts() -> set[str]:
    return {entry.strip().lower().rstrip(".") for entry in settings.WEBHOOK_ALLOWED_HOSTS if entry.strip()}


def _normalised_host(hostname: str) -> str:
    if ":" in hostname:  # an IPv6 literal; urlsplit has taken its brackets off
        if ip_literal(hostname.lower()) is None:
            raise WebhookTargetRefused(f"{hostname!r} is not a valid IPv6 address.", category=DeliveryError.BLOCKED)
        return hostname.lower()
    try:
        host = hostname.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise WebhookTargetRefused(f"{hostname!r} is not a valid host name.", category=DeliveryError.BLOCKED) from None
    host = host.removesuffix(".")
    if not host or not set(host) <= HOST_CHARACTERS or ".." in host:
        raise WebhookTargetRefused(f"{hostname!r} is not a valid host name.", category=DeliveryError.BLOCKED)
    return host


def webhook_target_check(*, url: str) -> WebhookTarget:
    """Parse, resolve and check a webhook URL; returns where to connect, or raises WebhookTargetRefused
    (an ApplicationError: a 400 naming why) with category "blocked_address" or "dns_failure".

    No locks, no writes; it looks the host up once per call (call it again before each delivery).
    """
    url = (url or "").strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise WebhookTargetRefused(
            "Give an http(s) URL with a valid host and port.", category=DeliveryError.BLOCKED
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > 500:
        raise WebhookTargetRefused("Give an http(s) URL of at most 500 characters.", category=DeliveryError.BLOCKED)
    if parts.username is not None or parts.password is not None:
        raise WebhookTargetRefused(
            "A webhook URL may not carry a user name or password; authenticate with the signature.",
            category=DeliveryError.BLOCKED,
        )
    host = _normalised_host(parts.hostname)
    port = port or (443 if parts.scheme == "https" else 80)
    trusted_host = host in _allowed_hosts()
    literal = ip_literal(host)
    if literal is not None:
        host = str(literal)
        addresses = [host]
    else:
        labels = host.split(".")
        internal = len(labels) == 1 or any(host == s or host.endswith("." + s) for s in INTERNAL_SUFFIXES)
        if internal and not trusted_host:
            raise WebhookTargetRefused(
                f"{host} is a name inside a network, not a public host; an operator can allow it with "
                "WEBHOOK_ALLOWED_HOSTS.",
                category=DeliveryError.BLOCKED,
            )
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError, ValueError):
            addresses = []
        if not addresses:
            raise WebhookTargetRefused(f"{host} does not resolve to an address.", category=DeliveryError.DNS)
    if not trusted_host:
        allowed = _allowed_networks()
        for address in map(ipaddress.ip_address, addresses):
            reason = address_refusal(address)
            if reason and not any(address in network for network in allowed):
                # A name's address is not echoed: the form would otherwise answer internal DNS questions.
                where = f"{address}, {reason}" if literal is not None else reason
                raise WebhookTargetRefused(
                    f"{parts.hostname} leads to {where}; webhooks go to public addresses only "
                    "(an operator can allow internal receivers with WEBHOOK_ALLOWED_NETWORKS).",
                    category=DeliveryError.BLOCKED,
                )
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~")
    if parts.query:
        path += "?" + quote(parts.query, safe="/%:@!$&'()*+,;=~?")
    host_header = parts.netloc  # the URL's own spelling, unless it needs IDNA to be a header at all
    if not host_header.isascii():
        host_header = host + (f":{parts.port}" if parts.port else "")
    return WebhookTarget(
        scheme=parts.scheme,
        host=host,
        port=port,
        host_header=host_header,
        path=path,
        addresses=tuple(addresses),
    )
