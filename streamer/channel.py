"""The secure channel: TLS 1.3 under every connection, bound to the nodes' identities.

Each node process makes a fresh self-signed ECDSA P-256 certificate (`TlsCredentials`) and serves
TLS with it on every inbound connection; the dialling side checks no certificate authority (there
is none in a peer-to-peer network) but records the certificate it was shown. Who a peer is, is
proven one layer up, by the signed `Handshake` that runs inside the channel: its signature covers
the *channel binding*, the Keccak-256 hash of the listener's certificate as each side saw it. A
relay in the middle terminates TLS with certificates of its own, so the two sides see different
bindings and each refuses the other's handshake: the relay cannot splice two channels into one.

Why TLS and not Noise: TLS 1.3 comes with the standard library's `ssl` (OpenSSL: AES-GCM in
hardware, maintained and audited), driven over trio by `streamer.tls.TlsStream` (as trio's
`SSLStream` drives it, but decrypting every record that has arrived in one read); Noise in Python
would mean an unmaintained package or our own implementation. The certificate is made with `cryptography`.
The cost on the sync path is measured by `benches/sync.py --channel plain|tls`.

A node started with the plain channel (`channel="plain"`, for measuring) uses no TLS and a binding
of 32 zero bytes; it can only talk to nodes that do the same.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
from functools import cached_property
from pathlib import Path

import trio

from chunks.bmt import keccak256
from streamer.messages import PLAIN_BINDING
from streamer.tls import TlsStream

__all__ = ["ChannelError", "TlsCredentials", "open_channel"]


class ChannelError(Exception):
    """The TLS handshake failed (the peer does not speak TLS, or broke it)."""


class TlsCredentials:
    """This process's TLS certificate and key, and the contexts that use them.

    The certificate is made when first needed (`prepare`, the first inbound connection, or a look
    at ``certificate``/``binding``/``server``): making it costs `cryptography.x509`'s import and a
    key, 30-50 ms. A node that dials spends it at its first inbound connection, not at start-up
    (only the client context is needed to dial; docs/performance.md, "Start-up"); one with no
    peer to dial calls `prepare` at start-up, so that the first peer to dial it does not wait."""

    def __init__(self) -> None:
        self.client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.client.minimum_version = ssl.TLSVersion.TLSv1_3
        self.client.check_hostname = False
        self.client.verify_mode = ssl.CERT_NONE  # no authority: the handshake inside proves the peer

    def prepare(self) -> None:
        """Make the certificate now (once), not at the first inbound connection, which would wait
        for it."""
        self._made  # noqa: B018 - the cached property is made by the look

    @cached_property
    def _made(self) -> tuple[bytes, ssl.SSLContext]:
        """A fresh self-signed certificate (DER) and the server context that shows it."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "swarm node")])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .sign(key, hashes.SHA256())
        )
        server = _server_context(
            certificate.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )
        return certificate.public_bytes(serialization.Encoding.DER), server

    @property
    def certificate(self) -> bytes:
        """The certificate (DER) this process shows on inbound connections."""
        return self._made[0]

    @cached_property
    def binding(self) -> bytes:
        """The channel binding of inbound connections: the Keccak-256 hash of the certificate."""
        return keccak256(self.certificate)

    @property
    def server(self) -> ssl.SSLContext:
        """The context of inbound connections (TLS 1.3, showing the certificate)."""
        return self._made[1]


def _server_context(certificate_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    # load_cert_chain reads only files: they live for this call in a directory only we can read
    with tempfile.TemporaryDirectory(prefix="swarm-tls-") as directory:
        cert_file, key_file = Path(directory) / "cert.pem", Path(directory) / "key.pem"
        cert_file.write_bytes(certificate_pem)
        key_file.touch(mode=0o600)
        key_file.write_bytes(key_pem)
        context.load_cert_chain(cert_file, key_file)
    return context


async def open_channel(
    stream: trio.abc.Stream, credentials: TlsCredentials | None, *, server_side: bool
) -> tuple[trio.abc.Stream, bytes]:
    """The stream to speak the protocol on, and the channel binding the handshake must sign.

    Without credentials the channel is plain: the stream itself and `PLAIN_BINDING`.
    """
    if credentials is None:
        return stream, PLAIN_BINDING
    context = credentials.server if server_side else credentials.client
    secure = TlsStream(stream, context, server_side=server_side)
    try:
        await secure.do_handshake()
    except trio.BrokenResourceError as exc:
        reason = exc.__cause__ or exc
        raise ChannelError(f"TLS handshake failed: {reason}") from exc
    if server_side:
        return secure, credentials.binding
    shown = secure.peer_certificate()
    if not shown:
        raise ChannelError("TLS handshake failed: the listener showed no certificate")
    return secure, keccak256(shown)
