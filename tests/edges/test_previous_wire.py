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
from ring.messages import VERSION, MemberState, MemberStatus, StatusReply, decode, encode, speaks
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


def _same(theirs, ours) -> bool:  # type: ignore[no-untyped-def]
    """Whether the previous release's value says what ours does, field by field of its layout
    (ours may have fields added since: their defaults, by :func:`_as_of`)."""
    if dataclasses.is_dataclass(theirs):
        return type(theirs).__name__ == type(ours).__name__ and all(
            _same(getattr(theirs, f.name), getattr(ours, f.name)) for f in dataclasses.fields(theirs))
    if isinstance(theirs, tuple):
        return isinstance(ours, tuple) and len(theirs) == len(ours) and all(map(_same, theirs, ours))
    return bool(theirs == ours)


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
    assert _same(theirs, _as_of(msg, OLD.VERSION))


def test_a_status_row_reaches_a_version_3_tool_without_its_added_fields():
    assert OLD is not None
    row = MemberStatus("p1", "tcp://h:1", MemberState.ALIVE, 0.5, 3, 1.0, 2, 1, 0, 0, 0.0, 0.0, 1.0,
                       voters=("p1",), wire_version=VERSION)
    theirs = OLD.decode(encode(StatusReply("demo", "p1", (row,), 7), OLD.VERSION))
    assert theirs.members[0].voters == ("p1",) and not hasattr(theirs.members[0], "wire_version")
    # and a version 3 peer's row reads here as one of version 3
    ours = decode(OLD.encode(theirs))
    assert ours.members[0] == dataclasses.replace(row, wire_version=OLD.VERSION)


def test_our_routing_ids_are_routes_to_the_previous_release():
    old_routes = _load("ring/forwarding/routes.py", "_previous_routes")
    route = member_route("p1", marked_nonce("0123456789abcdef"))
    assert old_routes.route_member(route) == "p1"  # a member's route: its messages are taken
    assert old_routes.route_member(tool_route("0123456789abcdef")) is None  # a tool's: claims no member
