"""Foreign exceptions to error kinds: the one place where trio's, ssl's, zlib's, OSError and
httpx's, httpcore's and h11's errors become the ``error`` column's kinds.

:func:`proxy_error` does the same for a proxy's exchange (python-socks's errors, and
whatever broke the proxy's connection): always one of the three proxy kinds.

:func:`error_kind` names the kind, :func:`error_detail` the failure in a few
words for a log line ("connection refused"); :data:`NETWORK_ERRORS` is what a
fetch turns into a kind (anything else is a bug of ours). The fetcher and the
connector meet only trio's, ssl's, zlib's and OSError; the others' libraries
are looked up in ``sys.modules``, never imported here.
"""

from __future__ import annotations

import os
import ssl
import sys
import zlib
from typing import Any

import trio

from peer.core.http.tunnel import socks_verdict
from peer.errors import ErrorKind, FetchError

__all__ = ["NETWORK_ERRORS", "error_detail", "error_kind", "proxy_error", "tls_kind"]

_CLOSED_EARLY = ("server disconnected", "peer closed connection")
# python-socks's words for a refused login (RFC 1929) and for no method accepted (RFC 1928 §3).
_SOCKS_AUTH_REFUSED = ("Username and password authentication failure",
                       "No acceptable authentication methods")

# OpenSSL's X509_V_ERR_* codes (include/openssl/x509_vfy.h), as
# ssl.SSLCertVerificationError.verify_code carries them.
_VERIFY_KINDS = {
    9: ErrorKind.TLS_EXPIRED,     # CERT_NOT_YET_VALID
    10: ErrorKind.TLS_EXPIRED,    # CERT_HAS_EXPIRED
    62: ErrorKind.TLS_HOSTNAME,   # HOSTNAME_MISMATCH
    64: ErrorKind.TLS_HOSTNAME,   # IP_ADDRESS_MISMATCH
    2: ErrorKind.TLS_UNTRUSTED,   # UNABLE_TO_GET_ISSUER_CERT
    18: ErrorKind.TLS_UNTRUSTED,  # DEPTH_ZERO_SELF_SIGNED_CERT
    19: ErrorKind.TLS_UNTRUSTED,  # SELF_SIGNED_CERT_IN_CHAIN
    20: ErrorKind.TLS_UNTRUSTED,  # UNABLE_TO_GET_ISSUER_CERT_LOCALLY
    21: ErrorKind.TLS_UNTRUSTED,  # UNABLE_TO_VERIFY_LEAF_SIGNATURE
}
# Alerts a server sends about the client's certificate (RFC 8446 §6.2):
# certificate_required when none came, the others when it refused ours. A
# client receives no alert about the server's certificate: that check is its own.
_CLIENT_CERT_ALERTS = ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNSUPPORTED_CERTIFICATE",
                       "CERTIFICATE_REVOKED", "CERTIFICATE_EXPIRED", "CERTIFICATE_UNKNOWN",
                       "UNKNOWN_CA")


def tls_kind(exc: ssl.SSLError) -> ErrorKind:
    """The kind of a TLS failure: the certificate check's verdict by OpenSSL's
    verify code, a server's alert about our client certificate, else ``tls``."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return _VERIFY_KINDS.get(getattr(exc, "verify_code", 0), ErrorKind.TLS)
    reason = getattr(exc, "reason", None) or ""
    if "_ALERT_" in reason and reason.endswith(_CLIENT_CERT_ALERTS):
        return ErrorKind.TLS_CLIENT_CERT
    return ErrorKind.TLS


def error_kind(exc: BaseException) -> ErrorKind | None:
    """The error kind of a foreign exception from a fetch; None if it is not a network error.

    The one place where httpx, httpcore, h11, trio, ssl, zlib and OSError
    errors become kinds. A TLS error anywhere in the cause chain wins:
    httpcore reports a failed handshake as a ConnectError.
    """
    if isinstance(exc, FetchError):
        return exc.kind
    cause: BaseException | None = exc
    for _ in range(8):
        if cause is None:
            break
        if isinstance(cause, ssl.SSLError):
            return tls_kind(cause)
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, (trio.BrokenResourceError, trio.ClosedResourceError)):
        return ErrorKind.RESET
    if isinstance(exc, zlib.error):
        return ErrorKind.DECODE
    kind = _library_kind(exc)
    if kind is not None:
        return kind
    if isinstance(exc, OSError):
        return ErrorKind.CONNECT
    return None


def _library_kind(exc: BaseException) -> ErrorKind | None:
    """The kind of an httpx, httpcore or h11 error, for callers that use those libraries.

    The fetcher itself meets only trio's, ssl's, zlib's and OSError
    (peer.core.http.http1 raises FetchError); the dashboard speaks h11 and scripts use
    httpx. An exception of a library can only exist once the library is
    imported, so the libraries are looked up in ``sys.modules`` instead of
    imported here: a peer starts without loading them (about 60 ms of
    start-up, measured with ``python -X importtime``).
    """
    httpx, httpcore, h11 = (sys.modules.get(m) for m in ("httpx", "httpcore", "h11"))

    def of(module: Any, *names: str) -> tuple[type[BaseException], ...]:
        return tuple(getattr(module, n) for n in names) if module is not None else ()

    if isinstance(exc, of(httpx, "ConnectTimeout") + of(httpcore, "ConnectTimeout")):
        return ErrorKind.CONNECT
    if isinstance(exc, of(httpx, "TimeoutException") + of(httpcore, "TimeoutException")):
        return ErrorKind.TIMEOUT
    if isinstance(exc, of(httpx, "ConnectError") + of(httpcore, "ConnectError")):
        return ErrorKind.CONNECT
    if isinstance(exc, of(httpx, "ReadError", "WriteError") + of(httpcore, "ReadError", "WriteError")):
        return ErrorKind.RESET
    if isinstance(exc, of(httpx, "RemoteProtocolError") + of(httpcore, "RemoteProtocolError")
                  + of(h11, "RemoteProtocolError")):
        # httpcore's and h11's words for a connection closed before the end.
        return ErrorKind.RESET if str(exc).lower().startswith(_CLOSED_EARLY) else ErrorKind.PROTOCOL
    if isinstance(exc, of(httpx, "ProtocolError") + of(httpcore, "ProtocolError") + of(h11, "ProtocolError")):
        return ErrorKind.PROTOCOL
    if isinstance(exc, of(httpx, "UnsupportedProtocol", "InvalidURL") + of(httpcore, "UnsupportedProtocol")):
        return ErrorKind.SCOPE
    if isinstance(exc, of(httpx, "DecodingError")):
        return ErrorKind.DECODE
    if isinstance(exc, of(httpx, "TransportError")
                  + of(httpcore, "NetworkError", "ConnectionNotAvailable")):
        return ErrorKind.CONNECT
    return None


def proxy_error(exc: BaseException, proxy: str, target: str) -> FetchError:
    """A failed proxy exchange as a proxy kind (peer/core/http/tunnel.py says which is which).

    python-socks's errors: ``ProxyConnectionError`` and ``ProxyTimeoutError``
    (the proxy not reached, or silent), ``ProxyError`` with the SOCKS5 reply
    code, or without one for a refused login (its RFC 1929 and RFC 1928 §3
    messages, matched here and pinned by tests/edges/test_proxy.py) or a broken
    exchange; an OSError or a trio stream error mid-exchange is the proxy's
    connection lost.
    """
    if isinstance(exc, FetchError):
        return exc
    code = getattr(exc, "error_code", None)
    text = str(exc)
    auth = code is None and text.startswith(_SOCKS_AUTH_REFUSED)
    if type(exc).__name__ == "ProxyError" or auth:
        return socks_verdict(code, auth, proxy, target)
    if isinstance(exc, TimeoutError):
        return FetchError(ErrorKind.PROXY, f"{proxy} did not answer in time")
    return FetchError(ErrorKind.PROXY, f"{proxy}: {error_detail(exc)}")


def error_detail(exc: BaseException) -> str:
    """A failure in a few words for a log line: the OS's words for the first errno in
    the cause chain ("connection refused"), else the exception's own message."""
    todo: list[BaseException] = [exc]
    for _ in range(16):
        if not todo:
            break
        e = todo.pop(0)
        if isinstance(e, ssl.SSLError):  # its errno is OpenSSL's error class, not the OS's
            return str(getattr(e, "verify_message", None) or e.reason or e)[:200].lower()
        if isinstance(e, OSError) and e.errno:
            return os.strerror(e.errno).lower()
        todo += getattr(e, "exceptions", ())
        if e.__cause__ is not None:
            todo.append(e.__cause__)
    if isinstance(exc, FetchError):
        return str(exc).split(": ", 1)[-1]
    return str(exc)[:200]


#: What fetch() turns into an error kind; anything else is a bug and propagates.
NETWORK_ERRORS = (OSError, trio.BrokenResourceError, trio.ClosedResourceError, zlib.error)
