"""peer/commands/adopt.py and scripts/adopt.py: a lost peer's frontier adopted by the live ring (permanent loss).

The helpers build a lost peer's data_dir the way ``peer.state.journal`` and
``peer.results.store`` leave it (:func:`write_lost_peer`), so an end-to-end test
that kills a real peer can reuse them and :func:`adopt.adopt`.

The end-to-end test runs two peers of a three-peer ring in its own process
(the real engine and zmq sockets, tests/support/ringharness.py; p3 never starts, so
it is declared dead) crawling one local web, which answers slowly until the
adoption is over so the crawl outlasts it, while the lost p3's frontier
points into a second local web on another port that nothing links to: only
adoption can bring those pages in, so the second web's request log says
exactly what adoption did.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path

import duckdb
import pytest
import trio
from ringharness import Ring, cluster_text, fetched, free_ports
from localweb import HostBehaviour, SiteGraph, serve_webfarm

import peer.commands.adopt as adopt_core
from peer.commands.adopt import adopt, load_lost, make_plan
from peer.core.seen.bloom import BloomFilter
from peer.state.configfile import load_config
from peer.errors import URLError
from peer.state.journal import PeerState
from peer.results.store import SCHEMA
from peer.core.urls.normalize import host_key
from ring.hashring import HashRing
from ring.messages import Ack, MemberState, MemberStatus, UrlBatch, decode, encode
from ring.io.zmqio import SocketType, open_socket

ROOT = Path(__file__).resolve().parents[2]
RING = "test"


# -- a lost peer's data_dir ------------------------------------------------------


def page_row(url: str, peer: str, depth: int = 1) -> list:
    """A journal row: ``PageRow`` fields in order, as the engine journals them."""
    return [url, url, host_key(url), 200, "text/html", 100, "t", 3, depth,
            1_700_000_000.0, 12.0, None, peer]


def write_lost_peer(
    data_dir: Path, peer_id: str, ring: str = RING, *,
    snapshot_queued: Sequence[tuple[str, int]] = (),
    snapshot_forwards: Sequence[tuple[str, int]] = (),
    journal_queued: Sequence[tuple[str, int]] = (),
    journal_forwards: Sequence[tuple[str, int]] = (),
    journal_done: Sequence[str] = (),
    pages: Iterable[str] = (),
) -> Path:
    """A peer's data_dir as left by a kill: a snapshot, a journal after it, pages.duckdb.

    ``journal_done`` URLs are queued, then done with a row that only the
    journal holds (not in pages.duckdb). ``pages`` get a row in pages.duckdb.
    """
    state = PeerState(data_dir / "state", peer_id, ring)
    bloom = BloomFilter(10_000, 0.001)
    state.begin(bloom, list(snapshot_queued), list(snapshot_forwards), {"pages": 0})
    for url, depth in journal_queued:
        state.queued(url, depth)
    if journal_forwards:
        state.forwarded(journal_forwards)
    for url in journal_done:
        state.queued(url, 1)
        state.done(url, page_row(url, peer_id))
    state.commit()
    state.close()
    con = duckdb.connect(str(data_dir / "pages.duckdb"))
    try:
        cols = SCHEMA["pages"]
        con.execute("CREATE TABLE pages (" + ", ".join(f"{n} {t}" for n, t in cols) + ")")
        rows = [(url, url, host_key(url), 200, "text/html", 100, "t", 3, 1, datetime(2025, 3, 1),
                 12.0, None, peer_id, None, None, None) for url in pages]
        if rows:  # the appender, as the store writes: one INSERT per row costs 10 ms each
            app = con.appender("pages")
            app.append_rows([r + (None,) * (len(cols) - len(r)) for r in rows])  # later columns NULL
            app.flush()
    finally:
        con.close()
    return data_dir


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def toml_for(tmp_path: Path, addresses: dict[str, str]) -> Path:
    peers = "".join(f'[[peer]]\nid = "{pid}"\naddress = "{addr}"\ndata_dir = "{tmp_path / pid}"\n\n'
                    for pid, addr in addresses.items())
    path = tmp_path / "cluster.toml"
    path.write_text(f'[ring]\nname = "{RING}"\n\n{peers}[crawl]\nseeds = ["http://a.test/"]\n'
                    'allow_hosts = ["*.test"]\n')
    return path


def row(peer_id: str, address: str, state: str) -> MemberStatus:
    return MemberStatus(peer_id, address, MemberState(state), 0.0, 0, 0.0, 0, 0, 0, 0, 0.0, 0.0, 0.0)


def status_of(addresses: dict[str, str], states: dict[str, str]):  # type: ignore[no-untyped-def]
    """A stand-in for ``peer.commands.adopt.ring_status``: these members, in these states."""
    async def status(cfg, timeout=1.5, keys=None, heard=None):  # type: ignore[no-untyped-def]
        return [row(p, addresses[p], states[p]) for p in sorted(states)]
    return status


def u(host: str, i: int) -> str:
    return f"http://{host}.test/p{i}"


QUEUED = [(u("a", i), 1) for i in range(30)] + [(u("b", i), 2) for i in range(30)]
FORWARDS = [(u("c", i), 1) for i in range(20)]
FETCHED = [u("d", i) for i in range(25)] + [u("a", 0)]  # a/p0 is queued and fetched


@pytest.fixture
def lost(tmp_path: Path) -> Path:
    return write_lost_peer(
        tmp_path / "p3", "p3", snapshot_queued=QUEUED[:40], journal_queued=QUEUED[40:],
        snapshot_forwards=FORWARDS[:10], journal_forwards=FORWARDS[10:],
        journal_done=[u("e", 1), u("e", 2)], pages=FETCHED)


ADDRS = {"p1": "tcp://127.0.0.1:9", "p2": "tcp://127.0.0.1:10", "p3": "tcp://127.0.0.1:11"}


def run_main(monkeypatch, capsys, argv: list[str], states: dict[str, str]):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(adopt_core, "ring_status", status_of(ADDRS, states))
    code = adopt_core.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# -- reading the lost peer ---------------------------------------------------------


def test_the_lost_peers_queue_forwards_and_fetched_urls_are_read_and_its_dir_is_untouched(
        tmp_path, lost):
    toml_for(tmp_path, ADDRS)
    cfg = load_config(tmp_path / "cluster.toml")
    # A torn tail, as kill -9 leaves: recovery would truncate it in place.
    journal = next((lost / "state").glob("journal-*.log"))
    with journal.open("ab") as f:
        f.write(b"\x40\x00\x00\x00\x00\x00\x00\x00\x93\x00")
    before = tree(lost)

    got = load_lost(cfg, lost, "p3")

    assert tree(lost) == before, "adopt must not change the lost peer's files"
    want = {url: d for url, d in QUEUED + FORWARDS if url != u("a", 0)}
    assert got.urls == want
    assert set(got.fetched) == set(FETCHED) | {u("e", 1), u("e", 2)}
    assert got.already_fetched == 1
    assert [r[0] for r in got.rows_to_restore] == [u("e", 1), u("e", 2)]
    assert got.torn_bytes == 10 and got.has_state


def test_a_journal_row_that_cannot_be_a_pages_row_is_fetched_again_not_counted_as_seen(tmp_path):
    # Neither restore_rows nor the merge can write a row of another build's
    # columns: sent as seen, its page would be in no results file and never
    # fetched again.
    toml_for(tmp_path, ADDRS)
    cfg = load_config(tmp_path / "cluster.toml")
    d = write_lost_peer(tmp_path / "p3", "p3", pages=[u("d", 0)])
    state = PeerState(d / "state", "p3", RING)
    rec = state.recover()
    assert rec is not None
    state.begin(rec.bloom, rec.queued.items(), rec.forwards, rec.counters)
    state.queued(u("f", 1), 3)
    state.done(u("f", 1), page_row(u("f", 1), "p3", depth=3) + ["a column of no build", 1, 2, 3] * 10)
    state.commit()
    state.close()

    got = load_lost(cfg, d, "p3")
    assert got.fetched == [u("d", 0)] and got.urls == {u("f", 1): 3}
    assert got.rows_to_restore == []


def test_make_plan_gives_every_url_to_the_owner_of_its_host():
    ring = HashRing({"p1": 1.0, "p2": 1.0}, vnodes=64)
    urls = dict(QUEUED) | {"http:///nohost": 0}
    with pytest.raises(URLError):
        host_key("http:///nohost")
    plan = make_plan(urls, FETCHED, lambda x: ring.owner(host_key(x)))
    assert plan.unroutable == ["http:///nohost"]
    assert sorted(u for v in plan.urls.values() for u, _ in v) == sorted(dict(QUEUED))
    assert sorted(u for v in plan.seen.values() for u in v) == sorted(FETCHED)
    for owner, items in plan.urls.items():
        assert {ring.owner(host_key(url)) for url, _ in items} == {owner}
    for owner, items in plan.seen.items():
        assert {ring.owner(host_key(url)) for url in items} == {owner}


# -- the command line: mistakes and the dry run --------------------------------------


def test_dry_run_prints_the_plan_per_owner_and_changes_nothing(tmp_path, lost, monkeypatch, capsys):
    toml = toml_for(tmp_path, ADDRS)
    before = tree(lost)
    code, out, err = run_main(monkeypatch, capsys, [str(lost), "--ring", str(toml), "--dry-run", "--json"],
                              {"p1": "alive", "p2": "suspect", "p3": "dead"})
    assert code == 0, err
    doc = json.loads(out)
    ring = HashRing({"p1": 1.0, "p2": 1.0}, vnodes=256)
    want_urls: dict[str, int] = {}
    for url, _ in QUEUED + FORWARDS:
        if url != u("a", 0):
            o = ring.owner(host_key(url))
            want_urls[o] = want_urls.get(o, 0) + 1
    want_seen: dict[str, int] = {}
    for url in [*FETCHED, u("e", 1), u("e", 2)]:
        o = ring.owner(host_key(url))
        want_seen[o] = want_seen.get(o, 0) + 1
    assert doc["dry_run"] is True and doc["peer"] == "p3"
    assert doc["urls"] == want_urls and doc["seen"] == want_seen
    assert doc["already_fetched"] == 1 and doc["rows_restored"] == 2
    assert tree(lost) == before  # the journal rows are not written back in a dry run

    code, out, err = run_main(monkeypatch, capsys, [str(lost), "--ring", str(toml), "--dry-run"],
                              {"p1": "alive", "p2": "alive", "p3": "dead"})
    assert code == 0, err
    assert out.startswith("p3: plan (dry run, nothing sent): 79 queued URLs and 28 fetched URLs")
    assert "total             79        28" in out
    assert f"would restore 2 result rows from the journal into {lost}/pages.duckdb" in out


def test_a_peer_still_alive_in_the_ring_is_refused(tmp_path, lost, monkeypatch, capsys):
    toml = toml_for(tmp_path, ADDRS)
    for state in ("alive", "suspect"):
        code, out, err = run_main(monkeypatch, capsys, [str(lost), "--ring", str(toml)],
                                  {"p1": "alive", "p2": "alive", "p3": state})
        assert code == 2 and out == ""
        assert err == f"error: {lost}: p3 is still {state} in the ring; adopt only a dead peer's data " \
                      "(or --force)\n"


def test_corrupt_state_is_one_line_naming_the_file_and_exit_2(tmp_path, lost, monkeypatch, capsys):
    toml = toml_for(tmp_path, ADDRS)
    snap = next((lost / "state").glob("snapshot-*.msgpack"))
    data = bytearray(snap.read_bytes())
    data[5] ^= 0xFF
    snap.write_bytes(bytes(data))
    code, out, err = run_main(monkeypatch, capsys, [str(lost), "--ring", str(toml)],
                              {"p1": "alive", "p2": "alive", "p3": "dead"})
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"error: {snap}: snapshot is corrupt (checksum mismatch); ")
    assert "--fresh" not in err and "cannot be adopted" in err


def test_a_copy_of_a_data_dir_elsewhere_is_the_peer_its_state_names(tmp_path, lost, monkeypatch, capsys):
    # The operator copies the dead machine's data_dir to another path (rsync, a
    # backup): its snapshot says it is p3's, so no --id is needed.
    toml = toml_for(tmp_path, ADDRS)
    copied = tmp_path / "copied" / "p3"
    copied.parent.mkdir()
    lost.rename(copied)
    code, out, err = run_main(monkeypatch, capsys, [str(copied), "--ring", str(toml), "--dry-run"],
                              {"p1": "alive", "p2": "alive", "p3": "dead"})
    assert code == 0, err
    assert "79 queued URLs" in out
    # Still alive in the ring: refused as p3, the peer its state names.
    code, _, err = run_main(monkeypatch, capsys, [str(copied), "--ring", str(toml)],
                            {"p1": "alive", "p2": "alive", "p3": "alive"})
    assert code == 2 and "p3 is still alive in the ring" in err


def test_a_data_dir_of_another_ring_or_without_state_is_refused_or_needs_id(tmp_path, monkeypatch, capsys):
    toml = toml_for(tmp_path, ADDRS)
    foreign = write_lost_peer(tmp_path / "foreign", "p3", "another-ring", snapshot_queued=QUEUED[:5])
    code, _, err = run_main(monkeypatch, capsys, [str(foreign), "--ring", str(toml)], {"p1": "alive"})
    assert code == 2
    assert err == f"error: {foreign}: holds the crawl state of peer 'p3' of ring 'another-ring', " \
                  f"not of ring {RING!r} ({toml})\n"
    bare = tmp_path / "bare"
    write_lost_peer(tmp_path / "x", "p3", pages=FETCHED)
    bare.mkdir()
    (tmp_path / "x" / "pages.duckdb").rename(bare / "pages.duckdb")  # rows, no crawl state
    code, _, err = run_main(monkeypatch, capsys, [str(bare), "--ring", str(toml)], {"p1": "alive"})
    assert code == 2
    assert err == f"error: {bare}: is not the data_dir of any [[peer]] in {toml}, and holds no crawl " \
                  "state naming its peer; give the lost peer's id with --id\n"
    code, out, err = run_main(monkeypatch, capsys, [str(bare), "--ring", str(toml), "--id", "p3",
                                                    "--dry-run"], {"p1": "alive", "p3": "dead"})
    assert code == 0, err


HOLDER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("ready", flush=True)
time.sleep(60)
"""


def test_a_results_file_held_by_a_running_peer_is_refused(tmp_path, lost, monkeypatch, capsys):
    toml = toml_for(tmp_path, ADDRS)
    # This process plays the running peer, holding its results file open.
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(lost / "pages.duckdb")],
                          stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
            code, out, err = run_main(monkeypatch, capsys, [str(lost), "--ring", str(toml)],
                                      {"p1": "alive", "p2": "alive", "p3": "dead"})
        finally:
            holder.kill()
    assert code == 2 and out == ""
    assert err == f"error: {lost / 'pages.duckdb'}: is held open by a running process " \
                  f"(PID {holder.pid}): is p3 still running? adopt only a dead peer's data; " \
                  "stop it first\n"


def test_unacked_batches_at_the_timeout_are_listed_and_exit_1(tmp_path, lost, monkeypatch, capsys):
    port = free_ports(1)[0]  # nothing listens there: no ack ever comes
    addrs = {"p1": f"tcp://127.0.0.1:{port}", "p3": ADDRS["p3"]}
    toml = toml_for(tmp_path, addrs)
    monkeypatch.setattr(adopt_core, "ring_status", status_of(addrs, {"p1": "alive", "p3": "dead"}))
    code = adopt_core.main([str(lost), "--ring", str(toml), "--timeout", "0.8"])
    out, err = capsys.readouterr()
    assert code == 1
    # Seen URLs go first and wait in one unacked batch; the queued URLs never left.
    assert err == "error: not acked within 0.8s: p1: 79 URLs and 28 seen URLs not acked (unacked " \
                  "batches: 1); run adopt.py again when the ring is reachable (owners dedupe what " \
                  "they already took)\n"
    assert out.startswith("p3: adopted: 0 queued URLs and 0 fetched URLs")


# -- delivery against fake owners -----------------------------------------------------


class FakeOwner:
    """A peer's ROUTER that records adoption batches and acks them (unless ``mute``)."""

    def __init__(self, peer_id: str, mute: bool = False) -> None:
        self.peer_id = peer_id
        self.mute = mute
        self.batches: list[UrlBatch] = []
        self.address = ""

    async def serve(self, task_status=trio.TASK_STATUS_IGNORED) -> None:  # type: ignore[no-untyped-def]
        async with open_socket(SocketType.ROUTER, identity=self.peer_id.encode()) as sock:
            self.address = sock.bind("tcp://127.0.0.1:*")
            task_status.started()
            while True:
                ident, data = await sock.recv_multipart()
                batch = decode(data)
                assert isinstance(batch, UrlBatch) and batch.sender == "adopt:p3"
                self.batches.append(batch)
                if not self.mute:
                    ack = Ack(RING, self.peer_id, batch.epoch, batch.seq)
                    await sock.send_multipart([ident, encode(ack)])

    def urls(self) -> list[str]:
        return [url for b in self.batches for url, _ in b.urls]

    def seen(self) -> list[str]:
        return [url for b in self.batches for url in b.seen]


async def test_an_owner_that_vanishes_has_its_batches_rerouted_to_the_new_owner(tmp_path, monkeypatch):
    monkeypatch.setattr(adopt_core, "RESEND_AFTER", 0.3)
    monkeypatch.setattr(adopt_core, "STATUS_EVERY", 0.3)
    many = [(f"http://h{i}.test/x/{j}", 1) for i in range(40) for j in range(30)]
    lost = write_lost_peer(tmp_path / "p3", "p3", snapshot_queued=many,
                           pages=[f"http://h{i}.test/done" for i in range(40)])
    good, gone = FakeOwner("p1"), FakeOwner("p2", mute=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(good.serve)
        await nursery.start(gone.serve)
        addrs = {"p1": good.address, "p2": gone.address, "p3": ADDRS["p3"]}
        cfg = load_config(toml_for(tmp_path, addrs))
        calls = []

        async def status(cfg, timeout=1.5):  # type: ignore[no-untyped-def]
            calls.append(timeout)
            states = {"p1": "alive", "p2": "alive" if len(calls) == 1 else "dead", "p3": "dead"}
            return [row(p, addrs[p], s) for p, s in states.items()]

        with trio.fail_after(20):
            summary = await adopt(cfg, lost, timeout=15, batch_size=100, status=status)
        nursery.cancel_scope.cancel()

    assert summary.complete, summary.unacked
    assert summary.ring_changes == 1 and summary.resends >= 1
    assert summary.urls == {"p1": len(many)} and summary.seen == {"p1": 40}
    assert set(good.urls()) == {u for u, _ in many}
    assert set(good.seen()) == {f"http://h{i}.test/done" for i in range(40)}
    assert gone.urls() == []  # the URL phase starts only after every seen URL is acked
    # Every seen batch reached p1 before its first URL batch.
    kinds = [bool(b.seen) for b in good.batches]
    assert kinds == sorted(kinds, reverse=True)
    assert len(gone.seen()) > 0  # p2 got its share first, and never acked it


# -- end to end: two live peers of three, a lost p3 --------------------------------------


async def run(*argv: str) -> subprocess.CompletedProcess:
    return await trio.run_process([sys.executable, *argv], cwd=ROOT, capture_stdout=True,
                                  capture_stderr=True, check=False)


async def test_a_dead_peers_frontier_is_adopted_fetched_once_and_its_fetched_urls_never(tmp_path):
    # The live web answers slowly until the adoption is over, so the live
    # crawl (and with it the peers) is still running when adopt.py sends.
    # The lost web answers at once.
    web = SiteGraph(hosts=3, pages_per_host=8, shop=False)
    lost_web = SiteGraph(seed=7, hosts=3, pages_per_host=6, shop=False)
    gate = {"held": True}
    slow = HostBehaviour(latency=lambda _t: 1.5 if gate["held"] else 0.0)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(partial(serve_webfarm, web, behaviours={"*": slow}))
        lost_farm = await nursery.start(serve_webfarm, lost_web)
        lp = lost_farm.port

        def L(host: int, path: str) -> str:
            return f"http://s{host:03d}.web.test:{lp}{path}"

        queued = [(L(1, "/"), 0), (L(3, "/"), 1), (L(2, "/c0/p1.html"), 2)]
        forwards = [(L(2, "/"), 1), (L(3, "/c0/p3.html"), 2)]
        seen_rows = [L(1, "/c0/"), L(1, "/c0/p1.html"), L(1, "/c0/p2.html")]
        journal_row = L(2, "/c0/p4.html")
        adopted = [u for u, _ in queued + forwards]
        seen = seen_rows + [journal_row]
        reachable = lost_web.expected_urls(lp, seeds=adopted)
        assert set(adopted) <= reachable and set(seen) <= reachable  # or the test proves nothing

        # p3 is gone for good: no start-up grace for it (ring.seed_grace).
        text = cluster_text(tmp_path, farm.port, 3).replace(
            "dead_after = 3.0", "dead_after = 2.0\nseed_grace = 0.0")
        async with Ring(tmp_path, text) as ring:
            write_lost_peer(tmp_path / "p3", "p3", snapshot_queued=queued[:1],
                            journal_queued=[*queued[1:], (L(1, "/c0/p2.html"), 1)],
                            snapshot_forwards=forwards[:1], journal_forwards=forwards[1:],
                            journal_done=[journal_row], pages=seen_rows)
            cfg = load_config(ring.toml)
            try:
                with trio.fail_after(90):
                    for p in ("p1", "p2"):
                        await ring.start_in_process(nursery, p)
                    # What `python -m ring status --json` prints, without a process per poll.
                    while True:
                        rows = await adopt_core.ring_status(cfg, 1.0)
                        if rows and {r.id: r.state for r in rows}.get("p3") == "dead":
                            break
                        await trio.sleep(0.2)
                    assert all(ring.procs[p].returncode is None for p in ("p1", "p2")), \
                        f"the live crawl ended before the adoption; slow it down\n{ring.tails()}"
                    res = await run("scripts/adopt.py", str(tmp_path / "p3"), "--ring", str(ring.toml),
                                    "--json")
                    gate["held"] = False
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert res.returncode == 0, (res.stdout, res.stderr, tails)
    summary = json.loads(res.stdout)
    assert codes == {"p1": 0, "p2": 0}, tails

    # The lost web's log is the judge: adopted pages fetched once, pages the
    # lost peer had fetched never again, nothing twice.
    got = fetched(lost_farm, lp)
    assert {url: got[url] for url in adopted} == dict.fromkeys(adopted, 1)
    assert not {url for url in seen if got[url]}, "a URL the lost peer had fetched was fetched again"
    assert set(got) <= reachable
    twice = {url: n for url, n in got.items() if n > 1}
    assert not twice, f"fetched twice: {list(twice)[:5]}"

    # The routing and the summary: each URL went to the owner of its host in
    # the ring {p1, p2}, which fetched it.
    ring2 = HashRing({"p1": 1.0, "p2": 1.0}, vnodes=cfg.ring.vnodes)
    want_urls: dict[str, int] = {}
    for url in adopted:
        want_urls[ring2.owner(host_key(url))] = want_urls.get(ring2.owner(host_key(url)), 0) + 1
    want_seen: dict[str, int] = {}
    for url in seen:
        want_seen[ring2.owner(host_key(url))] = want_seen.get(ring2.owner(host_key(url)), 0) + 1
    assert summary["complete"] and summary["unacked"] == {}
    assert (summary["urls"], summary["seen"]) == (want_urls, want_seen), summary
    assert summary["already_fetched"] == 1 and summary["rows_restored"] == 1
    assert summary["batches"] == len(want_urls) + len(want_seen)
    by_peer = {}
    for p in ("p1", "p2"):
        with duckdb.connect(str(tmp_path / p / "pages.duckdb"), read_only=True) as con:
            by_peer.update({url: p for (url,) in con.execute("select url from pages").fetchall()})
    assert {url: by_peer.get(url) for url in adopted} == {url: ring2.owner(host_key(url)) for url in adopted}

    # The live crawl lost nothing either, and p3's journal-only row is back in its file.
    live = fetched(farm, farm.port)
    assert set(live) == web.expected_urls(farm.port)
    assert max(live.values()) == 1
    with duckdb.connect(str(tmp_path / "p3" / "pages.duckdb"), read_only=True) as con:
        rows = con.execute("select url, peer from pages order by url").fetchall()
    assert sorted(rows) == sorted([(url, "p3") for url in seen])


# -- the lost peer's hosts' state (peer/core/handoff/state.py) ------------------------


class FakeStateOwner(FakeOwner):
    """A FakeOwner that also takes hosts' state (acked, unless ``mute``) and notes the order."""

    def __init__(self, peer_id: str, mute: bool = False) -> None:
        super().__init__(peer_id, mute)
        self.states: list = []
        self.order: list[str] = []

    async def serve(self, task_status=trio.TASK_STATUS_IGNORED) -> None:  # type: ignore[no-untyped-def]
        from ring.messages import HostState, HostStateAck

        async with open_socket(SocketType.ROUTER, identity=self.peer_id.encode()) as sock:
            self.address = sock.bind("tcp://127.0.0.1:*")
            task_status.started()
            while True:
                ident, data = await sock.recv_multipart()
                msg = decode(data)
                assert msg.sender == "adopt:p3"
                if isinstance(msg, HostState):
                    self.order.append("state")
                    self.states.append(msg)
                    ack = HostStateAck(RING, self.peer_id, msg.epoch, msg.seq)
                else:
                    self.order.append("seen" if msg.seen else "urls")
                    self.batches.append(msg)
                    ack = Ack(RING, self.peer_id, msg.epoch, msg.seq)
                if not self.mute:
                    await sock.send_multipart([ident, encode(ack)])


def with_state(data_dir: Path, peer_id: str, visits: Sequence[str], cookie_hosts: Sequence[str]) -> None:
    """The fetches rows of a continuous crawl and a cookie jar's file, as the peer leaves them."""
    from peer.state.cookiefile import write_cookies

    con = duckdb.connect(str(data_dir / "pages.duckdb"))
    try:
        cols = SCHEMA["fetches"]
        con.execute("CREATE TABLE fetches (" + ", ".join(f"{n} {t}" for n, t in cols) + ")")
        for url in visits:
            con.execute("INSERT INTO fetches (url, host, fetched_at, kind, status, etag, interval_after, next_due, "
                        "changed, peer) VALUES (?, ?, ?, 'new', 200, '\"e1\"', 60.0, ?, false, ?)",
                        [url, host_key(url), datetime(2025, 3, 1, 12, 0, 0), datetime(2025, 3, 1, 12, 1, 0),
                         peer_id])
    finally:
        con.close()
    write_cookies(data_dir / "state", peer_id, [[h, "sid", f"s-{h}", "/", False, None, i]
                                                for i, h in enumerate(cookie_hosts)])


async def test_a_dead_peers_hosts_state_goes_to_their_owners_acked_before_its_urls(tmp_path):
    pages = [u("d", i) for i in range(5)] + [u("f", i) for i in range(5)]
    lost = write_lost_peer(tmp_path / "p3", "p3", snapshot_queued=QUEUED[:10], pages=pages)
    with_state(lost, "p3", pages, ["d.test", "f.test"])
    owners = {"p1": FakeStateOwner("p1"), "p2": FakeStateOwner("p2")}
    async with trio.open_nursery() as nursery:
        for o in owners.values():
            await nursery.start(o.serve)
        addrs = {"p1": owners["p1"].address, "p2": owners["p2"].address, "p3": ADDRS["p3"]}
        cfg = load_config(toml_for(tmp_path, addrs))
        with trio.fail_after(20):
            summary = await adopt(cfg, lost, timeout=15, status=status_of(addrs, {"p1": "alive", "p2": "alive",
                                                                                  "p3": "dead"}))
        nursery.cancel_scope.cancel()
    assert summary.complete, summary.unacked
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    for pid, o in owners.items():
        got = {r[0]: r for m in o.states for r in m.revisits}
        # Each page's schedule went to its host's owner: due when it was, with its validator.
        assert set(got) == {p for p in pages if ring.owner(host_key(p)) == pid}
        assert all(r[6] == '"e1"' and r[2] - r[4] == 60.0 for r in got.values())
        cookies = {c[0] for m in o.states for c in m.cookies}
        assert cookies == {h for h in ("d.test", "f.test") if ring.owner(h) == pid}
        # The state first, acked, then the seen URLs, then the queued ones.
        assert o.order == sorted(o.order, key=["state", "seen", "urls"].index), o.order
    assert summary.state == {pid: sum(len(m.revisits) + len(m.cookies) for m in o.states)
                             for pid, o in owners.items() if o.states}
    assert "its hosts' state: 12 revisit records and cookies acked" in "\n".join(summary.lines())
