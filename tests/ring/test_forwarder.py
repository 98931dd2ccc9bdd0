"""ring.forwarding.forwarder: batching, numbering, resends, acks, re-routing; with ring.forwarding.inbox, the counts over a lossy link."""

from collections import Counter, defaultdict

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ring import HashRing
from ring.forwarding.forwarder import RATE_WINDOW, Entries, Outbox
from ring.forwarding.inbox import Inbox, Verdict
from ring.messages import Ack, BatchPart, Packet, UrlBatch, decode, encode

RING = "r"


def host(url: str) -> str:
    return url.split("/", 3)[2]


def outbox(**kw) -> Outbox:
    kw.setdefault("epoch", 7)
    return Outbox("p0", RING, **kw)


def urls_of(pairs) -> list[str]:
    return [u for u, _ in pairs]


def flush_all(ob: Outbox, now: float) -> dict[str, list[UrlBatch]]:
    """Everything due far enough in the future that ages have passed, by destination."""
    out = defaultdict(list)
    for dest, b in ob.due(now):
        out[dest].append(b)
    return out


# ------------------------------------------------------------------ batching

def test_a_batch_is_cut_at_batch_size_and_numbered_by_due():
    ob = outbox(batch_size=3, max_age=10.0)
    for i in range(3):
        assert ob.add(f"http://a.test/{i}", i, "p1", 0.0) is True
    assert ob.add("http://a.test/3", 0, "p1", 0.0) is True
    [(dest, b)] = ob.due(0.0)
    assert dest == "p1"
    assert b == UrlBatch(RING, "p0", 7, 0, (("http://a.test/0", 0), ("http://a.test/1", 1),
                                            ("http://a.test/2", 2)), ())
    assert ob.due(0.0) == []  # the fourth URL waits for more, or for its age
    assert ob.stats().pending == 1
    assert ob.stats().unacked == 1


def test_a_partial_batch_leaves_when_its_oldest_url_is_max_age_old():
    ob = outbox(batch_size=500, max_age=0.25)
    ob.add("http://a.test/1", 0, "p1", 1.0)
    ob.add("http://a.test/2", 0, "p1", 1.125)
    assert ob.due(1.0) == []
    assert ob.due(1.24) == []
    [(dest, b)] = ob.due(1.25)
    assert dest == "p1"
    assert urls_of(b.urls) == ["http://a.test/1", "http://a.test/2"]
    # The next URL starts a new age.
    ob.add("http://a.test/3", 0, "p1", 1.5)
    assert ob.due(1.74) == []
    assert [b.seq for _, b in ob.due(1.75)] == [1]


def test_age_is_per_destination():
    ob = outbox(max_age=0.5)
    ob.add("http://a.test/1", 0, "p1", 0.0)
    ob.add("http://b.test/1", 0, "p2", 0.25)
    assert [d for d, _ in ob.due(0.5)] == ["p1"]
    assert ob.due(0.74) == []
    assert [d for d, _ in ob.due(0.75)] == ["p2"]


def test_a_size_cut_restarts_the_age():
    ob = outbox(batch_size=2, max_age=1.0)
    ob.add("http://a.test/1", 0, "p1", 0.0)
    ob.add("http://a.test/2", 0, "p1", 0.5)  # full: cut
    ob.add("http://a.test/3", 0, "p1", 0.75)
    assert [urls_of(b.urls) for _, b in ob.due(1.0)] == [["http://a.test/1", "http://a.test/2"]]
    assert ob.due(1.74) == []
    assert [urls_of(b.urls) for _, b in ob.due(1.75)] == [["http://a.test/3"]]


def test_sequence_numbers_count_per_destination_from_zero():
    ob = outbox(batch_size=1)
    for i, dest in enumerate(["p1", "p2", "p1", "p1", "p2", "p3"]):
        ob.add(f"http://x.test/{i}", 0, dest, 0.0)
    got = [(d, b.seq) for d, b in ob.due(0.0)]
    assert sorted(got) == [("p1", 0), ("p1", 1), ("p1", 2), ("p2", 0), ("p2", 1), ("p3", 0)]
    by_dest = defaultdict(list)
    for d, s in got:
        by_dest[d].append(s)
    assert all(seqs == sorted(seqs) for seqs in by_dest.values())
    assert ob.stats().batches == 6


def test_full_batches_of_one_destination_keep_their_order():
    ob = outbox(batch_size=2, max_age=0.5)
    for i in range(5):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    out = ob.due(0.5)
    assert [(b.seq, urls_of(b.urls)) for _, b in out] == [
        (0, ["http://a.test/0", "http://a.test/1"]),
        (1, ["http://a.test/2", "http://a.test/3"]),
        (2, ["http://a.test/4"]),
    ]


def test_batches_survive_the_wire_codec():
    ob = outbox(batch_size=3)
    ob.add("http://a.test/1", 2, "p1", 0.0)
    ob.add_seen("http://a.test/old", "p1", 0.0)
    ob.add("http://a.test/2", 0, "p1", 0.0)
    [(_, b)] = ob.due(0.0)
    assert decode(encode(b)) == b
    assert b.seen == ("http://a.test/old",)


# ------------------------------------------------------------ resends, acks

def test_unacked_batch_is_resent_unchanged_every_resend_after_until_acked():
    ob = outbox(batch_size=1, resend_after=1.0)
    ob.add("http://a.test/1", 0, "p1", 0.0)
    [(_, first)] = ob.due(0.0)
    assert ob.due(0.99) == []
    [(dest, again)] = ob.due(1.0)
    assert (dest, again) == ("p1", first)
    assert ob.due(1.5) == []
    assert ob.due(2.0) == [("p1", first)]  # counted from the last send
    assert ob.stats().resent == 2
    assert ob.ack("p1", 7, 0) is True
    assert ob.due(10.0) == []
    assert ob.idle


def test_resends_do_not_count_in_sent_and_acks_count_in_acked():
    ob = outbox(batch_size=2, max_age=60.0)
    for i in range(4):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    ob.add_seen("http://a.test/s", "p1", 0.0)
    ob.due(0.0)
    assert ob.sent == 4
    assert len(ob.due(5.0)) == 2
    assert len(ob.due(10.0)) == 2
    assert ob.sent == 4
    ob.ack("p1", 7, 1)
    assert ob.stats().acked == 2
    ob.due(60.0)
    assert ob.sent == 5  # the seen URL, aged out


def test_ack_retires_only_its_batch():
    ob = outbox(batch_size=1)
    for i in range(3):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    ob.due(0.0)
    assert ob.ack("p1", 7, 1)
    assert not ob.idle
    assert [b.seq for _, b in ob.due(1.0)] == [0, 2]
    assert ob.ack("p1", 7, 0) and ob.ack("p1", 7, 2)
    assert ob.idle


def test_stale_and_unknown_acks_are_ignored_and_counted():
    ob = outbox(batch_size=1)
    ob.add("http://a.test/1", 0, "p1", 0.0)
    ob.due(0.0)
    assert ob.ack("p1", 6, 0) is False  # an ack for our previous epoch
    assert ob.ack("p1", 7, 1) is False  # never sent
    assert ob.ack("p9", 7, 0) is False  # not a destination
    assert ob.ack("p2", 7, 0) is False
    assert not ob.idle
    assert ob.ack("p1", 7, 0) is True
    assert ob.ack("p1", 7, 0) is False  # the ack of a resend
    assert ob.stats().stale_acks == 5
    assert ob.idle


def test_idle_needs_nothing_pending_and_nothing_unacked():
    ob = outbox()
    assert ob.idle
    ob.add("http://a.test/1", 0, "p1", 0.0)
    assert not ob.idle
    ob.due(1.0)
    assert not ob.idle
    ob.ack("p1", 7, 0)
    assert ob.idle


def test_next_due_at_is_a_lower_bound_of_the_next_batch():
    ob = outbox(batch_size=2, max_age=0.5, resend_after=2.0)
    assert ob.next_due_at() is None
    ob.add("http://a.test/1", 0, "p1", 1.0)
    assert ob.next_due_at() == 1.5
    ob.add("http://a.test/2", 0, "p1", 1.0)
    assert ob.next_due_at() == float("-inf")  # a full batch waits
    ob.due(1.0)
    assert ob.next_due_at() == 3.0
    ob.ack("p1", 7, 0)
    ob.due(3.0)
    assert ob.next_due_at() is None


@pytest.mark.parametrize(
    "kw",
    [dict(batch_size=0), dict(batch_size=10_001), dict(max_age=-1.0),
     dict(resend_after=0.0), dict(recent_size=-1)],
)
def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError):
        outbox(**kw)


# ------------------------------------------------------------ recent cache

def test_a_repeat_to_the_same_owner_is_dropped_and_counted():
    ob = outbox()
    assert ob.add("http://a.test/nav", 0, "p1", 0.0)
    assert not ob.add("http://a.test/nav", 3, "p1", 0.0)
    assert not ob.add("http://a.test/nav", 0, "p1", 0.0)
    assert ob.add("http://a.test/nav", 0, "p2", 0.0)  # the ring moved it: send again
    s = ob.stats()
    assert (s.forwarded, s.recent_hits, s.pending) == (2, 2, 2)


def test_recent_cache_remembers_at_least_half_and_at_most_its_size():
    ob = outbox(recent_size=8)
    for i in range(12):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    # The last 4 distinct URLs are always remembered, the 9th from last never.
    for i in range(8, 12):
        assert not ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    for i in range(0, 3):
        assert ob.add(f"http://a.test/{i}", 0, "p1", 0.0)


def test_a_popular_link_stays_in_the_cache():
    ob = outbox(recent_size=8)
    ob.add("http://a.test/home", 0, "p1", 0.0)
    for i in range(100):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
        assert not ob.add("http://a.test/home", 0, "p1", 0.0)
    assert ob.stats().recent_hits == 100


def test_a_relayed_url_is_never_dropped_as_recently_forwarded():
    # We sent it to p1; the ring moved its host while it travelled, p1 relayed
    # it back to us and the ring moved it back to p1. This is the only copy.
    ob = outbox()
    assert ob.add("http://a.test/1", 0, "p1", 0.0)
    ob.relay("http://a.test/1", 0, "p1", 1.0)
    [(dest, b)] = ob.due(1.0)
    assert dest == "p1" and b.seq == 0 and len(b.urls) == 2
    assert ob.stats().relayed == 1
    # A copy relayed is one on its way: a link discovered again is dropped.
    ob.relay("http://a.test/2", 0, "p2", 2.0)
    assert not ob.add("http://a.test/2", 0, "p2", 2.0)


def test_recent_size_zero_turns_the_cache_off():
    ob = outbox(recent_size=0)
    assert ob.add("http://a.test/1", 0, "p1", 0.0)
    assert ob.add("http://a.test/1", 0, "p1", 0.0)
    assert ob.stats().recent_hits == 0


# ---------------------------------------------------------------- reroute

HOSTS = [f"h{i:03d}.example.org" for i in range(300)]


def owner_fn(ring: HashRing):
    return lambda url: ring.owner(host(url))


def fill(ob: Outbox, ring: HashRing, now: float = 0.0) -> dict[str, str]:
    """Two URLs per host not owned by p0; returns url -> owner."""
    owners = {}
    for h in HOSTS:
        o = ring.owner(h)
        if o != "p0":
            for k in range(2):
                u = f"http://{h}/{k}"
                ob.add(u, k, o, now)
                owners[u] = o
    return owners


@pytest.mark.parametrize("change", ["join", "leave"])
def test_reroute_moves_exactly_the_pending_urls_whose_owner_changed(change):
    old = HashRing({"p0": 1.0, "p1": 1.0, "p2": 1.0}, vnodes=64)
    new = old.with_peer("p3") if change == "join" else old.without_peer("p1")
    ob = outbox(batch_size=7, max_age=1.0)
    owners = fill(ob, old)
    back = ob.reroute(owner_fn(new), 0.5, members=new)
    changed = {u for u, o in owners.items() if new.owner(host(u)) != o}
    to_self = {u for u in changed if new.owner(host(u)) == "p0"}
    assert changed, "the ring change moved nothing: the test would prove nothing"
    assert set(urls_of(back.urls)) == to_self
    assert back.seen == []
    assert dict(back.urls) == {u: int(u[-1]) for u in to_self}  # depths kept
    if change == "join":
        assert to_self == set()
    else:
        assert to_self
    s = ob.stats()
    assert (s.rerouted, s.returned) == (len(changed - to_self), len(to_self))
    sent = flush_all(ob, 10.0)
    for dest, batches in sent.items():
        for b in batches:
            assert all(new.owner(host(u)) == dest for u, _ in b.urls)
            assert len(b.urls) <= 7
    delivered = Counter(u for bs in sent.values() for b in bs for u, _ in b.urls)
    assert set(delivered) == set(owners) - to_self
    assert set(delivered.values()) == {1}


def test_reroute_keeps_the_age_of_urls_that_stay():
    old = HashRing({"p0": 1.0, "p1": 1.0}, vnodes=64)
    new = old.with_peer("p2")
    stay = next(h for h in HOSTS if old.owner(h) == new.owner(h) == "p1")
    move = next(h for h in HOSTS if old.owner(h) == "p1" and new.owner(h) == "p2")
    ob = outbox(max_age=1.0)
    ob.add(f"http://{stay}/", 0, "p1", 0.0)
    ob.add(f"http://{move}/", 0, "p1", 0.0)
    ob.reroute(owner_fn(new), 0.5, members=new)
    assert [(d, urls_of(b.urls)) for d, b in ob.due(1.0)] == [("p1", [f"http://{stay}/"])]
    assert [(d, urls_of(b.urls)) for d, b in ob.due(1.5)] == [("p2", [f"http://{move}/"])]


def test_unacked_batches_to_a_live_peer_are_resent_unchanged():
    old = HashRing({"p0": 1.0, "p1": 1.0}, vnodes=64)
    new = old.with_peer("p2")
    ob = outbox(batch_size=1000, max_age=0.0)
    owners = fill(ob, old)
    [(_, b)] = ob.due(0.0)
    assert any(new.owner(host(u)) == "p2" for u in owners)
    assert ob.reroute(owner_fn(new), 0.5, members=new) == Entries([], [])
    assert ob.due(0.5) == []  # nothing copied to p2
    assert ob.due(1.0) == [("p1", b)]  # same seq, same content: p1 routes the rest on
    assert ob.stats().rerouted == 0


def test_unacked_batches_to_a_dead_peer_are_rerouted_not_lost():
    old = HashRing({"p0": 1.0, "p1": 1.0, "p2": 1.0}, vnodes=64)
    new = old.without_peer("p1")
    ob = outbox(batch_size=5, max_age=0.0)
    owners = fill(ob, old)
    first = flush_all(ob, 0.0)
    ob.ack("p1", 7, 0)  # one batch made it: p1 took it before dying
    lost_with_p1 = {u for u, _ in first["p1"][0].urls}
    ob.add("http://late.test/1", 0, "p1", 0.0)  # queued for p1, not yet batched
    owners["http://late.test/1"] = "p1"
    back = ob.reroute(owner_fn(new), 1.0, members=new)
    assert ob.ack("p1", 7, 1) is False  # a late ack from the dead peer
    moved = {u for u, o in owners.items() if o == "p1"} - lost_with_p1
    to_self = {u for u in moved if new.owner(host(u)) == "p0"}
    assert set(urls_of(back.urls)) == to_self
    again = flush_all(ob, 1.0)
    assert "p1" not in again
    resent_p2 = {u for b in again["p2"] for u, _ in b.urls}
    assert resent_p2 - {u for b in first["p2"] for u, _ in b.urls} == moved - to_self
    assert ob.stats().rerouted == len(moved - to_self)


def test_a_gone_peer_leaves_the_sent_counter_and_keeps_its_sequence():
    ring = HashRing({"p0": 1.0, "p1": 1.0, "p2": 1.0})
    ob = outbox(batch_size=1)
    ob.add("http://a.test/1", 0, "p1", 0.0)
    ob.add("http://b.test/1", 0, "p2", 0.0)
    ob.due(0.0)
    ob.ack("p1", 7, 0)
    assert ob.sent == 2
    ob.reroute(lambda u: "p2", 1.0, members=ring.without_peer("p1"))
    assert ob.sent == 1
    # p1 comes back: its numbering goes on, so its Inbox never sees a reused seq.
    ob.add("http://a.test/2", 0, "p1", 2.0)
    assert [(d, b.seq) for d, b in ob.due(2.0) if d == "p1"] == [("p1", 1)]


def test_a_dead_peers_channel_is_hidden_and_counts_again_when_it_is_back():
    # Declared dead, it was alive beyond a partition and refuted as the same
    # process: its Inbox still counts what it took from us, so must we.
    ring = HashRing({"p0": 1.0, "p1": 1.0, "p2": 1.0})
    ob = outbox(batch_size=1)
    for i in range(3):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    ob.due(0.0)
    ob.ack("p1", 7, 0)
    ob.ack("p1", 7, 1)
    assert ob.sent == 3
    ob.reroute(lambda u: "p2", 1.0, members=ring.without_peer("p1"))
    assert ob.sent == 0  # p1's channel hidden
    assert [d for d, _ in ob.due(1.0)] == ["p2"]  # its batch 2, abandoned, goes to p2
    assert ob.sent == 1
    ob.reroute(lambda u: "p1", 2.0, members=ring)
    # The 2 p1 took, the 1 to p2, and batch 2 again, unchanged: p1 may have
    # taken it before its ack was lost, so it is sent until acked.
    assert ob.sent == 4
    ob.add("http://a.test/3", 0, "p1", 2.0)
    assert sorted((d, b.seq) for d, b in ob.due(2.0) if d == "p1") == [("p1", 2), ("p1", 3)]
    ob.ack("p1", 7, 2)
    ob.ack("p1", 7, 3)
    assert ob.sent == 5 and ob.stats().unacked == 1  # p2's batch is still out


def test_seen_urls_ride_in_batches_and_are_rerouted_like_urls():
    old = HashRing({"p0": 1.0, "p1": 1.0}, vnodes=64)
    new = old.without_peer("p1")
    ob = outbox(batch_size=4)
    ob.add_seen("http://a.test/s1", "p1", 0.0)
    ob.add("http://a.test/u1", 1, "p1", 0.0)
    ob.add_seen("http://a.test/s2", "p1", 0.0)
    ob.add_seen("http://a.test/s3", "p1", 0.0)  # 4 entries: a batch
    [(_, b)] = ob.due(0.0)
    assert b.urls == (("http://a.test/u1", 1),)
    assert b.seen == ("http://a.test/s1", "http://a.test/s2", "http://a.test/s3")
    back = ob.reroute(lambda u: "p0", 1.0, members=new)
    assert back == Entries([("http://a.test/u1", 1)],
                           ["http://a.test/s1", "http://a.test/s2", "http://a.test/s3"])
    assert ob.idle
    assert ob.stats().seen_forwarded == 3


def test_queued_lists_everything_not_yet_acked():
    ob = outbox(batch_size=2)
    for i in range(5):
        ob.add(f"http://a.test/{i}", i, "p1", 0.0)
    ob.add_seen("http://a.test/s", "p2", 0.0)
    ob.due(0.0)
    ob.ack("p1", 7, 0)
    q = ob.queued()
    assert sorted(q.urls) == [(f"http://a.test/{i}", i) for i in range(2, 5)]
    assert q.seen == ["http://a.test/s"]


def test_outbox_forget_recounts_the_channel_as_what_is_unacked():
    ob = outbox(batch_size=2)
    for i in range(6):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    ob.due(0.0)
    ob.ack("p1", 7, 0)
    assert ob.sent == 6
    ob.forget("p1")  # p1 restarted without its Inbox: it will take seqs 1 and 2 anew
    assert ob.sent == 4
    ob.forget("p9")
    assert ob.sent == 4


def test_outbox_to_inbox_over_a_lossy_link_counts_agree():
    ob = outbox(batch_size=3, max_age=0.5)
    ib = Inbox(RING)
    for i in range(20):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    now, taken = 0.0, []
    for k in range(10):
        for dest, b in ob.due(now):
            if k % 2 == 0:
                continue  # lost on the way
            v = ib.accept(b)
            if v is Verdict.ACCEPT:
                taken += urls_of(b.urls)
            if v.ack and k % 4 == 3:
                ob.ack(dest, b.epoch, b.seq)
        now += 1.0
    assert ob.idle
    assert sorted(taken) == sorted(f"http://a.test/{i}" for i in range(20))
    assert ob.sent == ib.received == 20
    assert ib.dropped["replay"] > 0


# ------------------------------------------------------- stateful property

INITIAL = ("a", "b", "c", "d")
JOINERS = ("e", "f", "g")
SHOSTS = [f"h{i}.test" for i in range(10)]


class ForwardingMachine(RuleBasedStateMachine):
    """Peers forward over a lossy, duplicating network; the ring changes under them.

    ``a`` originates URLs (and hand-off seen URLs); every receiver routes what
    it takes with its own ring and relays what it does not own, as the engine
    must. A removed peer is dead: its state is gone for good, and what only it
    held is lost with it (scripts/adopt.py recovers that, not this module).
    """

    @initialize()
    def setup(self):
        self.ring = HashRing({p: 1.0 for p in INITIAL}, vnodes=4)
        self.now = 0.0
        self.peers = {p: self._peer(p) for p in INITIAL}
        self.joiners = list(JOINERS)
        self.net = []  # ("batch", src, dst, UrlBatch) | ("ack", src, dst, epoch, seq)
        self.n = 0
        self.added = set()
        self.takes = defaultdict(list)  # entry -> peers that took it, in order
        self.exempt = set()  # only a dead peer held it
        self.dups_ok = Counter()  # extra takes allowed by abandoned-but-taken batches
        self.sent_batches = {}  # (src, dst, seq) -> batch, first transmissions
        self.acked = set()  # (src, dst, seq) acked at the sender
        self.accepted = set()  # (src, dst, seq) taken by the receiver
        self.outstanding = {}  # (src, dst, seq) -> entries: sent, not yet taken
        self.away = None  # (pid, outbox, inbox) of a peer cut off and held dead, the same process
        self.away_outstanding = {}  # its channels' outstanding, hidden with them

    def _peer(self, pid):
        return (Outbox(pid, RING, epoch=1, batch_size=3, max_age=0.5, resend_after=1.0,
                       recent_size=16), Inbox(RING))

    def owner_of(self, url):
        return self.ring.owner(host(url))

    # -- the origin
    @rule(hosts=st.lists(st.tuples(st.sampled_from(SHOSTS), st.integers(0, 3), st.booleans()),
                         min_size=1, max_size=6))
    def add(self, hosts):
        ob = self.peers["a"][0]
        for h, depth, seen in hosts:
            o = self.ring.owner(h)
            if o == "a":
                continue
            self.n += 1
            url = f"http://{h}/{'s' if seen else 'u'}{self.n}"
            self.added.add(url)
            if seen:
                ob.add_seen(url, o, self.now)
            else:
                assert ob.add(url, depth, o, self.now)

    @rule(dt=st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    def tick(self, dt):
        self.now += dt

    @rule()
    def pump(self):
        for pid, (ob, _) in self.peers.items():
            for dst, b in ob.due(self.now):
                self._transmit(pid, dst, b)

    def _transmit(self, src, dst, b):
        self._record(src, dst, b)
        self.net.append(("batch", src, dst, b))

    def _record(self, src, dst, b):
        key = (src, dst, b.seq)
        if key not in self.sent_batches:
            self.sent_batches[key] = b
            self.outstanding[key] = len(b.urls) + len(b.seen)
        else:
            assert self.sent_batches[key] == b  # a resend is the same batch

    # -- the network
    @precondition(lambda self: self.net)
    @rule(i=st.integers(0, 50), lose=st.booleans(), replay=st.booleans())
    def deliver(self, i, lose, replay):
        msg = self.net[i % len(self.net)] if replay else self.net.pop(i % len(self.net))
        if not lose:
            self._process(msg)

    @precondition(lambda self: self.net)
    @rule(losses=st.lists(st.booleans(), min_size=1, max_size=10))
    def deliver_in_order(self, losses):
        for lose in losses:
            if not self.net:
                break
            msg = self.net.pop(0)
            if not lose:
                self._process(msg)

    def _process(self, msg):
        if msg[0] == "ack":
            _, src, dst, epoch, seq = msg
            if dst in self.peers and (self.away is None or src != self.away[0]):
                if self.peers[dst][0].ack(src, epoch, seq):
                    self.acked.add((dst, src, seq))
            return
        _, src, dst, b = msg
        if dst not in self.peers or src not in self.peers:
            return  # the driver drops batches from non-members (Inbox.forget)
        ob, ib = self.peers[dst]
        v = ib.accept(b)
        if v is Verdict.ACCEPT:
            key = (src, dst, b.seq)
            assert key not in self.accepted, "a batch was taken twice"
            self.accepted.add(key)
            del self.outstanding[key]
            for url, depth in b.urls:
                o = self.owner_of(url)
                if o == dst:
                    self.takes[url].append(dst)
                else:
                    ob.relay(url, depth, o, self.now)
            for url in b.seen:
                o = self.owner_of(url)
                if o == dst:
                    self.takes[url].append(dst)
                else:
                    ob.add_seen(url, o, self.now)
        if v.ack:
            self._ack(dst, src, b)

    def _ack(self, by, to, b):
        self.net.append(("ack", by, to, b.epoch, b.seq))

    # -- membership
    @precondition(lambda self: self.joiners)
    @rule()
    def join(self):
        new = self.joiners.pop(0)
        self.ring = self.ring.with_peer(new)
        self.peers[new] = self._peer(new)
        self._reroute()

    @rule(i=st.integers(0, 10), weight=st.sampled_from([0.25, 1.0, 4.0]))
    def reweight(self, i, weight):
        # Hosts move between live peers: batches in flight now carry foreign URLs.
        live = sorted(self.peers)
        self.ring = self.ring.with_peer(live[i % len(live)], weight)
        self._reroute()

    @precondition(lambda self: len(self.peers) > 3)
    @rule(i=st.integers(0, 10))
    def die(self, i):
        victims = sorted(p for p in self.peers if p != "a")
        d = victims[i % len(victims)]
        ob_d, _ = self.peers[d]
        held_d = set(urls_of(ob_d.queued().urls)) | set(ob_d.queued().seen)
        held_d |= {u for u, ps in self.takes.items() if d in ps}
        held_others = set()
        for p, (ob, _) in self.peers.items():
            if p != d:
                q = ob.queued()
                held = Counter(urls_of(q.urls)) + Counter(q.seen)
                # A batch its receiver took, whose ack is lost, holds nothing:
                # resent, it is acked as a replay and taken by nobody.
                for (src, dst, seq), b in self.sent_batches.items():
                    if src == p and (src, dst, seq) in self.accepted and (src, dst, seq) not in self.acked:
                        held -= Counter(urls_of(b.urls)) + Counter(b.seen)
                held_others |= set(held)
        self.exempt |= held_d - held_others
        # A batch d took whose ack its sender never got is re-routed: taken twice.
        for (src, dst, seq), b in self.sent_batches.items():
            if dst == d and (src, dst, seq) in self.accepted and (src, dst, seq) not in self.acked:
                self.dups_ok.update(urls_of(b.urls) + list(b.seen))
        del self.peers[d]
        self.ring = self.ring.without_peer(d)
        for key in [k for k in self.outstanding if d in k[:2]]:
            del self.outstanding[key]
        self._reroute()
        for _, ib in self.peers.values():
            ib.forget(d)

    @precondition(lambda self: self.away is None and len(self.peers) > 3)
    @rule(i=st.integers(0, 10))
    def split(self, i):
        """A peer is cut off: the others hold it dead, it holds them dead; the same processes."""
        victims = sorted(p for p in self.peers if p != "a")
        s = victims[i % len(victims)]
        ob_s, ib_s = self.peers.pop(s)
        self.away = (s, ob_s, ib_s)
        # Batches unacked between it and the rest are re-routed now and sent
        # again at the heal: their entries may be taken on both paths.
        for (src, dst, seq), b in self.sent_batches.items():
            if s in (src, dst) and (src, dst, seq) not in self.acked:
                self.dups_ok.update(urls_of(b.urls) + list(b.seen))
        self.away_outstanding = {k: v for k, v in self.outstanding.items() if s in k[:2]}
        for k in self.away_outstanding:
            del self.outstanding[k]
        self.ring = self.ring.without_peer(s)
        self._reroute()
        for p, (_, ib) in self.peers.items():
            ib.forget(s)
            ib_s.forget(p)
        back = ob_s.reroute(lambda u: s, self.now, members={s})  # it owns every host now
        for url in urls_of(back.urls) + back.seen:
            self.takes[url].append(s)

    @precondition(lambda self: self.away is not None)
    @rule()
    def heal(self):
        """The cut peer refutes: channels both ways show again, abandoned batches go again."""
        s, ob_s, ib_s = self.away
        self.away = None
        self.peers[s] = (ob_s, ib_s)
        self.ring = self.ring.with_peer(s)
        self.outstanding.update({k: v for k, v in self.away_outstanding.items()
                                 if k[0] in self.peers and k[1] in self.peers})
        self._reroute()
        for p, (_, ib) in self.peers.items():
            if p != s:
                ib.reopen(s)
                ib_s.reopen(p)

    def _reroute(self):
        for p, (ob, _) in self.peers.items():
            back = ob.reroute(self.owner_of, self.now, members=self.ring)
            for url in urls_of(back.urls) + back.seen:
                assert self.owner_of(url) == p
                self.takes[url].append(p)

    # -- properties
    @invariant()
    def sent_minus_received_is_what_is_in_flight(self):
        if not hasattr(self, "peers"):
            return
        sent = sum(ob.sent for ob, _ in self.peers.values())
        received = sum(ib.received for _, ib in self.peers.values())
        assert sent - received == sum(self.outstanding.values())

    def teardown(self):
        if not hasattr(self, "peers"):
            return
        if self.away is not None:
            self.heal()
        # The network heals: everything is delivered, in order, until quiet.
        for _ in range(100):
            self.now += 1.0
            self.pump()
            while self.net:
                self._process(self.net.pop(0))
            if all(ob.idle for ob, _ in self.peers.values()):
                break
        assert all(ob.idle for ob, _ in self.peers.values())
        self.sent_minus_received_is_what_is_in_flight()
        assert not self.outstanding
        sent = sum(ob.sent for ob, _ in self.peers.values())
        assert sent == sum(ib.received for _, ib in self.peers.values())
        for url in self.added:
            live = [p for p in self.takes[url] if p in self.peers]
            allowed = 1 + self.dups_ok[url]
            if url in self.exempt:
                assert len(live) <= allowed, (url, live)
            else:
                assert 1 <= len(live) <= allowed, (url, self.takes[url])


TestForwardingMachine = ForwardingMachine.TestCase
# 100 runs of up to 50 steps (5,000 rule calls) a machine; its teardown
# checks exactly-once over the whole run, so each run judges every URL it added.
TestForwardingMachine.settings = settings(max_examples=100, stateful_step_count=50, deadline=None)


class CoalescingMachine(ForwardingMachine):
    """The same peers and properties, with acks owed and frames from ``Outbox.messages``.

    Every frame goes through the codec; a frame's acks and batches are lost,
    replayed and reordered together, as one zmq message is.
    """

    def _peer(self, pid):
        # A budget of 2 frames/s: the age moves between 0.5 and 1.5 s as traffic comes and goes.
        return (Outbox(pid, RING, epoch=1, batch_size=3, max_age=0.5, max_delay=1.5, budget=2.0,
                       resend_after=1.0, recent_size=16), Inbox(RING))

    @rule()
    def pump(self):
        for pid, (ob, _) in self.peers.items():
            for dst, m in ob.messages(self.now):
                m = decode(encode(m))
                if isinstance(m, UrlBatch):
                    batches = (m,)
                elif isinstance(m, Packet):
                    batches = m.url_batches()
                    assert sum(len(b.urls) + len(b.seen) for b in batches) <= 3  # batch_size
                else:
                    batches = ()
                for b in batches:
                    self._record(pid, dst, b)
                self.net.append(("frame", pid, dst, m))

    def _ack(self, by, to, b):
        self.peers[by][0].owe_ack(to, b.epoch, b.seq, self.now)

    def _process(self, msg):
        if msg[0] != "frame":
            return super()._process(msg)
        _, src, dst, m = msg
        if isinstance(m, Ack):
            super()._process(("ack", src, dst, m.epoch, m.seq))
        elif isinstance(m, UrlBatch):
            super()._process(("batch", src, dst, m))
        else:
            for seq in m.acks:
                super()._process(("ack", src, dst, m.acked_epoch, seq))
            for b in m.url_batches():
                super()._process(("batch", src, dst, b))


TestCoalescingMachine = CoalescingMachine.TestCase
TestCoalescingMachine.settings = settings(max_examples=100, stateful_step_count=50, deadline=None)


class WindowedMachine(CoalescingMachine):
    """The same, with a send window of one or two batches a destination (rule 9):
    batches held back for acks are neither lost nor taken twice, and the
    termination counters still balance."""

    @initialize(window=st.integers(1, 2))
    def windowed(self, window):
        self.window = window

    def _peer(self, pid):
        return (Outbox(pid, RING, epoch=1, batch_size=3, max_age=0.5, max_delay=1.5, budget=2.0,
                       resend_after=1.0, recent_size=16, window=getattr(self, "window", 1)),
                Inbox(RING))


TestWindowedMachine = WindowedMachine.TestCase
TestWindowedMachine.settings = settings(max_examples=60, stateful_step_count=50, deadline=None)


def test_a_full_window_holds_full_batches_until_an_ack_makes_room():
    ob = outbox(batch_size=2, max_age=10.0, window=2)
    for i in range(10):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    first = ob.due(0.0)
    assert [b.seq for _, b in first] == [0, 1]          # two in flight, three full batches wait
    assert ob.due(0.0) == [] and ob.next_due_at() != float("-inf")  # no busy loop while full
    assert ob.stats().window_waits == 1 and ob.stats().pending == 6 and not ob.idle
    ob.ack("p1", 7, 0)
    assert [b.seq for _, b in ob.due(0.0)] == [2]
    ob.ack("p1", 7, 1)
    ob.ack("p1", 7, 2)
    rest = ob.due(0.0)
    assert [b.seq for _, b in rest] == [3, 4]
    sent = [u for _, b in first + rest for u, _ in b.urls]
    assert len(sent) == len(set(sent)) == 8
    with pytest.raises(ValueError, match="window"):
        outbox(window=-1)


def test_barrier_is_reached_only_when_everything_queued_before_it_is_acked():
    ob = Outbox("a", "r", epoch=1, batch_size=2, max_age=10.0)
    assert ob.barrier("b") == -1 and ob.acked_through("b", -1)
    for i in range(3):
        ob.add(f"http://h/{i}", 1, "b", 0.0)
    ob.add_seen("http://h/seen", "b", 0.0)
    mark = ob.barrier("b")          # 4 entries, 2 a batch: seqs 0 and 1
    assert mark == 1
    ob.add("http://h/later", 1, "b", 0.0)   # after the barrier: not waited for
    assert not ob.acked_through("b", mark)
    sent = ob.due(0.0)
    assert [b.seq for _, b in sent] == [0, 1]
    assert not ob.acked_through("b", mark)  # sent, not acked
    ob.ack("b", 1, 1)
    assert not ob.acked_through("b", mark)  # seq 0 still out
    ob.ack("b", 1, 0)
    assert ob.acked_through("b", mark)
    assert not ob.idle                      # the later entry is still queued


# ------------------------------------------------------------ coalescing (rules 7, 8)


def frames(ob: Outbox, now: float) -> list[tuple[str, object]]:
    return [(d, decode(encode(m))) for d, m in ob.messages(now)]


def test_an_owed_ack_rides_on_the_batch_going_back():
    ob = outbox(max_age=0.25)
    ob.add("http://a.test/1", 0, "p1", 0.0)
    ob.owe_ack("p1", 3, 0, 0.1)
    ob.owe_ack("p1", 3, 1, 0.2)
    assert ob.messages(0.24) == []
    [(dest, p)] = frames(ob, 0.25)  # the batch's age, the first thing queued for p1
    assert dest == "p1"
    assert p == Packet(RING, "p0", 7, (BatchPart(0, (("http://a.test/1", 0),)),), 3, (0, 1))
    assert ob.messages(5.0) == [("p1", UrlBatch(RING, "p0", 7, 0, (("http://a.test/1", 0),)))]
    st = ob.stats()
    assert (st.acks_piggybacked, st.acks_alone, st.acks_owed, st.messages) == (2, 0, 0, 2)


def test_an_ack_goes_alone_only_when_nothing_goes_back_within_the_age():
    ob = outbox(max_age=0.25)
    ob.owe_ack("p1", 3, 5, 1.0)
    assert ob.next_due_at() == 1.25
    assert ob.messages(1.2) == []
    assert frames(ob, 1.25) == [("p1", Ack(RING, "p0", 3, 5))]  # one: the old form
    ob.owe_ack("p1", 3, 6, 2.0)
    ob.owe_ack("p1", 3, 7, 2.1)
    assert frames(ob, 2.25) == [("p1", Packet(RING, "p0", 7, (), 3, (6, 7)))]
    assert ob.messages(9.0) == []
    assert ob.stats().acks_alone == 3 and ob.idle  # owed acks are no part of idle


def test_the_ack_deadline_takes_the_partial_batch_along():
    ob = outbox(max_age=0.25)
    ob.owe_ack("p1", 3, 0, 0.0)
    ob.add("http://a.test/1", 0, "p1", 0.2)  # its own age would end at 0.45
    [(_, p)] = frames(ob, 0.25)
    assert isinstance(p, Packet) and p.acks == (0,) and [b.seq for b in p.batches] == [0]
    assert ob.messages(0.45) == []


def test_acks_of_an_older_life_of_the_destination_are_dropped():
    ob = outbox(max_age=0.25)
    ob.owe_ack("p1", 3, 0, 0.0)
    ob.owe_ack("p1", 4, 0, 0.1)  # p1 restarted: its old process is gone
    ob.owe_ack("p1", 3, 1, 0.1)  # a late batch of the old life
    assert frames(ob, 0.25) == [("p1", Ack(RING, "p0", 4, 0))]


def test_a_resend_and_new_batches_to_one_peer_share_frames_within_batch_size():
    ob = outbox(batch_size=4, max_age=0.25)
    ob.add("http://a.test/0", 0, "p1", 0.0)
    ob.add("http://a.test/1", 0, "p1", 0.0)
    [(_, first)] = ob.messages(0.25)
    for i in range(2, 8):
        ob.add(f"http://a.test/{i}", 0, "p1", 1.0)  # one full batch of 4, 2 left
    ob.owe_ack("p1", 3, 9, 1.0)
    out = frames(ob, 1.25)  # the resend (2), the full batch (4), the aged partial (2)
    assert [(d, type(m)) for d, m in out] == [("p1", Packet), ("p1", UrlBatch)]
    packet, full = out[0][1], out[1][1]
    assert [len(b.urls) for b in packet.batches] == [2, 2] and packet.acks == (9,)
    assert packet.url_batches()[0] == first  # a resend is the same batch
    assert len(full.urls) == 4


def test_a_frame_never_carries_more_than_batch_size_entries():
    ob = outbox(batch_size=5, max_age=0.25)
    for i in range(23):
        ob.add(f"http://a.test/{i}", 0, "p1", 0.0)
    for _, m in frames(ob, 0.25):
        bs = [m] if isinstance(m, UrlBatch) else m.url_batches()
        assert sum(len(b.urls) for b in bs) <= 5


def test_the_age_stays_at_its_floor_below_the_budget():
    ob = outbox(max_age=0.05, max_delay=2.0, budget=200.0)
    now = 0.0
    for k in range(600):  # 100 URLs/s to 50 peers: never more than 100 frames/s
        now = k * 0.01
        ob.add(f"http://h{k % 50}.test/{k}", 0, f"p{k % 50}", now)
        ob.messages(now)
    assert ob.stats().age == 0.05


def test_the_age_grows_with_destinations_and_rate_up_to_max_delay():
    def run(peers: int, rate: float, max_delay: float = 5.0) -> tuple[float, float]:
        ob = outbox(max_age=0.05, max_delay=max_delay, budget=100.0)
        n, t, dt = 0, 0.0, 1.0 / rate
        late = 0  # frames in the last 25 s, once the age has settled
        while t < 40.0:
            ob.add(f"http://a.test/{n}", 0, f"p{n % peers}", t)
            n += 1
            out = ob.messages(t)
            for dest, m in out:
                ob.ack(dest, 7, m.seq)
            if t >= 15.0:
                late += len(out)
            t += dt
        return ob.stats().age, late / 25.0

    age, per_s = run(64, 2000.0)
    # age = D (1/budget - 1/R) = 64 (1/100 - 1/2000) = 0.608
    assert 0.55 < age < 0.65
    assert per_s < 110.0  # the budget, with the rate's noise
    age_big, per_s_big = run(256, 2000.0)
    assert 2.3 < age_big < 2.5 and per_s_big < 110.0
    capped, per_s_capped = run(256, 2000.0, max_delay=1.0)
    assert capped == 1.0 and per_s_capped > 110.0  # past budget x max_delay: D / max_delay


def test_the_resend_timer_leaves_room_for_a_held_ack():
    ob = outbox(max_age=0.05, max_delay=1.0, resend_after=1.0)
    ob.add("http://a.test/1", 0, "p1", 0.0)
    ob.messages(0.05)
    assert ob.messages(1.05) == []  # a peer may hold its ack for up to max_delay
    assert len(ob.messages(2.0)) == 1


@pytest.mark.parametrize("kw", [dict(max_delay=0.01, max_age=0.05), dict(budget=-1.0),
                                dict(max_delay=float("nan"))])
def test_bad_coalescing_settings_are_refused(kw):
    with pytest.raises(ValueError):
        outbox(**kw)
