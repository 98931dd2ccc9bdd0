"""What the parts of ``Crawler`` share: the engine's state, declared once (edge).

``peer.engine.crawler.Crawler`` is one class written in six modules, one a
concern: its scheduler and effects table (``crawler``), crash safety and the
exact seen set (``durability``), its face to the ring (``ringface``), its
figures (``reporting``) and its sitemap fetch (``sitemapfetch``). Each part subclasses :class:`CrawlerParts`, which
declares the attributes ``Crawler.__init__`` sets and the calls every part
makes into the others, so that each part reads (and type-checks) on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import trio

from peer.core.config.cluster import ClusterConfig
from peer.core.crawl.core import CrawlCore, Effect
from peer.net.resolver import Resolver
from peer.results.store import ResultStore
from peer.state.journal import PeerState

__all__ = ["CrawlerParts"]


class CrawlerParts:
    """The attributes and calls the parts of ``Crawler`` share (module docstring)."""

    cfg: ClusterConfig
    peer_id: str
    core: CrawlCore
    clock: Callable[[], float]
    node: Any
    data_dir: Path
    resolver: Resolver
    _state: PeerState | None
    _store: ResultStore | None
    _wake: trio.Event
    _turn: trio.Lock

    def _apply(self, effects: Iterable[Any]) -> None:
        """Carry out effects through the engine's one table (``Crawler._apply``)."""
        raise NotImplementedError

    def _did(self, effects: Iterable[Effect]) -> None:
        """The crawl's own effects, their Forwards first put in the Outbox (``Crawler._did``)."""
        raise NotImplementedError
