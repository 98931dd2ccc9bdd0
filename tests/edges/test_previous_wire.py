"""Today's codec against the previous release's own: frames of wire version 3 mean the same to both.

The previous release's ``ring/messages.py`` and ``ring/forwarding/routes.py``
are read from git (tests/support/previousrelease.py) and loaded beside
today's, so this needs no second process: every message of
tests/ring/test_messages.py's strategy that version 3 has is encoded by
today's peer for a peer of version 3 and read by that peer's own decoder,
and what that peer sends is read by today's. A ring of both trees crawling
is tests/e2e/test_upgrade_ring.py.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from previousrelease import find, show

from ring.forwarding.routes import member_route
from ring.messages import VERSION, decode, encode, speaks
from ring.wireversion import marked_nonce, tool_route

ROOT = Path(__file__).resolve().parents[2]
COMMIT, WHY = find()
pytestmark = pytest.mark.skipif(COMMIT is None, reason=WHY)


def _load(path: str, name: str) -> types.ModuleType:
    """The previous release's module at ``path``, loaded as ``name`` (its imports are today's)."""
    assert COMMIT is not None
    module = types.ModuleType(name)
    module.__file__ = f"{COMMIT[:8]}:{path}"
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    try:
        exec(compile(show(COMMIT, path), module.__file__, "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


def _strategy():  # type: ignore[no-untyped-def]
    """tests/ring/test_messages.py's messages: every type, with new ones as they are added there."""
    spec = importlib.util.spec_from_file_location("_wire_strategies", ROOT / "tests" / "ring" / "test_messages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MESSAGES


OLD = _load("ring/messages.py", "_previous_messages") if COMMIT else None
MESSAGES = _strategy()


def test_the_previous_release_is_one_version_back():
    assert OLD is not None and OLD.VERSION == VERSION - 1


def _as_of(msg, version):  # type: ignore[no-untyped-def]
    """``msg`` as a frame of ``version`` carries it: fields added later at their defaults."""
    return decode(encode(msg, version))


@settings(max_examples=150, deadline=None)
@given(MESSAGES)
def test_what_we_send_a_version_3_peer_it_reads_and_what_it_sends_we_read(msg):
    assert OLD is not None
    if not speaks(type(msg), OLD.VERSION):
        return  # never sent to it (ring.wireversion rule 6)
    frame = encode(msg, OLD.VERSION)
    theirs = OLD.decode(frame)  # its own decoder: raises if it refuses the frame
    assert type(theirs).__name__ == type(msg).__name__
    # what it sends back is the same bytes, and we read the message we meant
    back = OLD.encode(theirs)
    assert back == frame
    assert decode(back) == _as_of(msg, OLD.VERSION)
    assert dataclasses.astuple(theirs) == dataclasses.astuple(_as_of(msg, OLD.VERSION))


def test_our_routing_ids_are_routes_to_the_previous_release():
    old_routes = _load("ring/forwarding/routes.py", "_previous_routes")
    route = member_route("p1", marked_nonce("0123456789abcdef"))
    assert old_routes.route_member(route) == "p1"  # a member's route: its messages are taken
    assert old_routes.route_member(tool_route("0123456789abcdef")) is None  # a tool's: claims no member
