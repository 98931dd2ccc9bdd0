"""The crawl engine's one effects table: each effect the core returns, to the call that carries it out (edge).

``peer.core.door.peer.PeerCore`` returns one ordered list of effects from every
call, the crawl core's and the ring node's alike; the engine carries them
out here, in order, by their type alone (trio-websocket's ``{EventType:
handler}`` table), never asking which inner core made one. The handlers are
the engine's parts' (``peer.engine.crawler`` registers them). A handler
that returns an awaitable (a ``Reply`` on its route) can only be carried
out by :meth:`Effects.carry_async`, which awaits it in its place: the
effects after it wait for it, as the ring's ack order needs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from peer.core.door.peer import PeerEffect

__all__ = ["Effects", "Handler"]

#: Any: each handler takes the effect type of its key, which a dict's type cannot say.
Handler = Callable[[Any], Awaitable[None] | None]


class Effects:
    """The table (module docstring); ``after`` runs once a list is carried out, and in
    :meth:`carry_async` after each run of it that comes before an awaited effect."""

    def __init__(self, after: Callable[[], None]) -> None:
        self._handlers: dict[type, Handler] = {}
        self._awaiting: set[type] = set()
        self._after = after

    def register(self, handlers: Mapping[type, Handler], *, awaiting: Iterable[type] = ()) -> None:
        """Add handlers, one an effect type; ``awaiting``: the types whose handlers return awaitables."""
        self._handlers.update(handlers)
        self._awaiting.update(awaiting)

    def carry(self, effects: Iterable[PeerEffect]) -> None:
        """Carry out ``effects`` in their order; none may need awaiting."""
        handlers = self._handlers
        for effect in effects:
            got = handlers[type(effect)](effect)
            if got is not None:  # pragma: no cover - only a received frame gives replies
                raise RuntimeError(f"{effect!r} needs the receiver")
        self._after()

    async def carry_async(self, effects: Iterable[PeerEffect]) -> None:
        """:meth:`carry` for a received frame's effects: each awaitable awaited in its place."""
        handlers = self._handlers
        batch: list[PeerEffect] = []
        for effect in effects:
            if type(effect) in self._awaiting:
                if batch:  # what came before it, carried out first (and ``after`` run)
                    self.carry(batch)
                    batch = []
                got = handlers[type(effect)](effect)
                if got is not None:
                    await got
            else:
                batch.append(effect)
        self.carry(batch)
