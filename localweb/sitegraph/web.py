"""SiteGraph: the graph, its pages and its oracle as one object, for tests and benchmarks.

``SiteGraph(hosts=6, pages_per_host=20)`` is a :class:`~localweb.sitegraph.graph.Graph`
that also renders (:mod:`localweb.sitegraph.pages`) and answers the oracle's questions
(:mod:`localweb.sitegraph.oracle`), so a test holds one object:
``graph.expected_urls(port)``, ``graph.render(host, path, port)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from localweb.sitegraph import oracle
from localweb.sitegraph.graph import DEFAULT_ALLOW, Graph, SiteSpec
from localweb.sitegraph.pages import Page, Pages

__all__ = ["SiteGraph"]


class SiteGraph(Graph):
    """The seeded site graph: routes, links, robots rules, pages and expected sets."""

    def __init__(self, spec: SiteSpec | None = None, **overrides: Any) -> None:
        super().__init__(spec, **overrides)
        self._pages = Pages(self)

    def render(self, host: str, path: str, port: int) -> Page:
        """The response for ``path`` (query ignored) on ``host`` of the graph hosts."""
        return self._pages.render(host, path, port)

    def expected_urls(self, port: int, *, seeds: Iterable[str] | None = None,
                      allow: Sequence[str] = DEFAULT_ALLOW, deny: Sequence[str] = (),
                      max_depth: int = 0, obey_robots: bool = True, nofollow: bool = True,
                      bad: bool = False, skip_extensions: Sequence[str] = oracle.GRAPH_SKIPPED,
                      exclude: Sequence[str] = ()) -> set[str]:
        """:func:`localweb.sitegraph.oracle.expected_urls` of this graph."""
        return oracle.expected_urls(self, port, seeds=seeds, allow=allow, deny=deny, max_depth=max_depth,
                                    obey_robots=obey_robots, nofollow=nofollow, bad=bad,
                                    skip_extensions=skip_extensions, exclude=exclude)

    def disallowed_urls(self, port: int, *, seeds: Iterable[str] | None = None,
                        allow: Sequence[str] = DEFAULT_ALLOW, deny: Sequence[str] = (),
                        max_depth: int = 0, nofollow: bool = True, bad: bool = False,
                        skip_extensions: Sequence[str] = oracle.GRAPH_SKIPPED,
                        exclude: Sequence[str] = ()) -> set[str]:
        """:func:`localweb.sitegraph.oracle.disallowed_urls` of this graph."""
        return oracle.disallowed_urls(self, port, seeds=seeds, allow=allow, deny=deny,
                                      max_depth=max_depth, nofollow=nofollow, bad=bad,
                                      skip_extensions=skip_extensions, exclude=exclude)

    def trap_urls(self, port: int) -> set[str]:
        """:func:`localweb.sitegraph.oracle.trap_urls` of this graph."""
        return oracle.trap_urls(self, port)

    def shop_items(self, port: int) -> list[dict[str, Any]]:
        """:func:`localweb.sitegraph.oracle.shop_items` of this graph."""
        return oracle.shop_items(self, port)
