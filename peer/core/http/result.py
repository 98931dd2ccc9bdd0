"""What one fetch returns to the crawl core: a frozen result, its failure as data.

``peer.net.fetcher.Fetcher.fetch`` makes one attempt and hands the crawl core
a :class:`FetchResult`: the parts of the response head the core reads
(``peer.core.http.head`` checked each value), the body as decoded, and the
failure, if any, as an ``ErrorKind`` (``peer.net.errorkinds`` maps foreign
exceptions to kinds). It lives in the core because it is the core's main
input: the outcome rules (``peer.core.crawl.outcomes``) are written against
it, and a test builds one by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from peer.core.warc.record import Capture
from peer.errors import ErrorKind

__all__ = ["FetchResult"]


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome of one fetch; ``error`` is None when a response was fully read
    (with ``prefix_ok``: or its first ``max_body`` bytes, ``truncated`` set)."""

    url: str
    status: int | None
    content_type: str
    charset: str | None
    location: str | None
    retry_after: float | None
    body: bytes
    raw_bytes: int
    truncated: bool
    error: ErrorKind | None
    elapsed: float
    address: str | None
    #: Why a header of this response was ignored or clamped (module docstring).
    malformed: tuple[str, ...] = ()
    #: The failure in a few words, for a log line ("connection refused"); "" without one.
    detail: str = ""
    x_robots: tuple[str, ...] = ()  # X-Robots-Tag values and the Link canonical, as
    canonical: str | None = None    # sent (peer.core.http.head.Head)
    #: The addresses tried for the connection, in the order their attempts started
    #: (RFC 8305 races them; ``address`` is the one that won); () if none was tried.
    tried: tuple[str, ...] = ()
    #: The Set-Cookie values, as sent (peer.core.http.cookies reads them), and the
    #: wall time (epoch seconds) the head came: Max-Age counts from it.
    set_cookies: tuple[str, ...] = ()
    received: float = 0.0
    #: The bytes a WARC record needs (``Fetcher(capture=True)`` only, and only
    #: when a response head came): the request as sent, the head as received,
    #: the body before content decoding.
    capture: Capture | None = None
    #: The ETag and Last-Modified as sent, unchecked (peer.core.revisit.policy checks them).
    etag: str | None = None
    last_modified: str | None = None
