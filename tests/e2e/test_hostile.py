"""Hostile input: what the web and the network may throw at a peer.

**From the web.** Pages and URLs are fuzzed with hypothesis on arbitrary text
(lone surrogates and controls included) and bytes: ``peer.core.urls.normalize`` raises only
:class:`~peer.errors.URLError`, ``peer.core.page.extract`` and ``peer.core.page.items`` never
raise, and what they return is normalised. Huge inputs (a 1 MB URL, 2 MiB
bodies of garbage, tag soup, 350k-deep nesting, ~190k anchors) finish, give
the documented answer and stay under a stated memory bound (tracemalloc sees
lexbor's allocations too: selectolax builds its tree with Python's
allocator). tests/core/test_urls.py and tests/core/test_extract.py fuzz each function
alone; this file checks that they agree with each other on any input.

**From the network.** Two real peers crawl the local web while the test,
from plain DEALERs (one with libzmq's anonymous route, two claiming member
routes), sends one of them garbage and truncated frames, unknown types and
versions, another ring's batch, a replayed batch, a member's batch on
another's route and a message with extra frames; ``ring status`` (its
client, asked during the crawl) shows each drop counted under its name.
Then four connections flood the same peer with 50 MB frames (over the
8 MiB frame limit) and garbage: its resident memory stays within 100 MB of
where it was, and it keeps gossiping and counting. The crawl must then
complete (every peer exits 0 by itself, every expected URL fetched once,
the other ring's URL never). The local web is slow on purpose while the
test attacks, so the crawl outlasts the attack on any machine.
"""

from __future__ import annotations

import functools
import random
import signal
import subprocess
import sys
import textwrap
import tomllib
import tracemalloc

import msgpack
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from ringharness import Ring, cluster_text, fetched, wait_pages
from localweb import HostBehaviour, SiteGraph, serve_webfarm

from peer.state.configfile import load_config
from peer.errors import URLError
from peer.core.page.extract import MAX_TITLE, Page, decode_html, is_html, parse_page, parse_tree
from peer.core.page.items import MAX_FIELD_TEXT, URL_ATTRS, ExtractConfig, Field, Rule, extract_items
from peer.core.urls.normalize import MAX_URL_LENGTH, host_key, join, normalize, normalize_link
from peer.core.urls.scope import Scope
from ring.tools.client import Contact, cluster_status
from ring.messages import MAX_FRAME, TYPE_CODES, VERSION, StatusRequest, UrlBatch, encode
from ring.io.zmqio import SocketType, member_route, open_socket

MiB = 1 << 20
PAGE = "http://example.test/dir/page.html"

# -- strategies ---------------------------------------------------------------

# Every code point, lone surrogates included (st.text() leaves them out).
ANY_CHAR = st.characters(exclude_categories=())
ANY_TEXT = st.text(ANY_CHAR, max_size=80)
URLISH = st.one_of(
    ANY_TEXT,
    ANY_TEXT.map(lambda t: "http://" + t),
    ANY_TEXT.map(lambda t: "https://a.example/" + t),
    st.lists(st.sampled_from(
        list(":/?#[]@%.\\ \t\x00\x7fhxtpsa1") + ["http://", "https://", "//", "%2", "%2e", "..",
                                             "::", "[::1]", "xn--", "\ud800", "ß", "。", "\u00ad",
                                             ":80", ":0", "@", "javascript:"]),
        max_size=30).map("".join),
)
BODY = st.one_of(
    st.binary(max_size=600),
    ANY_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(st.sampled_from([
        b"<a href=", b"<area href='", b"<base href=", b"'>", b"<title>", b"</title>", b"<h1>",
        b"<img src=", b"<meta name=robots content=nofollow>", b"<meta charset=", b"<!--", b"-->",
        b"<script>", b"<template>", b"&#xD800;", b"\xed\xa0\x80", b"\xff\xfe", b"\xef\xbb\xbf",
        b"http://[::1", b"//x.example/", b"../", b"mailto:", b"%zz", b" ", b"<", b">",
    ]) | st.binary(max_size=6), max_size=50).map(b"".join),
)
CHARSET = st.none() | st.sampled_from(["utf-8", "latin1", "utf-16", "shift_jis", "utf-7"]) | ANY_TEXT


def _authority(url: str) -> str:
    return url.split("/", 3)[2]


# -- URLs: the four entry points agree on any input ------------------------------


@settings(max_examples=300, deadline=None)
@given(base=URLISH, href=URLISH)
def test_join_normalize_link_and_host_key_agree_on_any_base_and_href(base, href):
    try:
        nbase = normalize(base)
    except URLError:
        nbase = None
    else:
        assert normalize(nbase) == nbase
        assert host_key(base) == host_key(nbase) == _authority(nbase)
    try:
        url = join(base, href)
    except URLError:
        assert normalize_link(base, href) is None
    else:
        assert normalize_link(base, href) == url
        assert nbase is not None  # nothing joins against a base that is not a URL
        assert normalize(url) == url
        assert url.isascii() and len(url) <= MAX_URL_LENGTH
        assert host_key(url) == _authority(url)
        assert Scope.from_seeds([url]).allows(url)


@settings(max_examples=300, deadline=None)
@given(url=URLISH)
def test_host_key_raises_only_url_error_and_keys_what_normalize_accepts(url):
    try:
        key = host_key(url)
    except URLError:
        key = None
    try:
        n = normalize(url)
    except URLError:
        return  # host_key may still accept it: its fast path checks the authority only
    assert key == _authority(n)


def test_a_one_megabyte_url_is_refused_everywhere():
    huge = "http://a.example/" + "x" * MiB
    for call in (normalize, host_key, lambda u: join(PAGE, u), lambda u: join(u, "/x")):
        with pytest.raises(URLError, match="too long"):
            call(huge)
    assert normalize_link(PAGE, huge) is None
    assert normalize_link(huge, "/x") is None
    assert not Scope(["*"]).allows(huge)
    # Inside a page: the link and the base are dropped, the rest stands.
    body = (f'<base href="{huge}"><title>{"t" * MiB}</title><a href="{huge}">x</a>'
            '<a href="/ok">ok</a>').encode()
    page = parse_page(PAGE, body)
    assert page.links == ("http://example.test/ok",)
    assert page.title == "t" * MAX_TITLE


# -- pages: parse_page, parse_tree and is_html on any bytes ------------------------


@settings(max_examples=300, deadline=None)
@given(url=URLISH, body=BODY, charset=CHARSET)
def test_any_body_gives_one_normalised_page_whether_parsed_once_or_twice(url, body, charset):
    page = parse_page(url, body, charset)
    assert isinstance(page, Page)
    assert page == parse_page(url, body, charset, tree=parse_tree(body, charset))
    assert page.n_links == len(page.links) == len(set(page.links))
    for link in page.links:
        assert normalize(link) == link
    if page.nofollow:
        assert page.links == ()
    if page.title is not None:
        page.title.encode("utf-8")  # no lone surrogate reaches the results file
    assert isinstance(decode_html(body, charset), str)


@settings(max_examples=200, deadline=None)
@given(ctype=ANY_TEXT, body=BODY)
def test_is_html_answers_a_bool_for_any_type_and_body(ctype, body):
    assert is_html(ctype, body) in (True, False)
    assert is_html("text/html; " + ctype, body) is True
    assert is_html("image/png", body) is False


# -- items: a fixed set of rules on any page -----------------------------------------

ITEMS = ExtractConfig((
    Rule("any", "*", (
        Field("h1", "h1"),
        Field("paras", "p", None, True),
        Field("cover", "img", "src"),
        Field("links", "a, area, link", "href", True),
        Field("titles", "[title]", "title", True),
        Field("action", "form", "action"),
    )),
    Rule("query", "re:\\?", (Field("base", "base", "href"),)),
))


URL_FIELDS = {f.name for r in ITEMS.rules for f in r.fields if f.attr in URL_ATTRS}


def _check_items(items: list, errors: list, page_url_is_normal: bool) -> None:
    assert errors == []
    assert [table for table, _ in items][:1] == ["items_any"]
    for _, row in items:
        for name, value in row.items():
            values = value if isinstance(value, list) else [value]
            for v in values:
                assert v is None or isinstance(v, str), (name, v)
                if v is None or name not in URL_FIELDS:
                    continue
                # Made absolute and normal, or kept as written, stripped. On a
                # normal page URL (and values far below MAX_URL_LENGTH, as
                # here), a kept value is one no URL can be made of.
                assert v == v.strip()
                if page_url_is_normal:
                    try:
                        assert normalize(v) == v
                    except URLError:
                        pass


@settings(max_examples=200, deadline=None)
@given(url=URLISH, body=BODY, charset=CHARSET)
def test_extract_items_never_raises_on_any_page(url, body, charset):
    try:
        normal = normalize(url) == url
    except URLError:
        normal = False
    html = decode_html(body, charset)
    items, errors = extract_items(ITEMS, url, html, parse_tree(body, charset))
    _check_items(items, errors, normal)
    again, errors = extract_items(ITEMS, url, html)  # parsing the text itself
    assert again == items and errors == []


@settings(max_examples=100, deadline=None)
@given(path=ANY_TEXT, body=BODY)
def test_extract_items_on_a_normal_page_url_gives_normal_urls(path, body):
    try:
        url = normalize("http://shop.example/" + path)
    except URLError:
        return
    items, errors = extract_items(ITEMS, url, decode_html(body, None), parse_tree(body))
    _check_items(items, errors, True)


# -- huge pages: they finish, and memory stays proportional to the body ----------------

#: Peak bytes traced while parsing, per byte of body. lexbor spends ~190 bytes
#: an element and the densest markup is 3 bytes an element (``<b>``), so
#: ~65x is the worst found; anything quadratic blows far past this.
PEAK_PER_BYTE = 96


def _fill(unit: bytes, size: int = 2 * MiB) -> bytes:
    return unit * (size // len(unit))


# Built when used: ~20 MiB of bodies need not live for the whole session.
HUGE_PAGES = {
    "random bytes": (lambda: random.Random(6).randbytes(2 * MiB), ()),
    "tag soup": (lambda: _fill(b"<"), ()),
    "formatting elements": (lambda: _fill(b"<b>"), ()),
    "350k-deep spans": (lambda: _fill(b"<span>", 2 * MiB - 40) + b"<a href=/deep>d</a>",
                        ("http://example.test/deep",)),
    "700k-deep unknown tags": (lambda: _fill(b"<x>", 2 * MiB - 40) + b"<a href=/deep>d</a>",
                               ("http://example.test/deep",)),
    "190k anchors": (lambda: _fill(b"<a href=/x>"), ("http://example.test/x",)),
    "one tag, 500k attributes": (lambda: b"<a " + _fill(b"x=1 ") + b"href=/y>",
                                 ("http://example.test/y",)),
    "a 2 MiB href": (lambda: b"<a href='" + _fill(b"&amp;") + b"'>", ()),
    "a 2 MiB title": (lambda: b"<title>" + _fill(b"ab ") + b"</title>", ()),
}


@pytest.mark.parametrize("name", HUGE_PAGES)
def test_a_2_mib_page_parses_in_memory_proportional_to_its_size(name):
    make, links = HUGE_PAGES[name]
    body = make()
    tracemalloc.start()
    try:
        page = parse_page(PAGE, body, None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert page.links == links
    assert page.title is None or len(page.title) == MAX_TITLE
    assert peak < PEAK_PER_BYTE * len(body), f"{peak / MiB:.0f} MiB for {len(body) / MiB:.1f} MiB"


def test_twenty_thousand_distinct_links_are_all_kept_and_normal():
    body = b"".join(b"<a href=/p%d>" % i for i in range(20_000))
    tracemalloc.start()
    try:
        page = parse_page(PAGE, body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert page.n_links == 20_000
    assert page.links[:2] == ("http://example.test/p0", "http://example.test/p1")
    assert peak < PEAK_PER_BYTE * len(body)


def test_items_of_a_deep_page_stay_proportional_to_its_size():
    body = _fill(b"<span>", MiB) + b"<h1>deep</h1><a href=/d title=t>d</a><img src=/i.png>"
    tree = parse_tree(body)
    tracemalloc.start()
    try:
        items, errors = extract_items(ITEMS, PAGE, "", tree)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert errors == []
    row = items[0][1]
    assert (row["h1"], row["cover"], row["links"], row["titles"]) == (
        "deep", "http://example.test/i.png", ["http://example.test/d"], ["t"])
    assert peak < PEAK_PER_BYTE * len(body)


def test_text_of_nested_matches_is_capped_in_memory_and_length():
    # 4,000 nested <span>: each match's text holds all its descendants', 8 M
    # characters in all if every one were kept.
    body = b"<span>x" * 4000
    cfg = ExtractConfig((Rule("r", "*", (Field("texts", "span", None, True),)),))
    tree = parse_tree(body)
    tracemalloc.start()
    try:
        items, _ = extract_items(cfg, PAGE, "", tree)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    texts = items[0][1]["texts"]
    assert 0 < len(texts) < 4000
    assert sum(map(len, texts)) <= MAX_FIELD_TEXT
    assert texts[0] == "x" * 4000  # the outermost match, whole
    assert peak < PEAK_PER_BYTE * len(body) + 4 * MAX_FIELD_TEXT + MiB


# The child process gets a CPU-time limit (RLIMIT_CPU: the kernel ends it with
# SIGXCPU, even inside C code, and load on the box does not count). Parsing
# this 0.5 MB page costs ~0.1 s of CPU when linear: 1 s (ten times that, in
# CPU seconds, which load does not stretch) is a hang guard.
_NESTED_DIVS = """
import resource
from peer.core.page.extract import parse_page

body = b"<div>" * 100_000 + b"<a href=/deep>d</a>"
used = resource.getrusage(resource.RUSAGE_SELF)
limit = int(used.ru_utime + used.ru_stime) + {budget}
resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
assert parse_page("http://x.test/", body).links == ("http://x.test/deep",)
"""


@pytest.mark.xfail(reason="lexbor's tree builder walks the stack of open elements on each "
                          "block start tag: 100k nested <div> take minutes (O(n^2)); Chromium "
                          "caps the depth at 512. The engine parses in a worker thread, so the "
                          "peer stays responsive, but that thread is busy that long",
                   strict=True)
def test_a_100k_deep_block_nesting_finishes():
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_NESTED_DIVS.format(budget=1))],
                          capture_output=True, timeout=120, check=False)
    over = " (SIGXCPU: over its CPU limit)" if done.returncode == -signal.SIGXCPU else ""
    assert done.returncode == 0, f"exit {done.returncode}{over}: {done.stderr[-2000:]!r}"


# -- from the network: garbage at a running peer's ROUTER -----------------------------


# Routing ids the hostile DEALERs use: libzmq's anonymous one (as a tool's),
# and member routes naming p1 and p2 (ring.io.zmqio.member_route), which anyone
# can claim on a ring without CurveZMQ.
ANON, AS_P1, AS_P2 = None, member_route("p1", "bad0"), member_route("p2", "bad0")


def _hostile_frames(port: int, replay: bytes, inscope: str) -> list[tuple[str, bytes | None, list[bytes]]]:
    """(drop counter, route, frames) of each hostile message the test sends."""
    evil = UrlBatch("otherring", "p1", 1, 0, ((f"http://s001.web.test:{port}/evil", 1),))
    unknown = max(TYPE_CODES) + 90
    assert unknown not in TYPE_CODES
    return [
        ("not_msgpack", ANON, [b"\xc1 this is not msgpack \x00\xff"]),
        ("not_msgpack", ANON, [replay[: len(replay) // 2]]),  # a valid frame cut short
        ("unknown_type", ANON, [msgpack.packb([VERSION, unknown, "test", "p2"])]),
        ("version", ANON, [msgpack.packb([VERSION + 1, 4, "test", "p2"])]),
        ("malformed", ANON, [msgpack.packb([VERSION, 4, "test"])]),  # a UrlBatch of three fields
        ("other_ring", AS_P1, [encode(evil)]),
        ("bad_frames", ANON, [encode(StatusRequest("test", "hostile", 7)), b"an extra frame"]),
        # A member's message on a route that is not that member's.
        ("route_spoof", ANON, [encode(UrlBatch("test", "p2", 1, 0, ((inscope, 1),)))]),
        ("route_spoof", AS_P1, [encode(UrlBatch("test", "p2", 1, 0, ((inscope, 1),)))]),
        ("replay", AS_P1, [replay]),  # the batch itself: the first copy is taken, the rest are replays
        ("replay", AS_P1, [replay]),
        # A live member's name with an epoch it never had: taken, it would
        # close p2's real channel and hang the crawl; it is refused.
        ("future_epoch", AS_P2, [encode(UrlBatch("test", "p2", 2**62, 0, ((inscope, 1),)))]),
    ]


async def _status(ring: Ring) -> list[dict] | None:
    """What ``python -m ring status --json`` lists as members (its client, in this process).

    tests/e2e/test_cli_ring.py checks that the command prints these rows, dropped counters included.
    """
    cfg = load_config(ring.toml)
    rows = await cluster_status(cfg.ring.name, [Contact(p.id, p.address) for p in cfg.peers])
    return None if rows is None else [r.as_json() for r in rows]


#: What a flood may add to a peer's resident memory (its receive queues are bounded).
FLOOD_RSS_BOUND = 100 * MiB
#: Server latency of every host but the seed's while the test sends garbage
#: and floods: the crawl (346 pages, 7 hosts, one fetch a host at a time)
#: cannot end before the test lets it, however loaded the machine; then the
#: latency goes and it ends in seconds. Far below the peers' 5 s fetch
#: timeout, so no fetch is retried. The seed's host answers at once, so the
#: crawl is under way (pages fetched, hosts forwarded) within a second.
HOLD_LATENCY = 1.0


def _rss(pid: int) -> int:
    """Resident set size of process ``pid`` in bytes (VmRSS of /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _p1_dropped(members: list[dict] | None) -> dict[str, int]:
    return {} if members is None else next(m for m in members if m["id"] == "p1")["drops"]


async def test_garbage_and_a_flood_at_a_peer_are_dropped_and_counted_memory_bounded_crawl_complete(tmp_path):
    """Two real peers crawl; p1's ROUTER gets every kind of garbage, then a flood.

    One pair of processes for both attacks (each had its own ring before):
    the garbage is counted under its names while the crawl runs, the flood
    leaves p1's RSS within FLOOD_RSS_BOUND, and the crawl then completes.
    """
    graph = SiteGraph(hosts=6, pages_per_host=30, shop=False)
    garbage_rounds = 3
    # Measured before the limits: ten 50 MB frames took a peer from 123 MB to
    # 883 MB RSS (zmq took frames up to 64 MiB, 1,000 of them queued per
    # connection). Now a frame over MAX_FRAME drops its connection unread,
    # and each connection queues at most recv_queue (16) messages. Each
    # round sends each connection 40 MiB of 1 MiB frames (2.5 x its queue)
    # and one 50 MB frame: an unbounded peer would hold the 4 x 2 x 90 MB
    # = 720 MB sent, seven times the bound.
    conns, flood_rounds = 4, 2
    oversized = b"\x00" * (50 * 1000 * 1000)  # sent by reference: pyzmq does not copy it
    rng = random.Random(6)
    flood_frames = [rng.randbytes(MiB) for _ in range(4)] + [rng.randbytes(100) for _ in range(4)]
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(functools.partial(
            serve_webfarm, graph, behaviours={"*": HostBehaviour(latency=HOLD_LATENCY),
                                              "s001.web.test": HostBehaviour()}))
        port = farm.port
        expected = graph.expected_urls(port)
        text = cluster_text(tmp_path, port, 2)
        target = tomllib.loads(text)["peer"][0]
        assert target["id"] == "p1"
        # The replayed batch names p1 itself as sender, a channel no real
        # member uses towards p1, with an epoch below p1's incarnation (a
        # later one is refused as forged: future_epoch).
        inscope = sorted(expected)[0]
        replay = encode(UrlBatch("test", "p1", 1, 0, ((inscope, 1),)))
        frames = _hostile_frames(port, replay, inscope)
        want = {}
        for name, _, _ in frames:
            want[name] = want.get(name, 0) + garbage_rounds
        want["replay"] -= 1  # the very first copy is accepted
        seen: list[dict] | None = None
        pages_at_status = 0
        samples: list[int] = []
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(120):
                    for p in ("p1", "p2"):
                        await ring.start(p)
                    await wait_pages(farm, 10)
                    pid = ring.procs["p1"].pid
                    # -- garbage, counted under its names during the crawl
                    async with open_socket(SocketType.DEALER, connect=target["address"]) as anon, \
                            open_socket(SocketType.DEALER, connect=target["address"], identity=AS_P1) as as_p1, \
                            open_socket(SocketType.DEALER, connect=target["address"], identity=AS_P2) as as_p2:
                        socks = {ANON: anon, AS_P1: as_p1, AS_P2: as_p2}
                        for _ in range(garbage_rounds):
                            for _, route, msg in frames:
                                await socks[route].send_multipart(msg)
                            await trio.sleep(0.3)
                        # Asked until p1 has counted it all (or the peers are
                        # gone: then the asserts below say what lacked).
                        while (members := await _status(ring)) is not None:
                            seen = members
                            pages_at_status = sum(fetched(farm, port).values())
                            if all(_p1_dropped(members).get(k, 0) >= n for k, n in want.items()):
                                break
                            await trio.sleep(0.2)
                    # -- the flood, p1's RSS sampled throughout
                    before = max(_rss(pid) for _ in range(3))

                    async def sample() -> None:
                        while True:
                            samples.append(_rss(pid))
                            await trio.sleep(0.02)

                    async def flood() -> None:
                        async with open_socket(SocketType.DEALER, connect=target["address"], hwm=100) as sock:
                            for _ in range(flood_rounds):
                                for _ in range(5):
                                    for g in flood_frames:
                                        with trio.move_on_after(2):
                                            await sock.send_multipart([g])
                                with trio.move_on_after(2):
                                    await sock.send_multipart([oversized])
                                await trio.sleep(0.2)  # zmq reconnects the dropped connection

                    async with trio.open_nursery() as floods:
                        floods.start_soon(sample)
                        async with trio.open_nursery() as senders:
                            for _ in range(conns):
                                senders.start_soon(flood)
                        await trio.sleep(1.0)  # what is queued is read
                        floods.cancel_scope.cancel()
                    after_flood = await _status(ring)
                    pages_after_flood = sum(fetched(farm, port).values())
                    # -- let the crawl end
                    farm.behaviours.clear()
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            outputs = {p: ring.output(p) for p in ring.procs}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert codes == {"p1": 0, "p2": 0}, tails
    for p, out in outputs.items():
        assert "crawl finished (cluster done)" in out, (p, out[-2000:])
    got = fetched(farm, port)
    assert f"http://s001.web.test:{port}/evil" not in got
    assert set(got) == expected, f"missing {sorted(expected - set(got))[:5]}"
    assert max(got.values()) == 1

    # The garbage: the status was taken mid-crawl, gossip went on (both
    # alive), and p1 counted each drop under its name.
    assert seen is not None, "no peer answered ring status during the crawl"
    assert pages_at_status < len(expected)
    assert sorted((m["id"], m["state"]) for m in seen) == [("p1", "alive"), ("p2", "alive")]
    dropped = _p1_dropped(seen)
    for name, n in want.items():
        assert dropped.get(name, 0) >= n, (name, dropped)

    # The flood: memory bounded, gossip kept up, and the garbage it read counted.
    growth = max(samples) - before
    print(f"p1 RSS {before / MiB:.0f} MiB before, at most {max(samples) / MiB:.0f} MiB during "
          f"the flood ({len(samples)} samples)")
    assert growth < FLOOD_RSS_BOUND, f"RSS grew by {growth / MiB:.0f} MiB"
    assert after_flood is not None, "no peer answered ring status after the flood"
    assert pages_after_flood < len(expected)  # the flood hit a crawling peer
    assert sorted((m["id"], m["state"]) for m in after_flood) == [("p1", "alive"), ("p2", "alive")]
    flood_dropped = _p1_dropped(after_flood)
    read = sum(flood_dropped.get(k, 0) - dropped.get(k, 0) for k in ("not_msgpack", "malformed"))
    assert read > 0, (dropped, flood_dropped)
