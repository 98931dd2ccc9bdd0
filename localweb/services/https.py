"""A local HTTPS server with its own CA: several names on one address, chosen by SNI.

:class:`HttpsFarm` listens on one 127.0.0.1 port and serves a small site
(``/`` links to ``/a`` and ``/b``, each links back; ``/robots.txt`` is 404)
for every name it has a certificate for. The name the client sends in SNI
(RFC 6066 §3) picks the certificate, through an
``ssl.SSLContext.sni_callback``; a client without SNI, or with an unknown
name, gets the first name's. A test maps the names to 127.0.0.1 with a
static DNS entry (``[dns] resolve = {"*.tls.test" = "127.0.0.1"}``).

:class:`TestPki` makes, with trustme (a test dependency: it is imported
only there), a CA and the certificates of :data:`NAMES`, written as PEM
files under a directory:

- ``a.tls.test``, ``b.tls.test``, ``c.tls.test``: each its own certificate;
- ``expired.tls.test``: a certificate that expired a day ago;
- ``wrong.tls.test``: served with ``a.tls.test``'s certificate (another name);
- ``self.tls.test``: a self-signed certificate no CA signed;
- ``client.pem`` / ``client.key``: a client certificate the CA signed, for a
  farm made with ``client_ca`` (``ssl.CERT_REQUIRED``: a client without a
  certificate the CA signed is refused in the handshake).

What the server saw is in memory: :attr:`HttpsFarm.sni` (every SNI name
asked, in order, handshakes that failed included) and :attr:`HttpsFarm.log`
(one :class:`TlsLogEntry` a request: the SNI name, the Host header, the
path, the ALPN protocol selected and the client certificate's subject). The
server offers ALPN ``h2`` before ``http/1.1``: a client that offered h2
would get it, so ``alpn == "http/1.1"`` says the client offered only that.
"""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import trio

__all__ = ["NAMES", "HttpsFarm", "TestPki", "TlsLogEntry"]

#: The names :class:`TestPki` makes certificates for, and how each is served.
NAMES = ("a.tls.test", "b.tls.test", "c.tls.test", "expired.tls.test", "wrong.tls.test", "self.tls.test")
_HEAD_MAX = 64 * 1024
_PAGES = {
    "/": b'<html><body><a href="/a">a</a> <a href="/b">b</a></body></html>',
    "/a": b'<html><body><a href="/">home</a></body></html>',
    "/b": b'<html><body><a href="/">home</a></body></html>',
}


@dataclass(frozen=True, slots=True)
class TlsLogEntry:
    """One request the HTTPS server answered."""

    sni: str | None
    host: str
    path: str
    status: int
    alpn: str | None
    client_cert: str | None  # the client certificate's subject commonName, if one was sent


@dataclass(frozen=True, slots=True)
class TestPki:
    """PEM files of a test CA and certificates (module docstring); make with :meth:`make`."""

    __test__ = False  # not a pytest test class, whatever its name

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def client_cert(self) -> Path:
        return self.directory / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.directory / "client.key"

    def cert(self, name: str) -> tuple[Path, Path]:
        """(certificate chain, key) of ``name``."""
        return self.directory / f"{name}.pem", self.directory / f"{name}.key"

    @classmethod
    def make(cls, directory: Path) -> TestPki:
        """A CA and every name's certificate, written under ``directory`` (trustme)."""
        import trustme

        directory.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(directory / "ca.pem"))
        now = datetime.datetime.now(datetime.timezone.utc)
        leaves = {
            "a.tls.test": ca.issue_cert("a.tls.test"),
            "b.tls.test": ca.issue_cert("b.tls.test"),
            "c.tls.test": ca.issue_cert("c.tls.test"),
            "expired.tls.test": ca.issue_cert("expired.tls.test", not_before=now - datetime.timedelta(days=30),
                                              not_after=now - datetime.timedelta(days=1)),
        }
        leaves["wrong.tls.test"] = leaves["a.tls.test"]
        _self_signed(directory, "self.tls.test", now)
        for name, leaf in leaves.items():
            with open(directory / f"{name}.pem", "wb") as f:
                for blob in leaf.cert_chain_pems[:1]:  # the leaf alone: the chain's CA is the client's to know
                    f.write(blob.bytes())
            leaf.private_key_pem.write_to_path(str(directory / f"{name}.key"))
        client = ca.issue_cert("crawler@tls.test", common_name="ringcrawl test client")
        client.cert_chain_pems[0].write_to_path(str(directory / "client.pem"))
        client.private_key_pem.write_to_path(str(directory / "client.key"))
        return cls(directory)


def _self_signed(directory: Path, name: str, now: datetime.datetime) -> None:
    """A certificate for ``name`` signed by its own key (OpenSSL: DEPTH_ZERO_SELF_SIGNED_CERT)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(key, hashes.SHA256()))
    (directory / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / f"{name}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


class HttpsFarm:
    """Serves every name of ``certs`` (name -> (cert chain PEM, key PEM)) on one port."""

    def __init__(self, certs: Mapping[str, tuple[Path, Path]], *, client_ca: Path | None = None) -> None:
        if not certs:
            raise ValueError("HttpsFarm needs at least one name's certificate")
        self._contexts: dict[str, ssl.SSLContext] = {}
        for name, (chain, key) in certs.items():
            # One context a name, even where two names share a certificate:
            # the context a handshake ended with then says which name it was.
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(str(chain), str(key))
            ctx.set_alpn_protocols(["h2", "http/1.1"])
            if client_ca is not None:
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(cafile=str(client_ca))
            self._contexts[name] = ctx
        self._names = {id(ctx): name for name, ctx in self._contexts.items()}
        self.default = next(iter(self._contexts.values()))
        self.default.sni_callback = self._sni
        self.sni: list[str | None] = []
        self.log: list[TlsLogEntry] = []
        self.handshake_failures = 0
        self.port = 0

    def _sni(self, sslobj: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        self.sni.append(name)
        chosen = self._contexts.get(name or "")
        if chosen is not None:
            sslobj.context = chosen

    async def start(self, nursery: trio.Nursery) -> int:
        """Listen on 127.0.0.1 (any free port) and serve in ``nursery``; the port."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        nursery.start_soon(trio.serve_listeners, self._serve, listeners)
        return self.port

    async def _serve(self, tcp: trio.SocketStream) -> None:
        stream = trio.SSLStream(tcp, self.default, server_side=True)
        try:
            with trio.move_on_after(10):
                await stream.do_handshake()
                await self._requests(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.handshake_failures += 1  # or the client went away: either is the client's
            with trio.move_on_after(1):
                await self._alert(stream, tcp)
        finally:
            tcp.socket.close()

    @staticmethod
    async def _alert(stream: trio.SSLStream[trio.SocketStream], tcp: trio.SocketStream) -> None:
        """Send the alert OpenSSL wrote when the handshake failed, as an OpenSSL server does.

        trio drops it (its stream is broken at the error), and a TLS 1.3
        client, whose side of the handshake was already done, would then see
        a reset instead of ``certificate_required`` (RFC 8446 §4.4.2.4). The
        client's request is read to its close, so that closing with it
        unread sends no RST that could overtake the alert.
        """
        pending = getattr(stream, "_outgoing", None)  # trio's outgoing MemoryBIO
        alert = pending.read() if isinstance(pending, ssl.MemoryBIO) else b""
        try:
            if alert:
                await tcp.send_all(alert)
            while await tcp.receive_some(16384):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def _requests(self, stream: trio.SSLStream[trio.SocketStream]) -> None:
        sni = self._names.get(id(stream.context))
        peer = stream.getpeercert()
        subject = None
        if peer:
            for rdn in peer.get("subject", ()):
                for key, value in rdn:
                    if key == "commonName":
                        subject = value
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                data = await stream.receive_some(16384)
                if not data or len(buf) > _HEAD_MAX:
                    return
                buf += data
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            path = parts[1] if len(parts) == 3 else ""
            host = ""
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "host":
                    host = value.strip()
            body = _PAGES.get(path)
            status = 200 if body is not None else 404
            body = body if body is not None else b"not found"
            self.log.append(TlsLogEntry(sni, host, path, status, stream.selected_alpn_protocol(), subject))
            reason = b"OK" if status == 200 else b"Not Found"
            await stream.send_all(b"HTTP/1.1 %d %s\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"
                                  % (status, reason, len(body)) + body)
