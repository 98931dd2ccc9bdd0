"""``[sitemaps]``: how a crawl finds sitemaps (sitemaps.org 0.9) and the caps on reading them.

A section of cluster.toml in a module of its own, declared like the others
(``peer.core.config.keys``) and listed in ``peer.core.config.cluster.SECTIONS``. The
caps are :class:`peer.core.sitemaps.document.SitemapLimits`'s, whose defaults are the
protocol's own limits (50,000 URLs and 50 MiB a file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from peer.core.config.keys import at_least_one, key
from peer.core.sitemaps.document import SitemapLimits
from peer.core.urls.normalize import normalize
from peer.errors import URLError

__all__ = ["SitemapsConfig"]

_DEFAULTS = SitemapLimits()


def _urls(v: Any) -> str | None:
    for url in v:
        try:
            normalize(url)
        except (URLError, TypeError):
            return f"a list of http(s) URLs ({url!r} is not one)"
    return None


def _non_negative(v: Any) -> str | None:
    return None if v >= 0 else "an integer >= 0"


@dataclass(frozen=True, slots=True)
class SitemapsConfig:
    """``[sitemaps]``: sitemaps named by robots.txt or listed here, each fetched by its host's owner."""

    from_robots: bool = key(bool, True, "read the sitemaps a host's robots.txt names in its Sitemap: lines (coverage: pages no link reaches)")
    seeds: tuple[str, ...] = key(list, [], "sitemap URLs to start from besides robots.txt's (each may list URLs under its own directory only)", _urls)
    max_urls: int = key(int, _DEFAULTS.max_urls, "entries read of one sitemap file (URLs, or sitemaps of an index); the rest are cut and counted (the protocol's limit)", at_least_one)
    max_bytes: int = key(int, _DEFAULTS.max_bytes, "bytes of one sitemap file, as fetched and again uncompressed; past them it is cut and counted (the protocol's limit, 50 MiB)", at_least_one)
    max_depth: int = key(int, _DEFAULTS.max_depth, "index levels followed below a sitemap named by robots.txt or seeded; deeper ones are refused and counted", _non_negative)
    max_per_host: int = key(int, _DEFAULTS.max_per_host, "sitemaps fetched from one host in a run; the next are refused and counted", at_least_one)

    def limits(self) -> SitemapLimits:
        """The caps as the sitemap cores take them."""
        return SitemapLimits(self.max_urls, self.max_bytes, self.max_depth, self.max_per_host)
