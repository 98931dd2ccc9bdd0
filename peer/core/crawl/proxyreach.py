"""Whether each proxy has answered in this run: one that never has is not waited for (pure).

A proxy is one door for every host behind it (``crawl.proxy``, a
``[[site]]`` block's ``proxy``). When it cannot be reached (error kind
``proxy``: its port closed, its connect timed out, or it broke its
protocol, as a SOCKS port given as ``http://`` does), no host behind it can
be fetched, and a robots.txt held for ``crawl.robots_retry`` and
``robots_tries`` made a crawl wait 3 min 30 s (30 + 60 + 120 s) before it
ended without a page, saying only "robots.txt ... unreachable" host by
host. Rules:

1. A proxy has *answered* once any request through it got past it: an HTTP
   answer, or any error but ``proxy`` (``proxy_refused`` and
   ``proxy_auth`` are its own answers; ``timeout`` or ``reset`` came from
   the site, through it).
2. A ``proxy`` failure behind a proxy that has not answered in this run is
   final (``peer.core.crawl.outcomes``, as ``dns`` is): a robots.txt's
   host has its URLs recorded as rows ``proxy`` at once, a page is not
   retried, so a crawl whose proxy is down or mistyped ends in a second,
   with exit status 3 when nothing was fetched (docs/operations.md, Exit
   statuses). The first such failure is one warning that names the proxy
   and its key (:meth:`ProxyReach.warning`); the hosts behind it get no
   line each.
3. A proxy that answered earlier in this run and then fails is an outage,
   not a mistake: its hosts' robots.txt is held and asked again under
   ``crawl.robots_retry`` and ``robots_tries``, and their pages retried
   under ``[retry]`` (``proxy`` is one of its ``errors``), as before.
4. Rows ``proxy`` are failed pages: ``--retry-failed`` queues them again
   once the proxy is up (peer/core/crawl/failedpages.py).
"""

from __future__ import annotations

from collections.abc import Callable

from peer.errors import ErrorKind

__all__ = ["ProxyReach", "proxy_of"]

_PROXY = ErrorKind.PROXY.value


def proxy_of(block: int, block_proxy: str | None, default: str) -> tuple[str, str] | None:
    """(the proxy URL a host goes through, its key): its block's (``"direct"``: none), else
    ``crawl.proxy``'s; None for a direct connection."""
    if block_proxy is not None:
        return None if block_proxy == "direct" else (block_proxy, f"site[{block}].proxy")
    return (default, "crawl.proxy") if default else None


class ProxyReach:
    """Which proxies answered in this run (module docstring); ``proxy_for(host)`` names a host's
    proxy and its key (:func:`proxy_of`)."""

    __slots__ = ("_proxy_for", "_answered", "_warned")

    def __init__(self, proxy_for: Callable[[str], tuple[str, str] | None]) -> None:
        self._proxy_for = proxy_for
        self._answered: set[str] = set()
        self._warned: set[str] = set()

    def saw(self, host: str, error: str | None) -> None:
        """A request to ``host`` ended with ``error`` (None: an answer): its proxy answered unless ``proxy`` (rule 1)."""
        if error != _PROXY:
            proxy = self._proxy_for(host)
            if proxy is not None:
                self._answered.add(proxy[0])

    def unreached(self, host: str, error: str | None) -> tuple[str, str] | None:
        """(proxy, key) of ``host`` if this ``error`` is its proxy's failure and that proxy never
        answered in this run (rule 2); else None."""
        if error != _PROXY:
            return None
        proxy = self._proxy_for(host)
        return proxy if proxy is not None and proxy[0] not in self._answered else None

    def warning(self, proxy: str, key: str, detail: str) -> str | None:
        """The one warning for ``proxy`` (rule 2), or None if it was said already."""
        if proxy in self._warned:
            return None
        self._warned.add(proxy)
        detail = detail.removeprefix(f"{proxy}: ") or "no connection"
        return (f"the proxy {proxy} ({key}) cannot be reached and has not answered in this run "
                f"({detail}): no site behind it can be fetched, so their URLs are recorded as "
                f"'proxy' now rather than waited for (crawl.robots_retry); start the proxy or correct "
                f"{key}, then crawl them again with --retry-failed")
