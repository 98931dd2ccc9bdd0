"""ring.tools.client against real ring drivers in-process: typed status rows, a leave seen through, a forget.

The drivers are ``ring.io.driver.RingDriver`` over a stand-in crawl, a
``ring.crawlport.CrawlPort``; last, what the driver hands that port for a batch
taken and for our entries rerouted back (``ring.forwarding.intake``'s order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import trio
from ringharness import free_ports

from ring.tools.client import Contact, LeaveOutcome, cluster_status, request_forget, request_leave
from ring.io.driver import RingDriver
from ring.hashring import HashRing
from ring.messages import ForgetOutcome, MemberState, MemberStatus
from ring.node import RingNode

RING = "t"


class Figures:
    """A crawl with fixed figures that can be asked to leave (``ring.crawlport.CrawlPort``)."""

    def __init__(self, pages: int) -> None:
        self.pages_requested = pages
        self.asked_to_leave = trio.Event()
        self.driver: RingDriver | None = None

    def locally_idle(self) -> bool:
        return True

    def leave(self) -> None:
        assert self.driver is not None
        self.driver.leave()
        self.asked_to_leave.set()

    def status_figures(self) -> dict[str, Any]:
        return {"pages": self.pages_requested, "frontier": 3, "limits": {"malformed.content_length": 2},
                "not_requested": {"robots": 4}}

    def accept(self, url: str, depth: int) -> None: ...
    def accept_seen(self, url: str) -> None: ...
    def take_back(self, url: str, depth: int) -> None: ...
    def commit_state(self) -> None: ...
    def set_ring(self, ring: HashRing) -> None: ...
    def handoff_done(self, sender: str) -> None: ...
    def seed_host_starts(self, starts: Iterable[tuple[str, float]]) -> None: ...
    def poke(self) -> None: ...

    async def handoff_seen(self, old: HashRing, ring: HashRing) -> int:
        return 0

    def handoff_starts(self, old: HashRing, ring: HashRing) -> Mapping[str, Iterable[tuple[str, float]]]:
        return {}


async def start(nursery: trio.Nursery, peer_id: str, seeds: list[tuple[str, str, float]],
                pages: int, **kw: Any) -> tuple[RingNode, Figures, trio.CancelScope]:
    address = dict((s[0], s[1]) for s in seeds)[peer_id]
    node = RingNode(peer_id, address, 1.0, RING, seeds=seeds, gossip_interval=0.1,
                    suspect_after=1.0, dead_after=3.0, now=trio.current_time(), incarnation=1000, **kw)
    crawl = Figures(pages)
    crawl.driver = driver = RingDriver(node, crawl, address)
    scope = trio.CancelScope()

    async def run(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await driver.run(task_status=task_status)
            await trio.sleep_forever()

    await nursery.start(run)
    return node, crawl, scope


async def test_status_rows_are_typed_and_carry_each_members_own_figures():
    seeds = [(f"p{i + 1}", f"tcp://127.0.0.1:{port}", 1.0) for i, port in enumerate(free_ports(2))]
    contacts = [Contact(p, a) for p, a, _ in seeds]
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            n1, _, _ = await start(nursery, "p1", seeds, pages=7)
            n2, _, _ = await start(nursery, "p2", seeds, pages=11)
            # Until each sees the other alive: the first seed asks only the members
            # its view holds live for their own rows, and shows the rest as gossiped
            # (frontier 0, no counters); a loaded machine once took longer than the
            # half second this waited.
            def alive(node: RingNode, peer: str) -> bool:
                view = node.membership.members()
                return peer in view and MemberState(view[peer].state) is MemberState.ALIVE

            while not all(alive(n, p) for n in (n1, n2) for p in ("p1", "p2")):
                await trio.sleep(0.05)
            rows = await cluster_status(RING, contacts, timeout=5.0)
            nursery.cancel_scope.cancel()
    assert rows is not None and all(isinstance(r, MemberStatus) for r in rows)  # the wire's own row
    assert [(r.id, r.state, r.pages) for r in rows] == [("p1", MemberState.ALIVE, 7),
                                                        ("p2", MemberState.ALIVE, 11)]
    assert all(r.frontier == 3 and dict(r.families.drops) == {"malformed.content_length": 2} for r in rows)
    js = rows[1].as_json()
    assert js["state"] == "alive" and js["drops"] == {"malformed.content_length": 2}
    assert js["not_requested"] == {"robots": 4} and js["failed"] == {}


async def test_nobody_answering_is_none_and_an_unknown_peer_cannot_leave():
    contacts = [Contact("p1", f"tcp://127.0.0.1:{free_ports(1)[0]}")]
    with trio.fail_after(30):
        assert await cluster_status(RING, contacts, timeout=0.3) is None
        assert (await request_leave(RING, contacts, "p1", timeout=1.0)).outcome is LeaveOutcome.UNKNOWN


async def test_a_leave_is_followed_until_the_others_list_the_peer_as_left():
    seeds = [(f"p{i + 1}", f"tcp://127.0.0.1:{port}", 1.0) for i, port in enumerate(free_ports(2))]
    contacts = [Contact(p, a) for p, a, _ in seeds]
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await start(nursery, "p1", seeds, pages=0)
            node2, crawl2, scope2 = await start(nursery, "p2", seeds, pages=0)
            await trio.sleep(0.5)

            async def exit_when_left() -> None:
                # What peer.engine.crawler does: once handed over, linger a few rounds, then exit.
                await crawl2.asked_to_leave.wait()
                while not node2.left(True):
                    await trio.sleep(0.05)
                await trio.sleep(0.5)
                scope2.cancel()

            nursery.start_soon(exit_when_left)
            result = await request_leave(RING, contacts, "p2", timeout=30.0)
            nursery.cancel_scope.cancel()
    assert result.outcome is LeaveOutcome.LEFT and result.state == "left"


async def test_forget_asks_the_seeds_and_the_members_they_list_and_each_says_what_it_did():
    # p1, p2 and p3 run; p4 never starts, so the ring finds it dead. Only p1,
    # p2 and p4 are "in cluster.toml" (the contacts): p3 is found in their views.
    seeds = [(f"p{i + 1}", f"tcp://127.0.0.1:{port}", 1.0) for i, port in enumerate(free_ports(4))]
    contacts = [Contact(p, a) for p, a, _ in seeds if p != "p3"]
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = [(await start(nursery, p, seeds, pages=0, seed_grace=0.2))[0] for p in ("p1", "p2", "p3")]
            while not all(n.membership.members()["p4"].state is MemberState.DEAD for n in nodes):
                await trio.sleep(0.1)
            alive = await request_forget(RING, contacts, "p3", timeout=1.0)
            dead = await request_forget(RING, contacts, "p4", timeout=1.0)
            again = await request_forget(RING, contacts, "p4", timeout=1.0)
            quorums = [n.lease_state(trio.current_time()).quorum for n in nodes]
            nursery.cancel_scope.cancel()
    assert [(r.peer, r.outcome) for r in alive] == [
        ("p1", ForgetOutcome.ALIVE), ("p2", ForgetOutcome.ALIVE), ("p4", None)]  # p3 is the target
    assert [(r.peer, r.outcome) for r in dead] == [
        ("p1", ForgetOutcome.FORGOTTEN), ("p2", ForgetOutcome.FORGOTTEN), ("p3", ForgetOutcome.FORGOTTEN),
        ("p4", None)]
    assert [r.outcome for r in again] == [ForgetOutcome.NOT_KNOWN] * 3 + [None]
    assert quorums == [3, 3, 3]


def test_healthy_counters_and_exclusions_are_not_shown_as_drops():
    # `ring status` listed fwd.batches, fwd.frames... and the caps under "dropped:".
    from ring.tools.statustable import format_status
    from ring.tools.client import _row

    own = MemberStatus("p1", "tcp://127.0.0.1:1", MemberState.ALIVE, 1.0, 5, 0.0, 0, 0, 0, 0, 0.0, 0.0,
                       1.0, dropped=(("cap.max_links_per_page", 2), ("fwd.batches", 9), ("fwd.frames", 12),
                                     ("hold.takeovers", 1), ("not_requested.robots", 5),
                                     ("not_requested.scope", 6), ("unknown_sender", 3)),
                       errors=(("connect", 1),))
    row = _row(own, own)
    assert dict(row.families.drops) == {"unknown_sender": 3}
    assert dict(row.families.counters) == {"cap.max_links_per_page": 2, "fwd.batches": 9, "fwd.frames": 12,
                                           "hold.takeovers": 1}
    assert dict(row.families.not_requested) == {"robots": 5, "scope": 6}
    assert row.as_json()["counters"]["fwd.frames"] == 12 and row.as_json()["drops"] == {"unknown_sender": 3}
    text = format_status([row])
    assert "  drops: unknown_sender 3\n" in text
    assert "counters: cap.max_links_per_page 2, fwd.batches 9, fwd.frames 12, hold.takeovers 1" in text
    # the summary's words: robots exclusions are not requested, never errors
    assert "  failed: connect 1\n" in text and "  not requested: robots 5, scope 6\n" in text


def test_ring_status_shows_a_peer_not_heard_from_as_waiting_and_a_budget_wait():
    from ring.tools.statustable import format_status

    def row(mid: str, **kw: Any) -> MemberStatus:
        return MemberStatus(mid, f"tcp://127.0.0.1:{mid[1:]}", MemberState.ALIVE, 0.5, 0, 0.0, 0, 0, 0, 0,
                            0.0, 0.0, 1.0, **kw)

    text = format_status([row("p1", page_cap=20, budget_wait=True), row("p2", heard=False)])
    lines = text.splitlines()
    assert lines[1].split()[:2] == ["p1", "alive"]
    assert lines[2].strip() == "paused: waiting for a page-budget grant (its max_pages cap, 20 pages, is spent)"
    assert lines[3].split()[:2] == ["p2", "waiting"]
    assert next(ln for ln in lines if ln.startswith("total")).split()[1:3] == ["1", "live"]


def test_ring_status_names_the_wire_versions_while_they_differ():
    from ring.tools.statustable import format_status

    def row(mid: str, **kw: Any) -> MemberStatus:
        return MemberStatus(mid, f"tcp://127.0.0.1:{mid[1:]}", MemberState.ALIVE, 0.5, 0, 0.0, 0, 0, 0, 0,
                            0.0, 0.0, 1.0, **kw)

    mixed = format_status([row("p1", wire_version=4), row("p2", wire_version=3), row("p3", wire_version=4),
                           row("p4", wire_version=0)])  # p4 did not answer: its version is not said
    assert "wire versions: 4 (p1, p3), 3 (p2): an upgrade under way" in mixed.splitlines()
    assert "wire versions" not in format_status([row("p1", wire_version=4), row("p2", wire_version=4)])


class Taker(Figures):
    """A stand-in crawl that writes down what the driver hands it."""

    def __init__(self) -> None:
        super().__init__(0)
        self.calls: list[tuple[Any, ...]] = []

    def accept(self, url: str, depth: int) -> None:
        self.calls.append(("accept", url, depth))

    def accept_seen(self, url: str) -> None:
        self.calls.append(("accept_seen", url))

    def take_back(self, url: str, depth: int) -> None:
        self.calls.append(("take_back", url, depth))

    def commit_state(self) -> None:
        self.calls.append(("commit_state",))


async def test_the_driver_hands_a_batch_and_our_entries_back_to_the_crawl_in_ring_intakes_order():
    # RingDriver restates no rule of its own: ring.forwarding.intake orders, the CrawlPort's calls follow.
    from ring.actions import Deliver, Rerouted
    from ring.forwarding.intake import ADOPT_PREFIX

    node = RingNode("p1", "tcp://127.0.0.1:1", 1.0, RING, seeds=[], gossip_interval=0.1, suspect_after=1.0,
                    dead_after=3.0, now=0.0, incarnation=1000)
    crawl = Taker()
    driver = RingDriver(node, crawl, "tcp://127.0.0.1:1")
    driver._start([Deliver((("http://a.test/", 1),), ("http://s.test/",), "p2"),
                   Deliver((("http://b.test/", 0),), (), ADOPT_PREFIX + "p3"),
                   Rerouted((("http://c.test/", 2),), ("http://c.test/seen",))])
    assert crawl.calls == [
        ("accept", "http://a.test/", 1), ("accept_seen", "http://s.test/"), ("commit_state",),
        ("accept", "http://b.test/", 0), ("commit_state",),
        ("accept_seen", "http://c.test/seen"), ("take_back", "http://c.test/", 2)]


def test_status_says_how_many_voter_failures_the_ring_survives_and_warns_at_none():
    from ring.messages import LeaseStatus, VoterAction, VoterOutcome
    from ring.tools.client import VoterResult
    from ring.tools.voters import format_voter, voters_line, voters_summary

    def row(pid: str, alive: int, needed: int, version: int = 2, voters=("p1", "p2", "p3")) -> MemberStatus:
        return MemberStatus(pid, "tcp://x:1", MemberState.ALIVE, 0.5, 0, 0.0, 0, 0, 0, 0, 0.0, 0.0, 1.0,
                            lease=LeaseStatus.HELD, voters_version=version, voters=voters,
                            voters_alive=alive, voters_needed=needed)

    rows = [row("p1", 3, 2), row("p2", 3, 2), row("p3", 3, 2)]
    assert voters_summary(rows) == {"version": 2, "voters": ["p1", "p2", "p3"], "joint": [], "alive": 3,
                                    "needed": 2, "survives": 1, "majority": True, "agree": True, "warning": None}
    assert voters_line(rows) == "voters: p1, p2, p3 (version 2): 3 alive, 2 needed; survives 1 voter failure"
    edge = [row("p2", 2, 2), row("p3", 2, 2)]
    assert voters_summary(edge)["survives"] == 0  # type: ignore[index]
    assert "WARNING: the ring survives no failure" in voters_line(edge)  # type: ignore[operator]
    lost = [row("p2", 1, 2, version=0, voters=("p1", "p2"))]
    assert "WARNING: no majority of the voters is alive" in voters_line(lost)  # type: ignore[operator]
    assert voters_summary([]) is None  # nobody said (a peer of an older build)

    ok, done = format_voter(VoterAction.ADD, "p3", VoterResult("p1", VoterOutcome.CHANGING, 1, True, tuple(rows)))
    assert done and ok.splitlines()[:2] == ["p1 made the change (version 1)", "p3 is a voter at every live member"]
    text, done = format_voter(VoterAction.ADD, "p3", VoterResult("p1", VoterOutcome.NO_LEASE, 0))
    assert not done and text.startswith("refused by p1: it holds no lease")
    assert format_voter(VoterAction.RETIRE, "p9", VoterResult("p1", VoterOutcome.ALREADY, 2))[1]
    assert not format_voter(VoterAction.ADD, "p3", VoterResult(None, None))[1]
