"""Endless link spaces: link farms and crawler traps, generated while they stream.

Nothing here is held whole: a farm page of a million links (~35 MB) is a
generator of ~35 KiB chunks, consumed as fast as the client reads, and
dropped when it leaves.

- **Link farm** (``farm1.test`` ... ``farmN.test``): page ``/n/<id>`` links
  to ``/n/<id><i>`` for i = 1 ... ``L = links_per_page``, i written with
  the digits of L, so every link of every page is a URL never seen before
  (the ids of a tree of branching ``L``); one link in ``cross`` points to
  the same id on the next farm host, so a farm also spreads across hosts.
  ``/`` is page 0. A page is made from cached chunk templates by
  ``bytes.replace`` of the page id: the server must not cost more CPU than
  the crawler it tests (formatting a million links in Python takes about
  a second, and a crawler reading farm pages at its politeness rate would
  otherwise measure the server's event loop, not itself).
- **Traps** (``trap.test``), the classic three: an infinite calendar
  (``/cal/2026/12`` links the months before and after, for ever), a path
  that deepens (``/a/``, ``/a/a/``, ...) and one that alternates
  (``/x/``, ``/x/y/``, ``/x/y/x/``, ...). Each page is small and valid; only
  the space is endless. A crawler needs a URL length, depth or per-host cap.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from localweb.hostile.wire import Reply, html, reply

__all__ = ["Farm", "trap_page", "TRAP_HOST", "TRAP_SEEDS"]

_NODE = re.compile(r"/n/([0-9]{1,60})")
_CAL = re.compile(r"/cal/(-?[0-9]{1,12})/([0-9]{1,2})")
#: Links written per body chunk: ~35 KiB, so a slow reader holds one chunk.
_LINKS_PER_CHUNK = 1000
TRAP_HOST = "trap.test"
TRAP_SEEDS = ("/", "/cal/2026/12", "/a/", "/x/")


@dataclass(frozen=True, slots=True)
class Farm:
    """``hosts`` link-farm hosts of ``links_per_page`` new links a page."""

    hosts: int = 4
    links_per_page: int = 1_000_000
    cross: int = 100  # every cross-th link goes to the next farm host; 0: never

    def names(self) -> tuple[str, ...]:
        return tuple(f"farm{k}.test" for k in range(1, self.hosts + 1))

    def owns(self, host: str) -> bool:
        return host in self.names()

    def render(self, host: str, path: str) -> Reply:
        if path == "/robots.txt":
            return reply(404, html("no robots.txt"))
        m = _NODE.fullmatch(path)
        if path != "/" and m is None:
            return reply(404, html("not found"))
        node = m[1] if m else "0"
        names = self.names()
        after = names[(names.index(host) + 1) % len(names)]
        return reply(200, self._page(host, node, after))

    def _page(self, host: str, node: str, after: str) -> Iterator[bytes]:
        yield (f"<!doctype html><html><head><title>{host} node {node}</title></head>"
               f"<body><h1>farm node {node}</h1>\n").encode()
        n, cross = self.links_per_page, self.cross
        width = len(str(n))
        node_b, after_b = node.encode(), after.encode()
        for lo in range(1, n + 1, _LINKS_PER_CHUNK):
            chunk = _chunk(lo, min(lo + _LINKS_PER_CHUNK, n + 1), width, cross)
            yield chunk.replace(b"\x01", node_b).replace(b"\x02", after_b)
        yield b"</body></html>\n"


@functools.lru_cache(maxsize=256)
def _chunk(lo: int, hi: int, width: int, cross: int) -> bytes:
    """Links ``lo`` .. ``hi - 1`` of any page, \\x01 for the page id and \\x02 for the next host."""
    parts = []
    for i in range(lo, hi):
        child = f"\x01{i:0{width}d}"
        if cross and i % cross == 0:
            parts.append(f'<a href="//\x02/n/{child}">{child}</a>\n')
        else:
            parts.append(f'<a href="/n/{child}">{child}</a>\n')
    return "".join(parts).encode()


def trap_page(path: str) -> Reply:
    """A page of ``trap.test``; see the module docstring."""
    if path == "/robots.txt":
        return reply(404, html("no robots.txt"))
    if path == "/":
        return reply(200, html("traps", TRAP_SEEDS[1:]))
    m = _CAL.fullmatch(path)
    if m:
        year, month = int(m[1]), int(m[2])
        if not 1 <= month <= 12:
            return reply(404, html("no such month"))
        prev = (year, month - 1) if month > 1 else (year - 1, 12)
        nxt = (year, month + 1) if month < 12 else (year + 1, 1)
        return reply(200, html(f"calendar {year}-{month:02d}",
                               [f"/cal/{prev[0]}/{prev[1]}", f"/cal/{nxt[0]}/{nxt[1]}", "/"]))
    segments = path.strip("/").split("/")
    if path.endswith("/") and set(segments) == {"a"}:
        return reply(200, html(f"depth {len(segments)}", [path + "a/", "/"]))
    alternating = all(s == "xy"[i % 2] for i, s in enumerate(segments))
    if path.endswith("/") and alternating:
        return reply(200, html(f"x/y depth {len(segments)}", [path + "xy"[len(segments) % 2] + "/", "/"]))
    return reply(404, html("not found"))
