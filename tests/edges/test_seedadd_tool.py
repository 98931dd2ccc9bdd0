"""``python -m ring seed add``'s edges: the tool (ring.tools.seedadd: the input read as a stream and cut
into batches, what it prints, its exit statuses when the ring cannot be asked or the input is wrong),
and the counts in a peer's /metrics (peer.engine.metrics).

A ring that takes the batches is tests/e2e/test_seed_add.py's; the peer's judging, tests/core/test_seedadd.py's.
"""

from __future__ import annotations

import gzip
import itertools
from collections import Counter

from clirun import error_line, ring_main
from localweb.processes.peerrun import free_ports
from ring.messages import MAX_STR, SeedAddReply, SeedAddStatus
from ring.tools.seedadd import Batch, SeedAddRun, batches, format_run, open_lines


def toml(tmp_path) -> str:
    a, b = free_ports(2)  # nothing listens there
    path = tmp_path / "cluster.toml"
    path.write_text(f'[ring]\nname = "r"\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:{a}"\n'
                    f'[[peer]]\nid = "p2"\naddress = "tcp://127.0.0.1:{b}"\n'
                    '[crawl]\nseeds = ["http://a.web.test/"]\nseed_add_batch = 3\n')
    return str(path)


def test_lines_are_cut_by_the_cap_and_by_bytes_and_unreadable_ones_travel_as_a_count():
    raw = [b"http://a/\n", b"\xff\xfe\n", b"# c\r\n", b"", b"http://b/", b"x" * (MAX_STR + 1) + b"\n"]
    got = list(batches(raw, cap=3))
    assert got == [Batch(("http://a/", "# c"), 1, 1), Batch(("", "http://b/"), 1, 4)]
    assert [b.size for b in got] == [3, 3]
    by_bytes = list(batches([b"u" * 100] * 10, cap=1000, max_bytes=250))
    assert [len(b.lines) for b in by_bytes] == [3, 3, 3, 1] and by_bytes[1].first == 4


def test_batches_are_read_lazily_so_a_file_of_millions_costs_one_batch():
    endless = (f"http://h{i}.example/\n".encode() for i in itertools.count())
    first = next(batches(endless, cap=1000))
    assert len(first.lines) == 1000 and first.lines[-1] == "http://h999.example/"


def test_a_file_is_read_plain_or_gzip_by_its_magic_and_an_overlong_line_is_skipped_whole(tmp_path):
    text = b"http://a/\n" + b"y" * (3 * MAX_STR) + b"\nhttp://b/\n"
    (tmp_path / "plain.txt").write_bytes(text)
    (tmp_path / "packed.txt").write_bytes(gzip.compress(text))  # no .gz: the magic tells
    for name in ("plain.txt", "packed.txt"):
        assert list(open_lines(str(tmp_path / name))) == [b"http://a/\n", b"\xff", b"http://b/\n"]


def test_what_the_ring_took_is_printed_routed_refused_by_cause_and_skipped():
    run = SeedAddRun()
    run.took(SeedAddReply("r", "p1", 1, SeedAddStatus.ACKED,
                          (("queued", 2), ("forwarded", 5), ("scope", 3), ("invalid", 1), ("skipped", 1))),
             Batch(("x",) * 11, 1, 1))
    run.took(SeedAddReply("r", "p2", 2, SeedAddStatus.DURABLE, (("forwarded", 4),), 4), Batch(("y",) * 4, 0, 13))
    assert run.peers == Counter({"p1": 1, "p2": 1})
    text = format_run(run, "r")
    assert text.splitlines()[:4] == [
        "ring 'r' took 16 lines in 2 batches (by peer: p1 1, p2 1)",
        "  routed   11: queued 2, forwarded 9",
        "  refused  4: invalid 1, scope 3",
        "  skipped  1 (blank or # comment)"]
    assert "4 forwarded URLs of 1 batches were not yet acked" in text


def test_a_ring_that_does_not_answer_is_exit_1_and_says_nothing_was_taken(tmp_path):
    res = ring_main(["seed", "add", "http://a.web.test/", "--ring", toml(tmp_path), "--timeout", "0.3"])
    assert res.returncode == 1, res.stderr
    assert "no peer took the batch from line 1: p1 (no answer), p2 (no answer)" in res.stderr
    assert "the ring took 0 lines, not every line from line 1 on" in res.stderr
    assert "took 0 lines in 0 batches" in res.stdout


def test_a_users_mistake_is_one_line_and_exit_2(tmp_path):
    ring = toml(tmp_path)
    assert "give URLs or --file F" in error_line(ring_main(["seed", "add", "--ring", ring]))
    assert "give URLs or --file F" in error_line(ring_main(["seed", "add", "http://a/", "--file", "f",
                                                            "--ring", ring]))
    missing = str(tmp_path / "nothere.txt")
    assert error_line(ring_main(["seed", "add", "--file", missing, "--ring", ring])) == (
        f"error: {missing}: cannot be read (No such file or directory)")
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(b"http://a/\n" * 10)[:-12] + b"garbage!")
    # Found before any batch went (gzip reads ahead): the lines before a break would have gone first.
    line = error_line(ring_main(["seed", "add", "--file", str(broken), "--ring", ring, "--timeout", "0.2"]))
    assert line.startswith(f"error: {broken}: a broken gzip stream after line 0 (") and "took 0 lines" in line


def test_the_counts_are_a_metric_family():
    from peer.engine.metrics import families
    from tests.core.test_seedadd import TOOL, lines_of, peer, request

    p1 = peer()
    _, _, lines = lines_of(p1)
    p1.receive(TOOL, request(lines), 1.0, wall=0.0)
    figures = p1.figures
    scrape = figures.scrape(1.0, figures.status(1.0, elapsed=1.0, dns_hit_rate=1.0, limits={}), peer="p1",
                            ring="test", uptime=1.0, dns={}, dns_hit_ratio=1.0, warc={})
    m = {m.name: m for m in families(scrape)}["ringcrawl_seed_add_lines"]
    assert {s.labels["outcome"]: s.value for s in m.samples if s.name.endswith("_total")} == {
        "queued": 1, "forwarded": 1, "skipped": 2, "invalid": 2, "scope": 1}


async def test_a_window_of_n_has_n_batches_in_flight_and_a_busy_peer_is_asked_for_busy_for_seconds(
        monkeypatch, autojump_clock):
    import trio

    from ring.tools import seedadd
    from ring.tools.client import Contact

    flying, most, asked = 0, 0, Counter[str]()

    async def peer_answers(contact, request, timeout, keys=None):  # type: ignore[no-untyped-def]
        nonlocal flying, most
        asked[contact.id] += 1
        flying += 1
        most = max(most, flying)
        await trio.sleep(1.0)
        flying -= 1
        status = SeedAddStatus.BUSY if contact.id == "p1" else SeedAddStatus.ACKED
        return SeedAddReply("r", contact.id, request.nonce, status, (("queued", len(request.lines)),))

    monkeypatch.setattr(seedadd, "ask_seed_add", peer_answers)
    contacts = [Contact("p1", "tcp://127.0.0.1:1"), Contact("p2", "tcp://127.0.0.1:2")]
    source = [Batch(("http://a/",), 0, n) for n in range(1, 8)]
    start = trio.current_time()
    run = await seedadd.send_batches("r", contacts, source, 5.0, window=3, busy_for=4.0)
    assert most == 3 and run.taken_lines == 7 and run.peers == Counter({"p2": 7})
    # The first batches asked p1 for 4 s (a second an answer, 0.5 s between): 4 answers, then p2.
    assert asked["p1"] == 3 * 4 and trio.current_time() - start < 10.0


def test_window_and_busy_for_are_checked_as_a_users_mistake(tmp_path):
    ring = toml(tmp_path)
    assert error_line(ring_main(["seed", "add", "http://a/", "--ring", ring, "--window", "0"])) == (
        "error: --window: expected an integer from 1 to 64")
    assert error_line(ring_main(["seed", "add", "http://a/", "--ring", ring, "--busy-for", "inf"])) == (
        "error: --busy-for: expected a number of seconds from 0 to 3600")


def test_the_caps_hits_and_the_batches_not_taken_are_metric_families():
    from peer.engine.metrics import families
    from tests.core.test_seedadd import TOOL, configured, lines_of, request

    p1 = configured(seed_add_waiting=1)
    _, theirs, _ = lines_of(p1)
    p1.receive(TOOL, request([theirs], nonce=1), 1.0, wall=0.0)
    p1.receive(TOOL, request([theirs + "b"], nonce=2), 1.0, wall=0.0)  # busy: one batch waits
    figures = p1.figures
    scrape = figures.scrape(1.0, figures.status(1.0, elapsed=1.0, dns_hit_rate=1.0, limits={}), peer="p1",
                            ring="test", uptime=1.0, dns={}, dns_hit_ratio=1.0, warc={})
    by_name = {m.name: m for m in families(scrape)}
    assert {s.labels["cap"]: s.value for s in by_name["ringcrawl_seed_add_cap_hits"].samples
            if s.name.endswith("_total")} == {"seed_add_waiting": 1}
    assert {s.labels["why"]: s.value for s in by_name["ringcrawl_seed_add_batches_untaken"].samples
            if s.name.endswith("_total")} == {"busy": 1}
