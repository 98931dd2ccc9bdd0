"""A planned restart's own word is not gossiped again (``Membership._spreads``): its announce
and its return reach the members from the member itself, and anti-entropy brings them to the
rest, so a rolling restart costs a peer no more bytes than a quiet ring.

``scripts/bench_membership.py --rolling-restart --against TREE`` measures the bytes at 16 to 512
peers against a previous release; this is the rule, on 12 peers of the simulated network.
"""

from __future__ import annotations

from membershipnet import DEAD_AFTER, INTERVAL, restartable

from ring.membership.sim import SimNet
from ring.messages import MemberState, Message, Ping, PingAck, PingReq

HOLD, RING = 60.0, "demo"
PEERS = [f"p{i}" for i in range(12)]


class Tapped(SimNet):
    """The simulated network, noting who sent which member's record in a probe message."""

    def __init__(self, **kw):  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self.carried: list[tuple[float, str, str, str, MemberState, int, str]] = []

    def _send(self, src: str, out: list[tuple[str, Message]], cause: str) -> None:
        for dst, msg in out:
            if isinstance(msg, (Ping, PingAck, PingReq)):
                self.carried += [(self.now, src, dst, r.id, r.state, r.incarnation, type(msg).__name__)
                                 for r in msg.updates]
        super()._send(src, out, cause)


def ring(seed: int = 3, loss: float = 0.0) -> tuple[Tapped, set[str]]:
    seeds = [(p, f"tcp://10.0.0.{i}:5701") for i, p in enumerate(PEERS)]
    resumed: set[str] = set()

    net = Tapped(seed=seed, loss=loss)
    for i, p in enumerate(PEERS):
        net.add(p, restartable(p, seeds, resumed, hold=HOLD, ring=RING), i * 0.04)
    net.run_until(1.0)
    assert net.run_until_converged(limit=30.0) >= 0
    net.run_for(8.0)
    return net, resumed


def restart(net: Tapped, resumed: set[str], victim: str) -> tuple[float, int]:
    """A planned restart of ``victim``, down twice dead_after: (when it came back, its new incarnation)."""
    net.announce_restart(victim)
    for _ in range(8):
        if net.peers[victim].announced():
            break
        net.run_for(INTERVAL)
    net.crash(victim)
    net.run_for(2 * DEAD_AFTER)
    resumed.add(victim)
    net.restart(victim)
    back = net.now
    net.run_for(0.01)
    return back, net.peers[victim].me.incarnation


def test_a_restarting_record_and_a_return_travel_from_the_member_alone():
    net, resumed = ring()
    victim = "p5"
    net.carried.clear()
    back, incarnation = restart(net, resumed, victim)
    net.run_for(20.0)
    # Its restarting record: only the member's announce carries it to a third party
    # (a peer may still tell the member itself, so that it refutes).
    relayed = [c for c in net.carried if c[3] == victim and c[4] is MemberState.RESTARTING
               and c[1] != victim and c[2] != victim]
    assert relayed == []
    # Its return, alive at the new incarnation: told by itself, never piggybacked by another.
    told_back = [c for c in net.carried if c[3] == victim and c[5] == incarnation and c[1] != victim]
    assert told_back == []
    assert any(c[1] == victim and c[5] == incarnation for c in net.carried)
    # ... and yet every peer holds it back, alive, long before its hold (a minute) would run out.
    for p in PEERS:
        m = net.peers[p].members()[victim]
        assert m.state is MemberState.ALIVE and m.incarnation == incarnation, p
    assert not [e for e in net.events if e.event.state is MemberState.DEAD]


def test_every_peer_learns_each_return_within_a_few_seconds_under_loss():
    net, resumed = ring(seed=4, loss=0.1)
    for victim in ("p2", "p9"):
        back, incarnation = restart(net, resumed, victim)
        learned: dict[str, float] = {}
        while net.now - back < 30.0 and len(learned) < len(PEERS):
            net.run_for(0.25)
            for p in PEERS:
                m = net.peers[p].members()[victim]
                if p not in learned and m.state is MemberState.ALIVE and m.incarnation == incarnation:
                    learned[p] = net.now - back
        assert len(learned) == len(PEERS), sorted(set(PEERS) - set(learned))
        assert max(learned.values()) < 10.0, learned  # restart_hold is 60 s
    assert not [e for e in net.events if e.event.state is MemberState.DEAD]


def test_the_answers_to_an_announce_carry_no_record():
    # The member exits once each has answered: a record sent to it would be
    # bytes for nothing, and would count as one of that record's sends.
    net, resumed = ring()
    victim = "p7"
    net.carried.clear()
    net.announce_restart(victim)
    net.run_for(2 * INTERVAL)
    assert net.peers[victim].announced()
    assert net.carried and [c for c in net.carried if c[2] == victim and c[6] == "PingAck"] == []
