"""The webhook transport over TLS: it connects to the checked address and still sends the URL's host name
in SNI and verifies the certificate against it; an untrusted or mismatched certificate is a "TLS error".
A real HTTPS server on loopback with a certificate from a throwaway CA."""

import datetime
import ssl
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from annotator.core.services.webhooks import transport
from annotator.core.services.webhooks.targets import webhook_target_check
from annotator.models import DeliveryError


def _certificate(subject: str, issuer_key, issuer_name, key, *, ca: bool, names=()):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer_name or x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture
def tls_receiver(tmp_path):
    """An HTTPS server on 127.0.0.1 whose certificate names hooks.test; yields (port, ca_file, seen)."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("throwaway CA", ca_key, None, ca_key, ca=True)
    leaf = _certificate("hooks.test", ca_key, ca.subject, key, ca=False, names=["hooks.test"])
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    seen = {"sni": [], "host": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            seen["host"].append(self.headers["host"])
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "leaf.pem", tmp_path / "key.pem")
    context.sni_callback = lambda sock, name, ctx: seen["sni"].append(name)
    server = HTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port, tmp_path / "ca.pem", seen
    server.shutdown()
    server.server_close()


def _post(url: str, ssl_context=None) -> int:
    target = webhook_target_check(url=url)
    return transport.webhook_post(
        target=target, address=target.addresses[0], body=b"{}", headers={}, timeout=5, ssl_context=ssl_context
    )


def test_https_goes_to_the_checked_address_with_sni_and_the_certificate_checked_for_the_name(
    tls_receiver, webhook_dns, settings
):
    port, ca_file, seen = tls_receiver
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    webhook_dns["hooks.test"] = ["127.0.0.1"]
    webhook_dns["other.test"] = ["127.0.0.1"]
    trusting = ssl.create_default_context(cafile=str(ca_file))
    assert _post(f"https://hooks.test:{port}/hook", trusting) == 200
    assert seen["sni"] == ["hooks.test"] and seen["host"] == [f"hooks.test:{port}"]
    with pytest.raises(transport.DeliveryFailed) as untrusted:  # the system store does not know this CA
        _post(f"https://hooks.test:{port}/hook")
    assert untrusted.value.category == DeliveryError.TLS
    with pytest.raises(transport.DeliveryFailed) as mismatched:  # a trusted certificate for another name
        _post(f"https://other.test:{port}/hook", trusting)
    assert mismatched.value.category == DeliveryError.TLS
    assert seen["host"] == [f"hooks.test:{port}"]  # neither failed handshake sent the request
