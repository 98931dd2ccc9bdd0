"""ring.membership.hostgate: after a ring change only the hosts whose owner changed wait.

From the pure :class:`~ring.membership.lease.Lease` (a vouch lists the rings
its peer held within its grace; a host goes when a majority's rings all give
it to us), through the proof's own case played out by hand, to Memberships on
tests/support/leasenet.py's ``LeaseNet``: a peer that dies and comes back
costs the hosts that did not move nothing, and under random splits, stalls
and restarts no two peers may ever start a request to one host at once.
"""

from __future__ import annotations

import functools
import random

import pytest
from leasenet import LEASE, LeaseNet
from membershipnet import INTERVAL
from test_lease import chaos, one_ring_among_holders

from ring.hashring import HashRing
from ring.membership.hostgate import MAX_RECENT, RingBook
from ring.membership.lease import GRACE_FACTOR, Lease, fingerprint, vouch_print
from ring.messages import RecentRing

VNODES = 16
FIVE = {f"p{i}": 1.0 for i in range(5)}
FOUR = {f"p{i}": 1.0 for i in range(4)}  # p4 dead
QUORUM5 = sorted(FIVE)
HOSTS = [f"h{i}.test" for i in range(400)]


RINGS = {id(FIVE): HashRing(FIVE, VNODES), id(FOUR): HashRing(FOUR, VNODES)}


def owner(live: dict[str, float], host: str) -> str:
    return RINGS[id(live)].owner(host)


@functools.cache
def kept(me: str) -> list[str]:
    """Hosts ``me`` owns before and after p4's death."""
    return [h for h in HOSTS if owner(FIVE, h) == me and owner(FOUR, h) == me]


@functools.cache
def gained(me: str) -> list[str]:
    """Hosts ``me`` owns after p4's death only: they moved to it."""
    return [h for h in HOSTS if owner(FIVE, h) == "p4" and owner(FOUR, h) == me]


def peer(me: str, live: dict[str, float], now: float = 0.0) -> Lease:
    ls = Lease(me, LEASE, INTERVAL)
    ls.ring_changed(live, now)
    return ls


def answer(prober: Lease, voucher: Lease, seq: int, sent: float, answered: float | None = None) -> None:
    """``voucher`` answers, at ``answered`` on its clock, the ping ``prober`` sent at ``sent``."""
    prober.sent(seq, voucher.self_id, sent)
    v = voucher.vouching(sent if answered is None else answered)
    prober.acked(seq, voucher.self_id, v.print, v.recent, v.settle_ms)


# -- a vouch within a grace ----------------------------------------------------------


def test_a_vouch_lists_the_ring_left_within_the_grace_as_a_difference_and_then_no_more():
    y = peer("p1", FIVE)
    y.ring_changed(FOUR, 10.0)
    v = y.vouching(10.5)
    assert v.print == vouch_print(fingerprint(FOUR), 0) and v.whole == 0  # a version-3 prober: nothing
    assert v.recent == (RecentRing(fingerprint(FIVE), (("p4", 1.0),), ()),)
    assert abs(v.settle - (y.grace - 0.5)) < 1e-9
    assert y.vouching(10.0 + y.grace).recent == ()


def test_more_rings_than_max_recent_within_a_grace_vouch_for_nothing():
    y = peer("p1", FIVE)
    rings = [{**FIVE, "p4": 1.0 + i / 10} for i in range(1, MAX_RECENT + 2)]
    for i, live in enumerate(rings[:MAX_RECENT]):
        y.ring_changed(live, 1.0 + i * 0.1)
    assert len(y.vouching(1.5).recent) == MAX_RECENT
    y.ring_changed(rings[MAX_RECENT], 1.5)
    assert y.vouching(1.6).print == 0


def test_a_ring_is_rebuilt_from_either_side_of_the_difference_and_checked_by_its_print():
    def printer(live):
        return vouch_print(fingerprint(live), 0)

    book = RingBook(2.5, printer)
    book.changed(printer(FIVE), FIVE, 0.0, True)
    now_fp, then_fp = printer(FOUR), printer(FIVE)
    diff = RecentRing(then_fp, (("p4", 1.0),), ())
    # We know the ring it left (ours): its current one is rebuilt from it.
    assert book.read(now_fp, (diff,)) == frozenset({now_fp, then_fp})
    assert book.ring_known(now_fp)
    other = RingBook(2.5, printer)
    other.changed(now_fp, FOUR, 0.0, True)  # we know its current one: the old one is rebuilt
    assert other.read(now_fp, (diff,)) == frozenset({now_fp, then_fp})
    # A difference that does not give the print it names is no vouch at all.
    lie = RingBook(2.5, printer)
    lie.changed(now_fp, FOUR, 0.0, True)
    assert lie.read(now_fp, (RecentRing(then_fp, (("p9", 1.0),), ()),)) is None
    # Nor is one whose rings we cannot reach.
    assert RingBook(2.5, printer).read(now_fp, (diff,)) is None


# -- the host's lease -------------------------------------------------------------------


def settled_ring(me: str = "p0") -> tuple[Lease, dict[str, Lease]]:
    """``me`` holding its lease on FIVE, from p1's and p2's vouches at 1.0."""
    x = peer(me, FIVE)
    others = {p: peer(p, FIVE) for p in QUORUM5 if p != me}
    for i, p in enumerate(("p1", "p2")):
        answer(x, others[p], i + 1, 1.0)
    assert x.state(QUORUM5, 1.5).held
    return x, others


def test_right_after_a_change_the_hosts_that_kept_their_owner_go_and_the_moved_ones_wait():
    x, others = settled_ring()
    # p4 is dead: p0, p1 and p2 all move to FOUR at 2.0, within a round.
    x.ring_changed(FOUR, 2.0)
    for p in ("p1", "p2"):
        others[p].ring_changed(FOUR, 2.0)
    answer(x, others["p1"], 3, 2.1)
    st = x.state(QUORUM5, 2.2)
    assert not st.held and st.open  # the old rule: every host paused for a grace
    gate = x.gate([QUORUM5], 2.2, VNODES)
    assert kept("p0") and gained("p0")
    assert all(gate.may(h) for h in kept("p0"))
    assert not any(gate.may(h) for h in gained("p0"))
    # Hosts of others never go here, in any ring.
    assert not any(gate.may(h) for h in HOSTS if owner(FOUR, h) != "p0" and owner(FIVE, h) != "p0")


def test_a_moved_host_goes_once_a_majority_vouches_with_no_ring_that_gave_it_elsewhere():
    x, others = settled_ring()
    for lease in (x, others["p1"], others["p2"]):
        lease.ring_changed(FOUR, 2.0)
    h = gained("p0")[0]
    seq = 10
    t = 2.0
    while t < 2.0 + x.grace + 2 * INTERVAL:
        for p in ("p1", "p2"):
            seq += 1
            answer(x, others[p], seq, t)
        if x.gate([QUORUM5], t, VNODES).may(h):
            break
        t += INTERVAL / 5
    # Not before the grace of every vouch it rests on (ours too) was over.
    assert 2.0 + x.grace <= t <= 2.0 + x.grace + INTERVAL
    assert x.state(QUORUM5, t).held


def test_without_fresh_vouches_no_host_goes_and_a_resumed_peer_vouches_for_nothing():
    x, _ = settled_ring()
    assert x.gate([QUORUM5], 1.0 + LEASE - 1e-6, VNODES).open
    gate = x.gate([QUORUM5], 1.0 + LEASE + 1e-6, VNODES)
    assert not gate.open and not any(gate.may(h) for h in kept("p0"))
    y = peer("p1", FIVE)
    y.resumed(5.0)
    assert y.vouching(5.0 + y.grace - 1e-6).print == 0 and y.vouching(5.0 + y.grace).print


def test_a_vouch_under_another_voter_record_counts_for_no_host():
    x, others = settled_ring()
    y = others["p1"]
    y.ring_changed(FIVE, 2.0, record=77)  # a new voter record: the ring itself unchanged
    answer(x, y, 5, 2.1)
    answer(x, others["p2"], 6, 2.1)
    gate = x.gate([QUORUM5], 2.2, VNODES)
    # p1's vouch counts for no host: p2 and ourselves are 2 of 5.
    assert not gate.open and not any(gate.may(h) for h in kept("p0"))
    answer(x, others["p3"], 7, 2.1)
    gate = x.gate([QUORUM5], 2.2, VNODES)
    assert gate.open and sum(n for t in gate.tallies for _, n in t.groups) == 3


# -- the proof's case, by hand ---------------------------------------------------------------


def test_the_adversarial_interleaving_never_lets_two_peers_start_requests_to_one_host():
    """P holds h under R on Y's vouch at a1; Y moves to R' and vouches to X at a2.

    R = FIVE, R' = FOUR: a host of p4's under R moves to X = p0 under R'.
    The voters are P = p4, Y = p1 and Z = p2; X is a learner (its own vouch
    counts for nothing), and Z has held R' for long (it was beyond a split).
    P's lease on h rests on Y's vouch and its own, X's on Y's and Z's: the
    instant X's holds, P's must be over, however soon X asks Y.
    """
    quorum = ["p1", "p2", "p4"]
    h = gained("p0")[0]
    p, y, z, x = peer("p4", FIVE), peer("p1", FIVE), peer("p2", FOUR, now=-100.0), peer("p0", FOUR, now=-100.0)
    answer(p, y, 1, 1.0)  # a1 = 1.0: Y vouches R to P
    assert p.gate([quorum], 1.0, VNODES).may(h)
    last_p = max(t / 100 for t in range(100, 1000) if p.gate([quorum], t / 100, VNODES).may(h))
    y.ring_changed(FOUR, 1.01)  # Y learns that p4 is dead (a false death: P runs on)
    first_x = None
    for k in range(1000):
        t = 1.01 + k / 100
        answer(x, y, 100 + 2 * k, t)  # X pings Y and Z every 10 ms, the worst case
        answer(x, z, 101 + 2 * k, t)
        if x.gate([quorum], t, VNODES).may(h):
            first_x = t
            break
    assert first_x is not None
    # Y listed R (which gave h to P) until a grace after it left it: X waited that long.
    assert first_x >= 1.01 + y.grace
    assert last_p <= 1.0 + LEASE < first_x
    # The margin is the grace less the lease: a quarter of a lease at GRACE_FACTOR 1.25.
    assert first_x - last_p >= LEASE * (GRACE_FACTOR - 1) - 0.02
    # A host that kept its owner (X's in both rings) went at once, on the same vouches.
    assert x.gate([quorum], 1.01, VNODES).may(kept("p0")[0])


# -- Memberships: a peer dies and comes back ----------------------------------------------


def gate_of(net: LeaseNet, pid: str):
    p = net.peers[pid]
    return p.m.host_gate(p.local(net.t), VNODES)


def test_a_peer_that_dies_and_returns_costs_the_hosts_that_kept_their_owner_nothing():
    net = LeaseNet(5, seed=3)
    net.run_until(10.0, one_ring_among_holders)
    assert len(net.holders()) == 5
    survivors = ["p0", "p1", "p2", "p3"]
    steady = {pid: kept(pid) for pid in survivors}
    assert all(steady.values())
    net.crash("p4")
    paused_by_old_rule = 0.0
    moved_waits = []
    t0 = net.t
    while net.t < t0 + 40.0:
        if net.t >= t0 + 12.0 and net.peers["p4"].crashed:
            net.restart("p4")  # back after 12 s, as an upgrade would be
        net.run_until(net.t + 0.05, one_ring_among_holders)
        for pid in survivors:
            gate = gate_of(net, pid)
            # The ring-wide pause: a host that never changed owner refused.
            assert all(gate.may(h) for h in steady[pid]), (pid, net.t)
            st = net.peers[pid].m.lease_state(net.peers[pid].local(net.t))
            paused_by_old_rule += 0.05 * (not st.held)
        four = {m for m, s in net.peers["p0"].m.live().items()}
        if four == set(FOUR):
            moved_waits.append(any(gate_of(net, o).may(h) for o in survivors for h in gained(o)))
    # The old rule (no request at all without a whole lease) paused the survivors for seconds.
    assert paused_by_old_rule > 4 * 2.0, paused_by_old_rule
    # p4's hosts moved to the survivors only after its death, and went back on its return.
    assert moved_waits and not moved_waits[0]
    p4 = gate_of(net, "p4")
    assert all(p4.may(h) for h in HOSTS if owner(FIVE, h) == "p4")


# -- the safety property -----------------------------------------------------------------------

SAMPLE = HOSTS[:16]


def one_owner_per_host(net: LeaseNet) -> None:
    """The check after every event: no host may be started by two running peers."""
    one_ring_among_holders(net)
    gates = [(p.pid, p.m.host_gate(p.local(net.t), VNODES)) for p in net.running()]
    gates = [(pid, g) for pid, g in gates if g.open]
    if len(gates) < 2:
        return
    for h in SAMPLE:
        who = [pid for pid, g in gates if g.may(h)]
        if len(who) > 1:
            raise AssertionError(f"t={net.t:.3f}: {h} may be fetched by {who}")


@pytest.mark.parametrize("seed", range(4))
def test_no_two_peers_may_ever_start_requests_to_one_host(seed):
    rng = random.Random(seed)
    n = 3 + seed % 3
    net = LeaseNet(n, seed, loss=0.05, latency=(0.001, 0.3), drift=0.04)
    net.run_until(10.0, one_owner_per_host)
    seen = chaos(net, rng, 100.0, check=one_owner_per_host)
    net.heal()
    net.run_until(net.t + 20.0, one_owner_per_host)
    assert seen["splits"] >= 3 and seen["changes"] >= 3 and seen["held"] >= 50, seen
    assert all(gate_of(net, p.pid).open for p in net.running())

