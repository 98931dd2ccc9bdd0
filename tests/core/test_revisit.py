"""Continuous crawling's cores: revisit intervals, the due queue, the host's budget mix, on simulated time.

peer.core.revisit.policy (intervals, changes, validators), peer.core.revisit.duequeue,
peer.core.revisit.hostmix and the ``[revisit]`` section, peer.core.config.revisit;
the schedule that composes them (peer.core.revisit.recrawl) is tested in
tests/e2e/test_recrawl.py with a crawl that uses it.

The fetches table they are restored from is tested in tests/edges/test_fetches.py.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from localweb.sims.changes import HOST, SimSpec, simulate
from localweb.judges.politeness import ceiling, worst
from peer.core.frontier.spillqueue import MemorySpill
from peer.core.revisit.duequeue import DueQueue
from peer.core.revisit.hostmix import HostMix, Kind
from peer.core.revisit.policy import (
    Change,
    RevisitConfig,
    RevisitState,
    after_visit,
    classify,
    conditional_headers,
    first_visit,
    on_sitemap,
    seed_interval,
)
from peer.core.sitemaps.document import ChangeFreq
from peer.core.sitemaps.hints import UrlHints

H = 3600.0
CFG = RevisitConfig(enabled=True, min_interval=60.0, max_interval=10 * H, initial_interval=H, jitter=0.0)
LM = "Wed, 21 Oct 2015 07:28:00 GMT"


def _state(url: str = "http://a.test/p", due: float = 0.0, host: str = "a.test", **kw: object) -> RevisitState:
    return RevisitState(url=url, host=host, due=due, interval=kw.pop("interval", H), **kw)  # type: ignore[arg-type]


def _visit(state: RevisitState, now: float, status: int | None = 200, digest: str | None = "d1",
           etag: str | None = None, lm: str | None = None, cfg: RevisitConfig = CFG,
           seed: int = 0) -> tuple[RevisitState, Change]:
    res = after_visit(state, now, status, digest, etag, lm, cfg, random.Random(seed))
    return res.state, res.change


# ---------------------------------------------------------------------------
# Intervals


def test_interval_shrinks_on_change_and_grows_when_unchanged_within_the_clamps() -> None:
    s, change = _visit(_state(), 0.0, digest="v0")
    assert change is Change.FIRST and s.interval == H and s.due == H and s.visits == 1
    s, change = _visit(s, s.due, digest="v1")
    assert change is Change.CHANGED and s.interval == H * 0.5 and s.changes == 1
    s, change = _visit(s, s.due, digest="v1")
    assert change is Change.UNCHANGED and s.interval == H * 0.5 * 1.5 and s.changes == 1
    # Changing at every visit: down to min_interval and no further.
    for k in range(20):
        s, _ = _visit(s, s.due, digest=f"x{k}")
    assert s.interval == CFG.min_interval and s.due == (s.last_visit or 0.0) + CFG.min_interval
    # Never changing: up to max_interval and no further.
    for _ in range(30):
        s, change = _visit(s, s.due, digest="same")
    assert change is Change.UNCHANGED and s.interval == CFG.max_interval
    assert s.visits == 53


def test_304_is_unchanged_keeps_the_digest_and_takes_new_validators() -> None:
    s, _ = _visit(_state(), 0.0, digest="v0", etag='"e1"', lm=LM)
    s2, change = _visit(s, s.due, status=304, digest=None, etag=None, lm=None)
    assert change is Change.NOT_MODIFIED and s2.interval == H * 1.5
    assert (s2.digest, s2.etag, s2.last_modified) == ("v0", '"e1"', LM)
    s3, _ = _visit(s2, s2.due, status=304, digest=None, etag='W/"e2"')
    assert s3.etag == 'W/"e2"' and s3.digest == "v0"


def test_failures_keep_the_interval_and_gone_pages_wait_the_longest() -> None:
    s, _ = _visit(_state(interval=2 * H), 0.0, digest="v0")
    for status in (None, 429, 500, 503):
        f, change = _visit(s, 10.0, status=status, digest=None)
        assert change is Change.FAILED and f.interval == 2 * H and f.due == 10.0 + 2 * H
        assert (f.visits, f.digest, f.last_visit) == (1, "v0", 0.0)
    f, change = _visit(s, 10.0, status=200, digest=None)   # an answer without a payload to compare
    assert change is Change.FAILED and f.interval == 2 * H
    g, change = _visit(s, 10.0, status=410, digest="gone page")
    assert change is Change.GONE and g.interval == CFG.max_interval and g.digest is None


@pytest.mark.parametrize(("status", "digest", "previous", "expected"), [
    (304, None, "a", Change.NOT_MODIFIED), (200, "a", "a", Change.UNCHANGED), (200, "b", "a", Change.CHANGED),
    (200, "a", None, Change.FIRST), (301, "loc", "loc", Change.UNCHANGED), (403, "x", "y", Change.CHANGED),
    (404, "x", "x", Change.GONE), (410, None, "x", Change.GONE), (None, None, "a", Change.FAILED),
    (429, "a", "a", Change.FAILED), (502, "b", "a", Change.FAILED), (99, "a", "a", Change.FAILED),
])
def test_classify(status: int | None, digest: str | None, previous: str | None, expected: Change) -> None:
    assert classify(status, digest, previous) is expected


def test_jitter_spreads_due_times_within_its_bound_and_is_seeded() -> None:
    cfg = RevisitConfig(min_interval=60.0, max_interval=10 * H, initial_interval=H, jitter=0.1)
    rng = random.Random(7)
    dues = [after_visit(_state(url=f"http://a.test/{i}"), 0.0, 200, "d", None, None, cfg, rng).state.due
            for i in range(200)]
    assert all(0.9 * H <= d <= 1.1 * H for d in dues)
    assert len(set(dues)) == 200 and max(dues) - min(dues) > 0.15 * H
    again = random.Random(7)
    assert dues[0] == after_visit(_state(), 0.0, 200, "d", None, None, cfg, again).state.due


def test_config_refuses_bad_values_with_the_key_named() -> None:
    with pytest.raises(ValueError, match=r"\[revisit\] max_interval must be >= min_interval"):
        RevisitConfig(min_interval=100.0, max_interval=10.0)
    with pytest.raises(ValueError, match="revisit_share must be a number within 0.0-1.0"):
        RevisitConfig(revisit_share=1.5)
    with pytest.raises(ValueError, match="dec_factor"):
        RevisitConfig(dec_factor=1.0)
    with pytest.raises(ValueError, match="inc_factor"):
        RevisitConfig(inc_factor=math.nan)
    assert RevisitConfig().enabled is False


# ---------------------------------------------------------------------------
# Sitemaps


@pytest.mark.parametrize(("freq", "seconds"), [
    (ChangeFreq.ALWAYS, 60.0), (ChangeFreq.HOURLY, H), (ChangeFreq.DAILY, 10 * H),
    (ChangeFreq.WEEKLY, 10 * H), (ChangeFreq.NEVER, 10 * H), (None, H),
])
def test_changefreq_seeds_the_first_interval_clamped(freq: ChangeFreq | None, seconds: float) -> None:
    hints = UrlHints(changefreq=freq)
    assert seed_interval(hints, CFG) == seconds
    s = first_visit("http://a.test/p", "a.test", 5.0, hints, CFG)
    assert (s.due, s.interval, s.visits) == (5.0, seconds, 0)
    wide = RevisitConfig(min_interval=1.0, max_interval=400 * 86400.0)
    assert seed_interval(UrlHints(changefreq=ChangeFreq.DAILY), wide) == 86400.0
    assert seed_interval(UrlHints(changefreq=ChangeFreq.YEARLY), wide) == 365 * 86400.0
    assert seed_interval(None, wide) == wide.initial_interval


def test_a_newer_lastmod_makes_a_url_due_now_but_not_before_min_interval() -> None:
    s, _ = _visit(_state(), 1000.0, digest="v0")
    assert s.due == 1000.0 + H
    assert on_sitemap(s, UrlHints(lastmod=1500.0), 2000.0, CFG).due == 2000.0
    assert on_sitemap(s, UrlHints(lastmod=900.0), 2000.0, CFG) is s          # older than our visit
    assert on_sitemap(s, UrlHints(changefreq=ChangeFreq.HOURLY), 2000.0, CFG) is s
    assert on_sitemap(s, UrlHints(lastmod=5000.0), 2000.0, CFG) is s         # in the future: ignored
    # A lastmod of "just now", right after our visit: due min_interval after it, not at once.
    assert on_sitemap(s, UrlHints(lastmod=1010.0), 1020.0, CFG).due == 1000.0 + CFG.min_interval
    never = _state()
    assert on_sitemap(never, UrlHints(lastmod=10.0), 20.0, CFG) is never      # never visited: already due


# ---------------------------------------------------------------------------
# Conditional GETs


def test_conditional_headers_send_the_validators_the_etag_first() -> None:
    assert conditional_headers(_state()) == ()
    s, _ = _visit(_state(), 0.0, etag='"abc"', lm=LM)
    assert conditional_headers(s) == (("If-None-Match", '"abc"'), ("If-Modified-Since", LM))
    s, _ = _visit(_state(), 0.0, lm=LM)
    assert conditional_headers(s) == (("If-Modified-Since", LM),)
    s, _ = _visit(_state(), 0.0, etag='W/"x"')
    assert conditional_headers(s) == (("If-None-Match", 'W/"x"'),)


@pytest.mark.parametrize(("etag", "lm"), [
    ("abc", "yesterday"),                       # an unquoted ETag; not a date
    ('"a"\r\nSet-Cookie: x=1', LM + "\r\nX: y"),  # header injection
    ('"' + "a" * 300 + '"', LM + " " * 300),      # over max_validator_length
    ('"a"b"', ""),
])
def test_hostile_validators_are_dropped_and_counted(etag: str, lm: str) -> None:
    res = after_visit(_state(), 0.0, 200, "d", etag, lm, CFG, random.Random(0))
    assert res.state.etag is None and res.state.last_modified is None and res.dropped == 2
    assert conditional_headers(res.state) == ()


@settings(max_examples=300, deadline=None)
@given(status=st.one_of(st.none(), st.integers(-1000, 1000)), etag=st.one_of(st.none(), st.text(max_size=300)),
       lm=st.one_of(st.none(), st.text(max_size=300)))
def test_any_answer_is_taken_without_raising_and_sends_back_nothing_unsafe(
        status: int | None, etag: str | None, lm: str | None) -> None:
    res = after_visit(_state(), 0.0, status, "d", etag, lm, CFG, random.Random(0))
    for name, value in conditional_headers(res.state):
        assert value.isprintable() and value.isascii() or name == "If-None-Match"
        assert "\r" not in value and "\n" not in value and len(value) <= CFG.max_validator_length
    assert CFG.min_interval <= res.state.interval <= CFG.max_interval


# ---------------------------------------------------------------------------
# The due queue


def test_due_queue_pops_in_due_order_and_counts_the_overdue() -> None:
    q = DueQueue(now=0.0)
    for i, due in enumerate([50.0, 10.0, 30.0, 20.0, 40.0]):
        q.schedule(_state(url=f"http://a.test/{i}", due=due))
    q.schedule(_state(url="http://b.test/0", host="b.test", due=25.0))
    assert (len(q), q.overdue, q.next_due()) == (6, 0, 10.0)
    assert q.pop("a.test") is None
    assert q.advance(30.0) == ["a.test", "b.test"]
    assert (q.overdue, q.due_count("a.test"), q.due_count("b.test")) == (4, 3, 1)
    assert sorted(q.hosts_due()) == ["a.test", "b.test"]
    assert [q.pop("a.test").due for _ in range(3)] == [10.0, 20.0, 30.0]  # type: ignore[union-attr]
    assert q.pop("a.test") is None and q.overdue == 1 and q.next_due() == 40.0
    assert q.advance(29.0) == [] and q.now == 30.0                       # time never goes back
    assert q.advance(100.0) == ["a.test"] and q.overdue == 3 and q.next_due() is None
    assert [q.pop("a.test").due for _ in range(2)] == [40.0, 50.0]       # type: ignore[union-attr]
    assert q.pop("b.test").url == "http://b.test/0"                      # type: ignore[union-attr]
    assert (len(q), q.overdue, q.host_count()) == (0, 0, 0)


def test_due_queue_rescheduling_replaces_the_record() -> None:
    q = DueQueue(now=0.0)
    a = _state(url="http://a.test/x", due=50.0)
    b = _state(url="http://a.test/x", due=90.0)
    q.schedule(a)
    q.schedule(b)
    q.schedule(a)               # back to the first due time: one record, never two
    assert len(q) == 1 and q.get("http://a.test/x", "a.test") is a
    q.advance(60.0)
    assert q.overdue == 1 and q.pop("a.test") is a and q.pop("a.test") is None and q.overdue == 0
    # A due record made later leaves the overdue count; made due now, enters it.
    q.schedule(_state(url="http://a.test/y", due=10.0))
    assert q.overdue == 1
    q.schedule(_state(url="http://a.test/y", due=200.0))
    assert q.overdue == 0 and q.due_count("a.test") == 0 and q.next_due() == 200.0
    assert q.discard("http://a.test/y", "a.test") is not None and len(q) == 0 and q.next_due() is None


def test_due_queue_hands_a_host_over_to_another_peer() -> None:
    old, new = DueQueue(now=0.0), DueQueue(now=0.0)
    for i in range(10):
        old.schedule(_state(url=f"http://a.test/{i}", due=float(10 * i + 5)))
        old.schedule(_state(url=f"http://b.test/{i}", host="b.test", due=float(10 * i + 5)))
    old.advance(50.0)
    assert old.overdue == 10
    moved = old.export_host("a.test")
    assert [s.due for s in moved] == [float(10 * i + 5) for i in range(10)]
    assert (len(old), old.overdue, old.due_count("a.test"), old.export_host("a.test")) == (10, 5, 0, [])
    assert old.pop("a.test") is None
    new.import_records(moved)
    assert new.advance(50.0) == ["a.test"] and new.overdue == 5 and len(new) == 10
    assert new.pop("a.test") == moved[0]
    # The old peer's stale host item is skipped: only b.test's records come due.
    assert old.advance(1000.0) == [] and old.overdue == 10 and old.due_count("b.test") == 10


def test_due_queue_keeps_far_records_on_disk_and_brings_each_back_before_it_is_due() -> None:
    """Rule 5: past the window a record is 8 bytes in RAM; every one still pops, in due order, on time."""
    q = DueQueue(now=0.0)
    store = MemorySpill()
    q.attach_far(store, 10.0, 0.0, block=64)
    for i in range(2000):
        host = f"h{i % 20}.test"
        q.schedule(_state(url=f"http://{host}/{i}", host=host, due=float(i % 1000) + 0.5))
    assert len(q) == 2000
    assert q.far > 1500, q.far_figures()                     # beyond 0 + 10 s and a bucket: on disk
    in_ram = sum(len(h.records) for h in q._hosts.values())
    assert in_ram == 2000 - q.far < 500
    popped: list[float] = []
    for t in range(1, 1002):
        q.advance(float(t))
        for host in list(q.hosts_due()):
            while (r := q.pop(host)) is not None:
                assert r.due <= t and t - r.due <= 1.0     # not late: popped at the first advance past it
                popped.append(r.due)
        assert sum(len(h.records) for h in q._hosts.values()) <= 2 * 2 * 10 * 2 + 64 + 2000 // 1000 * 40
    assert len(popped) == 2000 and len(q) == 0 and q.far == 0
    assert not store.hosts()                                 # every block taken back


def test_due_queue_exports_and_finds_a_host_s_records_on_disk() -> None:
    """Rule 5: one-URL questions and a hand-over see far records; a recalled record never loads twice."""
    q = DueQueue(now=0.0)
    store = MemorySpill()
    q.attach_far(store, 10.0, 0.0, block=8)
    for i in range(100):
        q.schedule(_state(url=f"http://a.test/{i}", host="a.test", due=100.0 + i))
        q.schedule(_state(url=f"http://b.test/{i}", host="b.test", due=100.0 + i))
    assert q.far == 200
    assert q.get("http://a.test/7", "a.test") == _state(url="http://a.test/7", host="a.test", due=107.0)
    assert q.far == 100                                      # a.test was recalled whole
    q.schedule(_state(url="http://a.test/7", host="a.test", due=500.0))   # replaces, one record
    moved = q.export_host("b.test")
    assert [s.due for s in moved] == [100.0 + i for i in range(100)] and q.far == 0
    assert len(q) == 100
    q.advance(1000.0)
    got = []
    while (r := q.pop("a.test")) is not None:
        got.append(r.url)
    assert sorted(got) == sorted(f"http://a.test/{i}" for i in range(100)) and q.pop("b.test") is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["sched", "pop", "adv", "drop", "export"]),
                          st.integers(0, 5), st.integers(0, 3), st.integers(0, 100)), max_size=120))
def test_due_queue_agrees_with_a_plain_model(ops: list[tuple[str, int, int, int]]) -> None:
    _agrees_with_a_plain_model(DueQueue(now=0.0), ops, far=None)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["sched", "pop", "adv", "drop", "export", "get"]),
                          st.integers(0, 5), st.integers(0, 3), st.integers(0, 100)), max_size=150),
       st.sampled_from([1.0, 7.0, 30.0]), st.integers(1, 4))
# A URL scheduled three times: its second record went to disk, the third recalled it
# into a pending heap and waited in the tail; reaching both, advance() pushed the
# tail's straight to ready and then moved the recalled twin there too: counted twice.
@example(ops=[("sched", 0, 0, 2), ("sched", 0, 0, 2), ("sched", 0, 0, 2), ("adv", 0, 0, 2)],
         window=1.0, block=2)
def test_due_queue_with_far_records_on_disk_agrees_with_a_plain_model(
        ops: list[tuple[str, int, int, int]], window: float, block: int) -> None:
    """Rule 5: the same answers with records beyond a window in a store, recalled and loaded back."""
    q = DueQueue(now=0.0)
    store = MemorySpill()
    q.attach_far(store, window, 0.0, block=block)
    _agrees_with_a_plain_model(q, ops, far=store)


def _agrees_with_a_plain_model(q: DueQueue, ops: list[tuple[str, int, int, int]],
                               far: MemorySpill | None) -> None:
    model: dict[str, RevisitState] = {}
    now = 0.0
    for op, u, h, x in ops:
        host = f"h{h}.test"
        url = f"http://{host}/{u}"
        if op == "sched":
            s = _state(url=url, host=host, due=float(x))
            q.schedule(s)
            model[url] = s
        elif op == "adv":
            now = max(now, float(x))
            q.advance(now)
        elif op == "pop":
            due = sorted((s.due, s.url) for s in model.values() if s.host == host and s.due <= now)
            got = q.pop(host)
            assert (got.due, got.url) == due[0] if due else got is None  # type: ignore[union-attr]
            if got is not None:
                del model[got.url]
        elif op == "get":
            got = q.get(url, host)
            assert got == model.get(url)
        elif op == "drop":
            assert (q.discard(url, host) is not None) == (model.pop(url, None) is not None)
        else:
            assert {s.url for s in q.export_host(host)} == {k for k, s in model.items() if s.host == host}
            model = {k: s for k, s in model.items() if s.host != host}
        assert len(q) == len(model)
        assert q.overdue == sum(s.due <= now for s in model.values())
        pending = [s.due for s in model.values() if s.due > now]
        if far is None:
            assert q.next_due() == (min(pending) if pending else None)
        else:
            # It may wake the driver early, to take a far bucket in; never late, never
            # at a time already past (the driver would spin).
            nd = q.next_due()
            assert nd is not None if pending else (nd is None or nd > now)
            assert nd is None or not pending or nd <= min(pending)
            # Records on disk are a subset of the blocks held (recalled ones stay, dead).
            assert q.far <= sum(b[1] for k in far.hosts() for b in far._q[k])


# ---------------------------------------------------------------------------
# The host's budget mix


@settings(max_examples=80, deadline=None)
@given(share=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 0.9, 1.0]),
       waiting=st.lists(st.sampled_from([(True, True), (True, False), (False, True), (False, False)]),
                        min_size=1, max_size=400))
def test_mix_shares_within_one_start_and_is_work_conserving(share: float,
                                                             waiting: list[tuple[bool, bool]]) -> None:
    mix = HostMix(share)
    both = revisits = 0
    for has_new, has_revisit in waiting:
        kind = mix.take("a.test", has_new, has_revisit)
        if not (has_new or has_revisit):
            assert kind is None
        elif not has_revisit:
            assert kind is Kind.NEW             # work-conserving: the one kind waiting goes
        elif not has_new:
            assert kind is Kind.REVISIT
        else:
            both += 1
            revisits += kind is Kind.REVISIT
            # Over every prefix of contested starts, within one start of the share.
            assert abs(revisits - share * both) <= 1.0 + 1e-9
    assert sum(mix.taken.values()) == sum(a or b for a, b in waiting)


def test_mix_interleaves_and_starves_neither() -> None:
    mix = HostMix(0.25)
    picks = "".join("R" if mix.take("h", True, True) is Kind.REVISIT else "N" for _ in range(12))
    assert picks.count("R") == 3 and "RR" not in picks and "NNNN" not in picks
    # An hour of revisits alone earns the new URLs no burst afterwards.
    for _ in range(3600):
        assert mix.take("h", False, True) is Kind.REVISIT
    after = [mix.take("h", True, True) for _ in range(8)]
    assert after.count(Kind.REVISIT) == 2
    other = HostMix(0.25)
    assert other.take("x", True, True) is Kind.NEW and other.credit("x") == 0.25
    other.forget("x")
    assert other.credit("x") == 0.0 and len(other) == 0
    with pytest.raises(ValueError, match="revisit_share"):
        HostMix(-0.1)


# ---------------------------------------------------------------------------
# A host simulated in virtual time


def test_simulated_host_changed_pages_are_revisited_more_and_the_pace_holds() -> None:
    spec = SimSpec()
    res = simulate(spec)
    fast, static = res.mean_visits("/fast/"), res.mean_visits("/static/")
    assert fast > 5 * static > 0, (fast, static)
    assert res.new_left == 0 and res.kinds[Kind.NEW] == spec.fast_pages + spec.static_pages + spec.new_pages
    assert res.changes[Change.NOT_MODIFIED] > 0 and res.changes[Change.UNCHANGED] > 0
    assert res.changes[Change.CHANGED] > 0
    starts = [r.start for r in res.requests]
    assert starts == sorted(starts) and {r.host for r in res.requests} == {HOST}
    per_s = 1.0 / spec.delay
    assert worst(starts, 1.0) <= ceiling(per_s, 1.0) and worst(starts, 5.0) <= ceiling(per_s, 5.0)
    assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= spec.delay - 1e-9
    # A static page's interval grew: it was visited far less often than the pace allows.
    assert static < spec.duration / spec.config.max_interval + 8


def test_simulated_host_shares_its_starts_while_new_urls_wait() -> None:
    spec = SimSpec(new_pages=2000, duration=600.0)
    res = simulate(spec)
    assert res.new_left > 0                          # the backlog outlasted the run
    n = len(res.requests)
    # New URLs waited the whole run, revisits nearly all of it: about half each.
    assert abs(res.kinds[Kind.REVISIT] - n * spec.config.revisit_share) <= 0.05 * n


# ---------------------------------------------------------------------------
# Pages never found, and the revisits line (peer.core.revisit.recrawl rules 4, 6)


def _recrawl():
    from peer.core.revisit.recrawl import Recrawl

    return Recrawl(RevisitConfig(enabled=True, min_interval=10.0, max_interval=100.0, initial_interval=10.0,
                                 jitter=0.0, revisit_share=1.0), random.Random(1))


def _revisit_all(rc, now: float, answers: dict[str, tuple[int | None, str | None]]) -> None:
    """Hand every due record and visit it with its answer (status, digest)."""
    handed = rc.feed(now)
    while handed:
        url, host, depth = handed[0]
        status, digest = answers[url]
        rc.visited(url, host, depth, now, status, digest, None, None)
        nxt = rc.started(url, host, _NoneQueued())
        handed = [nxt] if nxt else rc.feed(now)


class _NoneQueued:
    def host_queued(self, host: str) -> int:
        return 0


def test_a_404_to_the_first_visit_is_never_found_not_gone_and_is_not_revisited() -> None:
    rc = _recrawl()
    v = rc.visited("http://a.test/broken", "a.test", 1, 0.0, 404, "sha1:X", None, None)
    assert v.change is Change.MISSING and v.next_due is None
    v = rc.visited("http://a.test/p", "a.test", 1, 0.0, 200, "sha1:P", None, None)
    assert v.change is Change.FIRST
    # Ten max_intervals later the broken link was never asked again; the page was.
    for t in range(0, 1000, 10):
        _revisit_all(rc, float(t), {"http://a.test/p": (200, "sha1:P")})
    f = rc.figures()
    assert (f.never_found, f.gone, f.scheduled) == (1, 0, 1)
    assert f.visits_revisit > 10 and f.visits_new == 2
    # A page that was there and then answers 404 is gone, and stays scheduled (at max_interval).
    _revisit_all(rc, 2000.0, {"http://a.test/p": (404, None)})
    f = rc.figures()
    assert (f.gone, f.never_found, f.scheduled) == (1, 1, 1)


def test_the_revisits_line_adds_up() -> None:
    import re

    from peer.core.crawl.figures import revisits_line

    rc = _recrawl()
    rc.visited("http://a.test/gone", "a.test", 0, 0.0, 200, "sha1:G", None, None)
    rc.visited("http://a.test/same", "a.test", 0, 0.0, 200, "sha1:S", '"e"', None)
    rc.visited("http://a.test/moves", "a.test", 0, 0.0, 200, "sha1:M0", None, None)
    rc.visited("http://a.test/later", "a.test", 0, 0.0, 503, None, None, None)      # failed first visit
    rc.visited("http://a.test/broken", "a.test", 0, 0.0, 404, None, None, None)     # never found
    rc.visited("http://a.test/flaky", "a.test", 0, 0.0, None, None, None, None)     # no answer
    for k, t in enumerate((10.0, 25.0, 47.5, 80.0)):
        _revisit_all(rc, t, {"http://a.test/gone": (404 if k else 200, None if k else "sha1:G"),
                             "http://a.test/same": (304, None), "http://a.test/moves": (200, f"sha1:M{k + 1}"),
                             "http://a.test/later": (200, "sha1:L"), "http://a.test/flaky": (None, None)})
    f = rc.figures()
    line = revisits_line(f, "-")
    total = int(re.match(r"revisits: (\d+) ", line)[1])
    parts = re.search(r"\): (.*?); freshness", line)[1].split(", ")
    assert total == f.visits_revisit > 0
    assert sum(int(p.split(" ", 1)[0]) for p in parts) == total, line
    assert sum(f.revisit_parts.values()) == total
    # Every kind of answer came: the line names each, and the first visits apart.
    assert {"gone", "failed", "changed", "unchanged", "first answer"} <= {p.split(" ", 1)[1] for p in parts}, line
    assert "first visits 6" in line and "not revisited) 1" in line, line
