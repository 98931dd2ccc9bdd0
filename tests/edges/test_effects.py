"""peer.engine.effects: the engine's one table carries effects out in their order, awaiting where it must."""

from __future__ import annotations

from dataclasses import dataclass

import trio

from peer.engine.effects import Effects


@dataclass(frozen=True)
class Plain:
    name: str


@dataclass(frozen=True)
class Awaited:
    name: str


def _table() -> tuple[Effects, list[str]]:
    done: list[str] = []

    async def send(e: Awaited) -> None:
        await trio.sleep(0)
        done.append(f"sent {e.name}")

    effects = Effects(after=lambda: done.append("after"))
    effects.register({Plain: lambda e: done.append(e.name), Awaited: send}, awaiting=(Awaited,))
    return effects, done


def test_carry_does_each_in_order_then_after_once():
    effects, done = _table()
    effects.carry([Plain("a"), Plain("b")])  # type: ignore[list-item]
    assert done == ["a", "b", "after"]


async def test_an_awaited_effect_waits_for_what_came_before_and_holds_back_what_follows():
    effects, done = _table()
    await effects.carry_async([Plain("a"), Awaited("ack"), Plain("b")])  # type: ignore[list-item]
    assert done == ["a", "after", "sent ack", "b", "after"]


async def test_nothing_before_an_awaited_effect_runs_no_after_for_it():
    effects, done = _table()
    await effects.carry_async([Awaited("ack"), Plain("b")])  # type: ignore[list-item]
    assert done == ["sent ack", "b", "after"]
    done.clear()
    await effects.carry_async([])
    assert done == ["after"]

