"""The metrics server's edge: HTTP(S) in threads of its own, the event loop's heartbeat, the token read.

Every decision is ``peer.core.run.probes`` (which path, which status, whether
the token matches); this module does the I/O around it:

- :class:`OpServer` is a threaded WSGI server (the standard library's
  ``wsgiref`` with ``ThreadingMixIn``, as ``prometheus_client``'s own
  ``start_http_server`` is built), one thread a request, so a slow or stuck
  scraper holds a thread, never the crawl. ``/metrics`` is handed to
  ``prometheus_client``'s WSGI app (content negotiation, gzip, the
  OpenMetrics format when asked); the probes and refusals are answered here.
- TLS (``[metrics] tls_cert``/``tls_key``) wraps the listening socket with
  the handshake done in the request's thread (``do_handshake_on_connect``
  off), so a client that stalls its handshake never holds ``accept``.
- :func:`heartbeat` runs on the trio loop and writes a
  :class:`~peer.core.run.probes.Beat` (the time and the readiness read
  then) every ``HEARTBEAT`` seconds; the HTTP threads read the last one and
  never wait on the loop, so ``/healthz`` answers even when the loop is
  stuck, and says so (probes rule 2).
- :func:`read_token` reads the bearer token once at start, from
  ``[metrics] token_file`` or ``token_env``; a missing or empty one is a
  ConfigError (one line, exit 2), never a server without the token the
  operator asked for.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import trio

from peer.core.config.metrics import MetricsConfig
from peer.core.run.probes import HEARTBEAT, STUCK_AFTER, Beat, Readiness, answer
from peer.errors import ConfigError

__all__ = ["OpServer", "heartbeat", "read_token", "tls_context"]

log = logging.getLogger("peer.metrics")

#: Seconds a connection may take to send its request (TLS handshake included).
REQUEST_TIMEOUT = 10.0

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def read_token(m: MetricsConfig, where: str, environ: dict[str, str] | None = None) -> str | None:
    """The bearer token ``[metrics]`` names (None: none set); ConfigError if it names one not there."""
    env = os.environ if environ is None else environ
    if m.token_env:
        token = env.get(m.token_env, "").strip()
        if not token:
            raise ConfigError(where, "metrics.token_env", f"the environment variable {m.token_env} is not set "
                                                          "or empty: export the token, or unset the key")
        return token
    if m.token_file:
        try:
            with open(m.token_file, encoding="utf-8") as f:
                token = f.readline().strip()
        except OSError as exc:
            raise ConfigError(where, "metrics.token_file",
                              f"cannot read {m.token_file}: {exc.strerror or exc}") from None
        if not token:
            raise ConfigError(where, "metrics.token_file", f"{m.token_file} is empty: its first line is the token")
        return token
    return None


def tls_context(m: MetricsConfig, where: str) -> ssl.SSLContext | None:
    """The server's TLS context of ``[metrics] tls_cert``/``tls_key`` (None: plain HTTP)."""
    if not m.tls_cert:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(m.tls_cert, m.tls_key or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(where, "metrics.tls_cert", f"cannot load {m.tls_cert}"
                          f"{' and ' + m.tls_key if m.tls_key else ''}: {getattr(exc, 'strerror', None) or exc}") from None
    return ctx


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client's broken request (plain HTTP on the TLS port, a reset, a
        # timeout) is its own: one DEBUG line, not socketserver's traceback
        # on the peer's stderr.
        log.debug("metrics request from %s failed", client_address, exc_info=True)


class _Threading6(_Threading):
    address_family = socket.AF_INET6


class _Quiet(WSGIRequestHandler):
    """No line on stderr per request (the scrapes would flood the peer's log)."""

    # A client that stalls (its TLS handshake, its request head) gives its
    # thread back after this long instead of holding it for good.
    timeout = REQUEST_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        pass


class OpServer:
    """``/metrics``, ``/healthz`` and ``/readyz`` on ``host:port`` (module docstring); ``beat``: the loop's."""

    def __init__(self, host: str, port: int, metrics_app: WsgiApp, *, token: str | None,
                 tls: ssl.SSLContext | None, stuck_after: float = STUCK_AFTER) -> None:
        self.beat: Beat | None = None
        self._stuck_after = stuck_after
        self._metrics_app = metrics_app
        self._token = token
        server_class = _Threading6 if ":" in host else _Threading
        self._httpd = make_server(host, port, self._app, server_class=server_class, handler_class=_Quiet)
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True,
                                                 do_handshake_on_connect=False)
        self.port: int = self._httpd.server_port
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="metrics server", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        """Stop serving (blocks up to serve_forever's 0.5 s poll: call it off the loop)."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain; charset=utf-8"),
                                                      ("Allow", "GET, HEAD")])
            return [b"only GET\n"]
        got = answer(environ.get("PATH_INFO", ""), environ.get("HTTP_AUTHORIZATION"), token=self._token,
                     beat=self.beat, now=time.monotonic(), stuck_after=self._stuck_after)
        if got.metrics:
            return self._metrics_app(environ, start_response)
        headers = [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")]
        if got.challenge:
            headers.append(("WWW-Authenticate", 'Bearer realm="ringcrawl metrics"'))
        start_response(f"{got.status} {HTTPStatus(got.status).phrase}", headers)
        return [got.body.encode()]


async def heartbeat(server: OpServer, read: Callable[[], Readiness]) -> None:
    """Write the loop's heartbeat and readiness into ``server`` every HEARTBEAT seconds, forever."""
    while True:
        server.beat = Beat(time.monotonic(), read())
        await trio.sleep(HEARTBEAT)
