"""ring.forwarding.routes: a member's routing id, the member a route claims, and the Routes part (ring.node rules 2 and 4)."""

import pytest

from ring.messages import (Ack, Digest, Join, Leave, Member, MemberState, Packet, Ping, PingAck, Sync,
                           UrlBatch)
from ring.forwarding.routes import Routes, claimed_epoch, member_route, route_member

R = "r"


def test_a_member_route_names_its_member_and_a_tools_route_names_none():
    route = member_route("p1", "00ff")
    assert route == b"p1/00ff" and route_member(route) == "p1"
    assert route_member(b"\x00k\x8bEg") is None  # libzmq's own routing id: a tool
    assert route_member(b"p1/XYZ") is None and route_member(b"/00ff") is None
    with pytest.raises(ValueError):
        member_route("p 1", "00ff")


def test_an_impostor_is_named_by_why():
    plain = Routes()
    assert plain.impostor(b"p2/aa", None, "p2") is None
    assert plain.impostor(b"p3/aa", None, "p2") == "route_spoof"
    curve = Routes(curve=True)
    assert curve.impostor(b"p2/aa", "p2", "p2") is None
    assert curve.impostor(b"p2/aa", None, "p2") == "wrong_user"  # no ZAP User-Id
    assert curve.impostor(b"p2/aa", "p3", "p2") == "wrong_user"  # another member's key
    assert curve.impostor(b"p3/aa", "p2", "p2") == "wrong_user"  # its key, another's route


def test_a_new_route_with_a_later_epoch_is_a_new_process_and_a_late_one_is_not():
    routes = Routes()
    assert not routes.heard(b"p2/aa", "p2", 5)  # first heard: no restart
    assert not routes.heard(b"p2/aa", "p2", 7)  # the same route, a later epoch: the same process
    assert not routes.heard(b"p2/bb", "p2", 6)  # a new route, an older epoch: a late message, or forged
    assert routes.heard(b"p2/bb", "p2", 8)  # a new route, later: a restart
    assert not routes.heard(b"p2/bb", "p2", 8)
    assert not routes.heard(b"p2/aa", "p2", 7)  # its old life, late: nothing changes


def test_forgotten_members_routes_go():
    routes = Routes()
    routes.heard(b"p2/aa", "p2", 5)
    routes.heard(b"p3/aa", "p3", 5)
    routes.keep({"p2"})
    assert routes.heard(b"p3/bb", "p3", 9) is False  # p3 forgotten: first heard again, no restart
    assert routes.heard(b"p2/bb", "p2", 9) is True  # p2 kept: a new route, later: a restart


def test_the_epoch_a_message_claims_for_its_sender():
    me = Member("p2", "tcp://a:2", 9, MemberState.ALIVE, 1.0)
    other = Member("p3", "tcp://a:3", 4, MemberState.ALIVE, 1.0)
    assert claimed_epoch(UrlBatch(R, "p2", 7, 0, ())) == 7
    assert claimed_epoch(Packet(R, "p2", 7)) == 7  # even with no batch in it
    assert claimed_epoch(Join(R, "p2", "tcp://a:2", 1.0, 9)) == 9
    assert claimed_epoch(Leave(R, "p2", 9)) == 9
    assert claimed_epoch(Ping(R, "p2", 1, "p1", (me, other))) == 9
    assert claimed_epoch(PingAck(R, "p2", 1, "p2", (other,))) == -1  # it could say and did not
    assert claimed_epoch(Digest(R, "p2", (other, me))) == 9
    assert claimed_epoch(Sync(R, "p2", (("p2", 9, MemberState.ALIVE, 3),))) == 9
    assert claimed_epoch(Ack(R, "p2", 7, 0)) is None  # an ack never says
