"""The normal site: a small known page graph whose every URL a crawl must fetch once.

Page 0 is ``/``; page ``i`` is ``/p/<i>.html`` and links to its children
``3i+1 .. 3i+3`` (a tree, so every page is reachable), to its parent, to the
index and to one page chosen by a seeded ``random.Random``: links back to
pages already seen, which a crawler must not fetch again. robots.txt allows
everything. :meth:`Site.expected_urls` is the exact set a correct crawl
requests (robots.txt aside), so a test checks the server's log against it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from localweb.hostile.wire import Reply, html, reply

__all__ = ["Site"]

_PAGE = re.compile(r"/p/([0-9]{1,9})\.html")


@dataclass(frozen=True, slots=True)
class Site:
    """``pages`` pages on each of ``hosts``; same graph on every host."""

    hosts: tuple[str, ...] = ("site.test",)
    pages: int = 200
    seed: int = 1

    def __post_init__(self) -> None:
        if self.pages < 1:
            raise ValueError(f"a site needs at least one page, not {self.pages}")

    @staticmethod
    def path(i: int) -> str:
        return "/" if i == 0 else f"/p/{i}.html"

    def page_of(self, path: str) -> int | None:
        if path == "/":
            return 0
        m = _PAGE.fullmatch(path)
        return int(m[1]) if m and 0 < int(m[1]) < self.pages else None

    def links(self, i: int) -> list[str]:
        rng = random.Random(self.seed * 1_000_003 + i)
        out = [self.path(c) for c in range(3 * i + 1, min(3 * i + 4, self.pages))]
        if i:
            out += [self.path((i - 1) // 3), "/"]
        out.append(self.path(rng.randrange(self.pages)))
        return out

    def render(self, host: str, path: str) -> Reply:
        if path == "/robots.txt":
            return reply(200, b"User-agent: *\nAllow: /\n", content_type="text/plain")
        i = self.page_of(path)
        if i is None:
            return reply(404, html("not found"))
        return reply(200, html(self.title(host, i), self.links(i), f"page {i} of {host}"))

    @staticmethod
    def title(host: str, i: int) -> str:
        return f"{host} page {i}"

    def urls(self, host: str, port: int) -> set[str]:
        return {f"http://{host}:{port}{self.path(i)}" for i in range(self.pages)}

    def expected_urls(self, port: int) -> set[str]:
        """Every page of every host, as the crawler normalises them (the port is not 80)."""
        return set().union(*(self.urls(h, port) for h in self.hosts))

    def seeds(self, port: int) -> list[str]:
        return [f"http://{h}:{port}/" for h in self.hosts]
