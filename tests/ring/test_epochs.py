"""ring.membership.epochs and ring.epochwatch: the ring's live settings as epochs, fenced by the lease.

From the pure rules (which record wins; what a vouch carries; no grace for
a new epoch; renewals asked again at once) to RingNodes in lockstep over a
fake network whose every message goes through the codec: a change made by
the steward reaches every member and the lease holds again within a few
rounds with no grace; a member that misses the change loses its lease
within one lease; refusals say why; a starting peer whose cluster.toml
differs is stopped or adopts, as ``config_mismatch`` says.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from ring.actions import Log, Reply, Send, SettingsChanged, SettingsMismatch
from ring.membership.epochs import ConfigEpoch, Heard, PlainSettings, compare, split_doc, wins
from ring.membership.lease import Lease, PauseReason, fingerprint, vouch_print
from ring.messages import (Message, Settings, SettingsAction, SettingsOutcome, SettingsReply, SettingsRequest,
                           decode, encode)
from ring.node import RingNode
from ring.wireversion import marked_nonce

RING = "demo"
SEEDS = [("p1", "tcp://a:1", 1.0), ("p2", "tcp://a:2", 1.0), ("p3", "tcp://a:3", 1.0)]
INTERVAL, SUSPECT, DEAD = 0.1, 0.5, 1.5
LEASE = DEAD / 2  # the node's default
PORT = PlainSettings()


def doc(**keys: object) -> str:
    return json.dumps(keys, sort_keys=True, separators=(",", ":"))


def epoch(n: int, d: str) -> ConfigEpoch:
    return ConfigEpoch(n, PORT.fingerprint(d), d)


# -- the rules, pure -------------------------------------------------------------


def test_a_higher_epoch_wins_and_one_epoch_with_another_document_is_a_conflict():
    a, b = epoch(1, doc(rate="1")), epoch(1, doc(rate="2"))
    assert compare(epoch(2, doc()), a) is Heard.LATER and wins(epoch(2, doc()), a)
    assert compare(epoch(0, doc()), a) is Heard.BEHIND
    assert compare(a, b) is Heard.CONFLICT and not wins(a, b) and not wins(b, a)
    assert compare(a, epoch(1, doc(rate="1"))) is Heard.SAME
    # Every epoch names its document in the vouch, epoch 0 (each peer's cluster.toml) too.
    assert epoch(0, doc(rate="9")).ident() not in (0, epoch(0, doc(rate="8")).ident())
    assert a.ident() != b.ident() and a.ident() != 0
    assert vouch_print(77, 0, 0) == 77 and vouch_print(77, 0, a.ident()) not in (77, vouch_print(77, 0, b.ident()))


def test_a_document_travels_in_chunks_the_codec_takes():
    big = doc(rules="x" * 20_000, note="é" * 3000)
    msg = Settings(RING, "p1", 3, PORT.fingerprint(big), split_doc(big), True, True)
    back = decode(encode(msg))
    assert isinstance(back, Settings) and "".join(back.doc) == big


def test_a_new_epoch_changes_the_vouch_with_no_grace_and_a_new_ring_with_one():
    lease = Lease("p1", LEASE, INTERVAL)
    live = {"p1": 1.0, "p2": 1.0, "p3": 1.0}
    lease.ring_changed(live, 0.0)
    first = lease.vouch(0.0)
    lease.ring_changed(live, 1.0, 0, epoch(1, doc(a="1")).ident())
    assert lease.vouch(1.0) not in (0, first)  # vouches for the new epoch at once: no grace
    lease.ring_changed({"p1": 1.0, "p2": 1.0}, 2.0, 0, epoch(1, doc(a="1")).ident())
    assert lease.vouch(2.0) == 0  # a new ring: a grace (lease rule 2)


def test_renewals_ask_again_at_once_a_member_whose_answer_predates_our_new_epoch():
    lease = Lease("p1", LEASE, INTERVAL)
    live = {"p1": 1.0, "p2": 1.0, "p3": 1.0}
    lease.ring_changed(live, 0.0)
    for seq, mid in ((1, "p2"), (2, "p3")):
        lease.sent(seq, mid, 10.0)
        lease.acked(seq, mid, lease.vouch(10.0))
    assert lease.state(["p1", "p2", "p3"], 10.01).held
    lease.ring_changed(live, 10.02, 0, epoch(1, doc(a="1")).ident())
    # Their vouches are for epoch 0 now: no lease, and both asked again within the gossip interval.
    assert not lease.state(["p1", "p2", "p3"], 10.03).held
    assert sorted(lease.renewals(["p2", "p3"], 10.03, 5)) == ["p2", "p3"]
    for seq, mid in ((3, "p2"), (4, "p3")):
        lease.sent(seq, mid, 10.03)
    assert lease.renewals(["p2", "p3"], 10.04, 5) == []  # asked once a change, not every call


# -- RingNodes over a fake network -------------------------------------------------


class Net:
    """Nodes in lockstep on one clock; every Send delivered the next step, through the codec."""

    def __init__(self, docs: dict[str, str] | None = None, seeds: list[tuple[str, str, float]] | None = None,
                 **kw: object) -> None:
        self.seeds = seeds or SEEDS
        self.now = 0.0
        self.nodes: dict[str, RingNode] = {}
        self.replies: list[Message] = []
        self.actions: dict[str, list[object]] = {}
        self.inflight: list[tuple[bytes, str, bytes]] = []
        self.drop: Callable[[str, str, Message], bool] = lambda src, dest, msg: False
        for pid, _, _ in self.seeds:
            self.start(pid, (docs or {}).get(pid, doc()), **kw)

    def start(self, pid: str, d: str, settings: ConfigEpoch | None = None, **kw: object) -> RingNode:
        node = RingNode(pid, dict((p, a) for p, a, _ in self.seeds)[pid], 1.0, RING, seeds=self.seeds,
                        gossip_interval=INTERVAL, suspect_after=SUSPECT, dead_after=DEAD, now=self.now,
                        incarnation=1000 + int(self.now * 1000), settings=settings or epoch(0, d), **kw)  # type: ignore[arg-type]
        self.nodes[pid] = node
        self.actions[pid] = []
        return node

    def carry(self, pid: str, actions: list) -> None:  # type: ignore[type-arg]
        for a in actions:
            self.actions[pid].append(a)
            if isinstance(a, Send) and not self.drop(pid, a.dest, a.msg):
                # Marked with our wire version, as a peer's routes are (ring.wireversion rule 1):
                # an unmarked one is a peer of version 3, told our vouch without our epoch.
                inc = self.nodes[pid].membership.me.incarnation
                route = f"{pid}/{marked_nonce(f'{inc:016x}'[-16:])}".encode()
                self.inflight.append((route, a.dest, encode(a.msg)))
            elif isinstance(a, Reply):
                self.replies.append(a.msg)

    def step(self) -> None:
        self.now = round(self.now + INTERVAL / 2, 6)
        batch, self.inflight = self.inflight, []
        for route, dest, frame in batch:
            node = self.nodes.get(dest)
            if node is not None:
                self.carry(dest, node.receive(route, decode(frame), self.now))
        if round(self.now / INTERVAL, 6).is_integer():
            for pid, node in self.nodes.items():
                self.carry(pid, node.tick(self.now, idle=False, pages=0))

    def run(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.step()

    def held(self, pid: str) -> bool:
        node = self.nodes[pid]
        return node.lease_state(self.now + node.membership.stalled).held

    def running(self, pid: str) -> bool:
        return self.held(pid) and self.nodes[pid].settings_confirmed

    def ask(self, pid: str, action: SettingsAction, *assignments: str, base: int | None = None) -> SettingsReply:
        node = self.nodes[pid]
        b = node.settings.epoch if base is None else base
        self.carry(pid, node.receive(b"tool/1", SettingsRequest(RING, "ring-set", action, assignments, b, 7),
                                     self.now))
        reply = self.replies[-1]
        assert isinstance(reply, SettingsReply) and reply.nonce == 7
        return reply


def formed(**kw: object) -> Net:
    net = Net(**kw)  # type: ignore[arg-type]
    net.run(3.0)
    assert all(net.running(p) for p in net.nodes), {p: (net.held(p), net.nodes[p].settings_confirmed)
                                                   for p in net.nodes}
    return net


def test_a_change_reaches_every_member_and_the_lease_holds_again_within_rounds_with_no_grace():
    net = formed()
    before = len(net.actions["p1"])
    reply = net.ask("p1", SettingsAction.SET, "crawl.rate=2")
    assert reply.outcome is SettingsOutcome.CHANGED and reply.epoch == 1
    made = net.nodes["p1"].settings
    assert json.loads(made.doc) == {"crawl.rate": "2"}
    # On disk and applied first (rule 7): the call's first action, before any Send.
    acts = net.actions["p1"][before:]
    assert isinstance(acts[0], SettingsChanged) and acts[0].record == made and acts[0].keys == ("crawl.rate",)
    assert sum(isinstance(a, Send) and isinstance(a.msg, Settings) for a in acts) == 2  # pushed to p2, p3
    changed_at = net.now
    back_at = None
    while net.now < changed_at + 2 * LEASE:
        net.step()
        for pid, node in net.nodes.items():
            state = node.lease_state(net.now)
            assert state.reason is not PauseReason.GRACE, (pid, net.now)  # an epoch moves no host
        if back_at is None and all(n.settings == made for n in net.nodes.values()) and all(
                net.held(p) for p in net.nodes):
            back_at = net.now
    # A ping round trip (two steps of the net): the pushes go ahead of the renewal pings.
    assert back_at is not None and back_at - changed_at <= INTERVAL + 1e-9, back_at - changed_at
    assert all(net.running(p) for p in net.nodes)
    assert net.ask("p1", SettingsAction.PAUSE).epoch == 2
    net.run(1.0)
    assert all(n.epochs.paused and n.settings.epoch == 2 for n in net.nodes.values())
    # A status row says the epoch, its fingerprint, and that it waits for nothing (paused is the crawl's figure).
    from ring.status import StatusFigures
    row = next(r for r in net.nodes["p2"].status_reply(1, StatusFigures()).members if r.id == "p2")
    assert (row.config_epoch, row.config_fingerprint, row.config_waiting) == (
        2, net.nodes["p1"].settings.fingerprint, False)


def test_refusals_say_why_and_change_nothing():
    net = formed()
    assert net.ask("p2", SettingsAction.SET, "a=1").outcome is SettingsOutcome.NOT_STEWARD
    assert net.ask("p1", SettingsAction.SET, "a=1", base=5).outcome is SettingsOutcome.STALE
    bad = net.ask("p1", SettingsAction.SET, "a=1", "fixed.workers=3")
    assert bad.outcome is SettingsOutcome.INVALID and "fixed.workers" in bad.detail
    assert net.ask("p1", SettingsAction.RESUME).outcome is SettingsOutcome.CHANGED  # paused: false, a change
    # At once, the steward holds no lease: a majority runs epoch 0 still (a ping round trip).
    assert net.ask("p1", SettingsAction.RESUME, base=1).outcome is SettingsOutcome.NO_LEASE
    net.run(0.5)
    assert net.ask("p1", SettingsAction.RESUME).outcome is SettingsOutcome.ALREADY
    assert {n.settings.epoch for n in net.nodes.values()} <= {0, 1}
    counts = net.nodes["p1"].dropped
    assert counts["settings_stale"] == 1 and counts["settings_invalid"] == 1 and counts["settings_no_lease"] == 1
    assert net.nodes["p2"].dropped["settings_not_steward"] == 1


def test_a_member_that_misses_the_change_loses_its_lease_within_one_lease_then_catches_up():
    net = formed()
    # p3 answers pings but never hears the new epoch (its Settings are lost).
    net.drop = lambda src, dest, msg: isinstance(msg, Settings) and dest == "p3"
    net.ask("p1", SettingsAction.SET, "crawl.rules=deny /private")
    changed_at = net.now
    net.run(LEASE + 3 * INTERVAL)
    assert net.nodes["p3"].settings.epoch == 0 and not net.held("p3")
    assert net.held("p1") and net.held("p2")  # the majority runs epoch 1
    assert net.now - changed_at <= LEASE + 3 * INTERVAL + 1e-9
    net.drop = lambda src, dest, msg: False
    net.run(3.0)  # anti-entropy brings it
    assert net.nodes["p3"].settings.epoch == 1 and net.running("p3")


def test_a_restarted_peer_resumes_its_epoch_and_vouches_for_it():
    net = formed()
    net.ask("p1", SettingsAction.PAUSE)
    net.run(1.0)
    on_disk = net.nodes["p3"].settings
    del net.nodes["p3"]
    net.run(0.5)
    node = net.start("p3", doc(), settings=on_disk)
    assert node.settings == on_disk and node.epochs.paused
    net.run(4.0)
    assert net.running("p3") and node.settings == on_disk


def starting_with_another_file(policy_adopt: bool) -> tuple[Net, RingNode]:
    net = formed(docs={"p1": doc(rate="1"), "p2": doc(rate="1"), "p3": doc(rate="1")})
    del net.nodes["p3"]
    net.run(0.5)
    node = net.start("p3", doc(rate="5", rules="x"), adopt_conflicts=policy_adopt)
    net.run(2.0)
    return net, node


def test_a_starting_peer_whose_file_differs_at_the_same_epoch_is_stopped_naming_the_keys():
    net, node = starting_with_another_file(False)
    mismatch = [a for a in net.actions["p3"] if isinstance(a, SettingsMismatch)]
    assert mismatch and mismatch[0].keys == ("rate", "rules")
    assert not node.settings_confirmed  # it never starts a request
    assert all(n.settings.doc == doc(rate="1") for p, n in net.nodes.items() if p != "p3")


def test_a_starting_peer_adopts_the_rings_document_when_told_to_and_says_which_keys_differ():
    net, node = starting_with_another_file(True)
    assert node.settings.doc == doc(rate="1") and net.running("p3")
    lines = [a.text for a in net.actions["p3"] if isinstance(a, Log) and a.event == "settings.epoch"]
    assert lines and "keys that differ from this peer's cluster.toml: rate, rules" in lines[0], lines
    assert not any(isinstance(a, SettingsMismatch) for a in net.actions["p3"])


def test_a_later_epoch_is_taken_by_a_starting_peer_and_running_peers_keep_theirs_on_a_conflict():
    net = formed()
    net.ask("p1", SettingsAction.SET, "a=1")
    net.run(1.0)
    del net.nodes["p3"]
    net.run(0.5)
    node = net.start("p3", doc(b="2"))  # a fresh data_dir: epoch 0, its own file
    net.run(2.0)
    assert node.settings == net.nodes["p1"].settings and net.running("p3")
    assert not any(isinstance(a, SettingsMismatch) for a in net.actions["p3"])
    # A forged conflict at the running ring's epoch changes nobody's document, and is counted.
    theirs = epoch(1, doc(evil="1"))
    before = net.nodes["p2"].settings
    route = f"p3/{node.membership.me.incarnation:x}".encode()
    net.carry("p2", net.nodes["p2"].receive(route, Settings(RING, "p3", 1, theirs.fingerprint,
                                                               split_doc(theirs.doc), True, True), net.now))
    assert net.nodes["p2"].settings == before and net.nodes["p2"].dropped["settings_conflict"] == 1


@pytest.mark.parametrize("fp_delta", [1])
def test_a_record_whose_document_does_not_match_its_fingerprint_is_dropped(fp_delta):
    net = formed()
    d = doc(a="1")
    route = f"p1/{net.nodes['p1'].membership.me.incarnation:x}".encode()
    acts = net.nodes["p2"].receive(route, Settings(RING, "p1", 9, PORT.fingerprint(d) ^ fp_delta,
                                                     split_doc(d), True, True), net.now)
    assert net.nodes["p2"].settings.epoch == 0 and net.nodes["p2"].dropped["bad_settings"] == 1
    assert not any(isinstance(a, SettingsChanged) for a in acts)


# -- epoch 0: two files started at once (rule 8) -------------------------------------


def seeds(n: int) -> list[tuple[str, str, float]]:
    return [(f"p{i}", f"tcp://a:{i}", 1.0) for i in range(1, n + 1)]


A, B = doc(rate="1"), doc(rate="5", rules="deny /x")


def test_which_file_the_ring_runs_is_a_function_of_what_the_voters_said():
    from ring.membership.epochs import settle_zero
    q = [["p1", "p2", "p3", "p4", "p5"]]
    # A majority holds one: it wins whoever is not heard yet.
    got = settle_zero({"p1": 7, "p2": 7, "p3": 7, "p4": 9}, q)
    assert (got.fingerprint, got.majority, got.unheard) == (7, True, 1)
    # No majority and a voter not heard: not decided (its file could make one).
    assert settle_zero({"p1": 7, "p2": 7, "p3": 9, "p4": 9}, q).fingerprint is None
    # Every voter heard, none with a majority: the most voters, then the lowest fingerprint.
    got = settle_zero({"p1": 7, "p2": 7, "p3": 9, "p4": 9, "p5": 3}, q)
    assert (got.fingerprint, got.majority, got.counts) == (7, False, ((7, 2), (9, 2), (3, 1)))
    assert settle_zero({"p1": 9, "p2": 7}, [["p1", "p2"]]).fingerprint == 7
    # A member that runs names the ring's file (a majority vouches for it); learners are not counted.
    assert settle_zero({"p1": 9, "x": 7}, q, running=7) == settle_zero({"p1": 9}, q, running=7)
    # Two quorums while the voters change: a majority of each.
    two = [["p1", "p2", "p3"], ["p3", "p4", "p5"]]
    assert not settle_zero({"p1": 7, "p2": 7, "p4": 9, "p5": 9}, two).majority
    assert settle_zero({"p1": 7, "p2": 7, "p3": 7, "p4": 7}, two).majority


def test_an_older_peers_vouch_counts_at_epoch_0_only_and_ours_is_said_its_way():
    lease = Lease("p1", LEASE, INTERVAL)
    live = {"p1": 1.0, "p2": 1.0, "p3": 1.0}
    zero = epoch(0, A)
    lease.plain = True
    lease.ring_changed(live, 0.0, 0, zero.ident())
    ours = lease.vouch(0.0)
    plain = vouch_print(fingerprint(live), 0)
    assert ours not in (0, plain) and lease.plain_of(ours) == plain and lease.plain_of(123) == 123
    lease.sent(1, "p2", 1.0)
    lease.acked(1, "p2", plain)  # a peer of wire version 3: no epoch in its vouch
    assert lease.state(["p1", "p2", "p3"], 1.01).held
    lease.sent(2, "p3", 1.0)
    lease.acked(2, "p3", vouch_print(fingerprint(live), 0, epoch(0, B).ident()))  # another file: no
    assert lease.state(["p1", "p2", "p3"], 1.01).vouched == 2
    # At a later epoch the older peer counts for nobody.
    lease.plain = False
    lease.ring_changed(live, 2.0, 0, epoch(1, A).ident())
    lease.sent(3, "p2", 2.0)
    lease.acked(3, "p2", plain)
    assert not lease.state(["p1", "p2", "p3"], 2.01).held and lease.plain_of(lease.vouch(2.01)) == lease.vouch(2.01)


def started_at_once(docs: dict[str, str], *, adopt: bool, seconds: float = 6.0) -> tuple[Net, list[tuple]]:
    """Every peer started at the same instant with its file; each step, who runs which document."""
    net = Net(docs=docs, seeds=seeds(len(docs)), adopt_conflicts=adopt)
    seen: list[tuple] = []
    while net.now < seconds:
        net.step()
        runs = {p: n.settings.fingerprint for p, n in net.nodes.items()
                if net.running(p) and not any(isinstance(a, SettingsMismatch) for a in net.actions[p])}
        seen.append((net.now, runs))
    return net, seen


def test_two_files_started_at_once_run_the_majoritys_and_the_minority_refuses_naming_the_keys():
    net, seen = started_at_once({"p1": A, "p2": A, "p3": A, "p4": B, "p5": B}, adopt=False)
    # Never two documents run at once, and never the minority's (the fence: it gets no majority).
    assert all(set(runs.values()) <= {PORT.fingerprint(A)} for _, runs in seen), next(
        (t, r) for t, r in seen if set(r.values()) - {PORT.fingerprint(A)})
    for p in ("p4", "p5"):
        stop = [a for a in net.actions[p] if isinstance(a, SettingsMismatch)]
        assert len(stop) == 1 and stop[0].keys == ("rate", "rules") and stop[0].theirs.doc == A, p
    assert all(net.running(p) for p in ("p1", "p2", "p3"))
    assert not any(isinstance(a, SettingsMismatch) for p in ("p1", "p2", "p3") for a in net.actions[p])


def test_two_files_started_at_once_with_adopt_converge_on_the_majoritys():
    net, seen = started_at_once({"p1": A, "p2": A, "p3": A, "p4": B, "p5": B}, adopt=True)
    assert all(set(runs.values()) <= {PORT.fingerprint(A)} for _, runs in seen)
    assert all(n.settings.doc == A for n in net.nodes.values()) and all(net.running(p) for p in net.nodes)
    lines = [a.text for a in net.actions["p4"] if isinstance(a, Log) and a.event == "settings.epoch"]
    assert lines and "keys that differ from this peer's cluster.toml: rate, rules" in lines[0], lines


def test_a_tie_waits_saying_so_with_refuse_and_settles_on_one_file_with_adopt():
    docs = {"p1": A, "p2": A, "p3": B, "p4": B}
    net, seen = started_at_once(docs, adopt=False)
    assert not any(runs for _, runs in seen)  # no file has a majority: nothing starts
    assert not any(isinstance(a, SettingsMismatch) for acts in net.actions.values() for a in acts)
    for p in net.nodes:
        waits = [a for a in net.actions[p] if isinstance(a, Log) and a.event == "settings.split"]
        assert len(waits) == 1 and "2 voters" in waits[0].text, (p, waits)
    lowest = min(PORT.fingerprint(A), PORT.fingerprint(B))
    net, seen = started_at_once(docs, adopt=True)
    assert all(set(runs.values()) <= {lowest} for _, runs in seen)
    assert {n.settings.fingerprint for n in net.nodes.values()} == {lowest}
    assert all(net.running(p) for p in net.nodes)


def test_identical_files_started_at_once_cost_no_message_more():
    from ring.messages import Sync
    net, _ = started_at_once({f"p{i}": A for i in range(1, 6)}, adopt=False, seconds=3.0)
    assert all(net.running(p) for p in net.nodes)
    assert not any(isinstance(a, Log) and a.event in ("settings.split", "settings.conflict")
                   for acts in net.actions.values() for a in acts)
    # Once running, a peer sends its record only with an anti-entropy Sync, as before.
    mark = {p: len(acts) for p, acts in net.actions.items()}
    net.run(2.0)
    sent = [a.msg for p, acts in net.actions.items() for a in acts[mark[p]:] if isinstance(a, Send)]
    assert sum(isinstance(m, Settings) for m in sent) == sum(isinstance(m, Sync) for m in sent) > 0
