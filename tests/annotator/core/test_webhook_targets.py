"""Webhook targets: every internal spelling is refused before anything is sent, public ones pass, and an
operator's allow-list lets named internal receivers through. Names resolve from the tests' resolver hook
(tests/conftest.py: webhook_dns); nothing here sends a packet."""

import pytest

from annotator.core.services.webhooks.targets import WebhookTargetRefused, webhook_target_check
from annotator.core.services.webhooks.targets import resolve as real_resolve
from annotator.models import DeliveryError

# (URL, a fragment of the reason the refusal names). The 19 spellings of issue 31 come first.
INTERNAL_URLS = [
    ("http://127.0.0.1/h", "loopback"),
    ("http://localhost/h", "inside a network"),
    ("http://[::1]/h", "loopback"),
    ("http://127.1/h", "127.0.0.1, a loopback"),
    ("http://2130706433/h", "127.0.0.1, a loopback"),
    ("http://0x7f000001/h", "127.0.0.1, a loopback"),
    ("http://0.0.0.0/h", "unspecified"),
    ("http://10.0.0.1/h", "private"),
    ("http://172.16.0.1/h", "private"),
    ("http://192.168.1.1/h", "private"),
    ("http://100.64.0.1/h", "carrier-grade NAT"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[fe80::1]/h", "link-local"),
    ("http://[fd00::1]/h", "private"),
    ("http://metadata.google.internal/computeMetadata/v1/", "inside a network"),
    ("http://127.0.0.1:6379/", "loopback"),  # Redis
    ("http://127.0.0.1:5432/", "loopback"),  # PostgreSQL
    ("http://0177.0.0.1/h", "127.0.0.1, a loopback"),
    ("http://localhost./h", "inside a network"),
    # More spellings of the same places.
    ("http://127.0.0.1./h", "loopback"),
    ("http://0/h", "unspecified"),
    ("https://LOCALHOST/h", "inside a network"),
    ("http://app.localhost/h", "inside a network"),
    ("http://redis:6379/", "inside a network"),  # one label: the resolver's search list completes it
    ("http://[::ffff:127.0.0.1]/h", "IPv6 form of 127.0.0.1"),
    ("http://[::ffff:a9fe:a9fe]/h", "IPv6 form of 169.254.169.254"),
    ("http://[64:ff9b::a9fe:a9fe]/h", "IPv6 form of 169.254.169.254"),  # NAT64
    ("http://[2002:7f00:1::]/h", "IPv6 form of 127.0.0.1"),  # 6to4
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/h", "IPv6 form of 127.0.0.1"),  # Teredo
    ("http://[fec0::1]/h", "site-local"),
    ("http://[fe80::1%25eth0]/h", "network interface"),
    ("http://224.0.0.1/h", "multicast"),
    ("http://[ff02::1]/h", "multicast"),
    ("http://255.255.255.255/h", "reserved"),
    ("http://240.0.0.1/h", "reserved"),
    ("http://192.0.2.1/h", "documentation"),
    ("http://[2001:db8::1]/h", "documentation"),
    ("http://private.example/h", "leads to a private"),  # a public-looking name with an internal answer
    ("http://mixed.example/h", "leads to a private"),  # one internal answer among public ones is enough
    ("http://user:secret@example.org/h", "user name or password"),
    ("ftp://example.org/h", "http(s) URL"),
    ("http://exa mple.org/h", "not a valid host name"),
    ("http://[::zz]/h", "valid"),
]


@pytest.mark.parametrize(("url", "reason"), INTERNAL_URLS, ids=[url for url, _ in INTERNAL_URLS])
def test_every_internal_spelling_is_refused_naming_why(url, reason):
    with pytest.raises(WebhookTargetRefused) as refused:
        webhook_target_check(url=url)
    assert refused.value.category == DeliveryError.BLOCKED and refused.value.status == 400
    assert reason in refused.value.message


@pytest.mark.parametrize(
    ("url", "host", "addresses", "host_header"),
    [
        ("https://example.org/h", "example.org", ("93.184.215.14",), "example.org"),
        ("https://Example.ORG.:8443/h?a=1", "example.org", ("93.184.215.14",), "Example.ORG.:8443"),
        ("http://93.184.215.14:8080/h", "93.184.215.14", ("93.184.215.14",), "93.184.215.14:8080"),
        ("https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/h", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", None, None),
        ("https://bücher.example/h", "xn--bcher-kva.example", ("93.184.215.14",), "xn--bcher-kva.example"),
    ],
)
def test_public_targets_pass_with_the_addresses_to_connect_to(url, host, addresses, host_header):
    target = webhook_target_check(url=url)
    assert target.host == host
    assert target.addresses == (addresses or (host,))
    assert target.host_header == (host_header or f"[{host}]")


def test_a_name_that_does_not_resolve_is_a_dns_failure():
    with pytest.raises(WebhookTargetRefused) as refused:
        webhook_target_check(url="https://no-such-host.example/h")
    assert refused.value.category == DeliveryError.DNS and "does not resolve" in refused.value.message


def test_the_allow_list_lets_named_internal_receivers_through_and_nothing_else(settings, webhook_dns):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["10.20.0.0/16", "127.0.0.1"]
    settings.WEBHOOK_ALLOWED_HOSTS = ["hooks.internal"]
    webhook_dns["hooks.internal"] = ["192.168.7.7"]
    assert webhook_target_check(url="http://10.20.3.4:8000/h").addresses == ("10.20.3.4",)
    assert webhook_target_check(url="http://127.0.0.1:8000/h").addresses == ("127.0.0.1",)
    assert webhook_target_check(url="https://hooks.internal/h").addresses == ("192.168.7.7",)
    for url in ("http://10.21.0.1/h", "http://127.0.0.2/h", "http://metadata.google.internal/", "http://[::1]/h"):
        with pytest.raises(WebhookTargetRefused):
            webhook_target_check(url=url)


def test_the_real_resolver_answers_addresses_for_localhost():
    """The one lookup function itself (not the tests' hook): getaddrinfo, addresses only, no repeats."""
    addresses = real_resolve("localhost", 80)
    assert "127.0.0.1" in addresses or "::1" in addresses
    assert len(addresses) == len(set(addresses))


def test_a_names_internal_address_is_not_echoed():
    """The refusal names why but not what the name resolved to: the form is no oracle for internal DNS."""
    with pytest.raises(WebhookTargetRefused) as refused:
        webhook_target_check(url="http://private.example/h")
    assert "10.1.2.3" not in refused.value.message and "private" in refused.value.message
