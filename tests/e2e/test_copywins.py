"""End to end: a site's session-id views linked before its pages; the pages win, and the crawl does not wander.

``docs.sid.test`` serves 25 documentation pages ``/p<i>`` (their canonical
link names themselves; each links two others and a page only it links to,
``/p<i>-only``) and, under any ``?sid=``, a session view of each: the same
text, a canonical link to the page, and links to other pages under a *new*
session id, as a site that opens a session for every visitor without a
cookie does. The home page links the 25 session views first, then the pages.

Crawled by one peer in this process with ``[dedupe]`` on. Judged by the rows
(every page is an original, every session view its near copy: the better
copy fetched later wins, and the view's row is corrected) and by the server's
log (the only session URLs requested are the 25 the home page links; every
``-only`` page is requested: a copy never hides what its original links to).
Before, whichever copy came first was the original: the views, whose links
led the crawl on through new session URLs until ``max_pages``.

The second test puts the copies on two hosts that two peers own (in this
process, over the ring's real sockets): a mirror's session views whose
canonical names the page on the main host. The view is judged first, new;
the page, fetched later on the other peer, outranks it, and the correction
crosses the ring (wire type 44) to the peer that wrote the view's row.
"""

from __future__ import annotations

import hashlib
import re

import duckdb
import trio

from localweb import HostileWeb, serve_in_thread
from localweb.hostile.wire import Reply, html, reply
from localweb.processes.peerrun import cluster_toml, run_in_process
from localweb.sitegraph.nearcopies import corpus
from peer.results.merge import merge
from ring.hashring import HashRing
from tests.support.ringharness import Ring

HOST = "docs.sid.test"
PAGES = 25
BOUNDED = 60.0
MAX_PAGES = 300  # on the old code the session views lead on until this cap

_CANONICAL = re.compile(r'<link rel="canonical"[^>]*>\n?')
_HREF = re.compile(r'href="[^"]*"')


def texts() -> list[str]:
    """25 real-sized documentation pages of the local web, their own links and canonicals gone."""
    out = []
    for body in corpus(PAGES, seed=3, changes=()).originals:
        out.append(_HREF.sub('href="#"', _CANONICAL.sub("", body.decode("utf-8"))))
    return out


def site(port: int):
    pages = texts()
    base = f"http://{HOST}:{port}"

    def page(i: int, sid: str | None) -> bytes:
        q = "" if sid is None else "?sid=" + hashlib.sha1(f"{sid}/{i}".encode()).hexdigest()[:16]
        # The same words either way (a session view's "more" goes nowhere), so a
        # view is a copy of its page at distance 0.
        more = f'<a href="{"#" if sid is not None else f"/p{i}-only"}">more</a> '
        links = f'<p class="next">{more}<a href="/p{(i + 1) % PAGES}{q}">next</a> ' \
                f'<a href="/p{(i + 7) % PAGES}{q}">see also</a></p>\n'
        text = pages[i].replace("</head>", f'<link rel="canonical" href="{base}/p{i}">\n</head>', 1)
        return text.replace("</body>", links + "</body>", 1).encode("utf-8")

    def route(host: str, target: str) -> Reply | None:
        if host != HOST:
            return None
        path, _, query = target.partition("?")
        if path == "/":
            views = "".join(f'<a href="/p{i}?sid=home">page {i}</a> ' for i in range(PAGES))
            plain = "".join(f'<a href="/p{i}">page {i}</a> ' for i in range(PAGES))
            return reply(200, html(f"<p>{views}</p><p>{plain}</p>"))
        m = re.fullmatch(r"/p(\d+)(-only)?", path)
        if m is None or int(m[1]) >= PAGES:
            return reply(404, html("no such page"))
        if m[2]:
            return reply(200, html(f"<p>only page {m[1]}: reached through the original's links</p>"))
        sid = query.removeprefix("sid=") if query.startswith("sid=") else None
        return reply(200, page(int(m[1]), sid))

    return route


def test_the_pages_win_over_their_session_views_and_no_session_url_is_followed(tmp_path):
    web = HostileWeb()
    with serve_in_thread(web):
        web.route = site(web.port)
        toml = cluster_toml(tmp_path, [web.url(HOST, "/")],
                            sections={"dedupe": {"enabled": True}, "crawl": {"max_pages": MAX_PAGES}})
        run = run_in_process(toml, timeout=BOUNDED)
    assert not run.timed_out and run.codes == [0], run.stderr()
    url = lambda path: web.url(HOST, path)  # noqa: E731
    fetched = web.fetched(HOST)
    sessions = sorted(u for u in fetched if "?sid=" in u)
    linked = {url(f"/p{i}?sid=home") for i in range(PAGES)}
    print(f"{len(fetched)} URLs fetched, {len(sessions)} of them session views "
          f"({len(set(sessions) - linked)} beyond the {PAGES} linked)")
    # The server's log: the session URLs followed are the linked ones, each once;
    # every page and what only it links to were fetched.
    assert set(sessions) == linked, sorted(set(sessions) - linked)[:5]
    for i in range(PAGES):
        assert fetched[url(f"/p{i}")] == 1 and fetched[url(f"/p{i}-only")] == 1, i
    # The rows: every page is the original, every view its near copy (corrected
    # after the page came: the view was fetched first).
    rows = run.by_url()
    for i in range(PAGES):
        page, view = rows[url(f"/p{i}")], rows[url(f"/p{i}?sid=home")]
        assert (page["duplicate_kind"], page["duplicate_of"], page["canonical"]) == (None, None, url(f"/p{i}")), page
        assert (view["duplicate_kind"], view["duplicate_of"]) == ("near", url(f"/p{i}")), view
    assert sum(r["duplicate_of"] is not None for r in rows.values()) == PAGES
    # The merged results hold the corrected verdicts too (ringcrawl-merge).
    merge([run.peers[0].data_dir], tmp_path / "merged.duckdb")
    con = duckdb.connect(str(tmp_path / "merged.duckdb"), read_only=True)
    try:
        merged = dict(con.execute("SELECT url, duplicate_of FROM pages WHERE duplicate_of IS NOT NULL").fetchall())
    finally:
        con.close()
    assert merged == {url(f"/p{i}?sid=home"): url(f"/p{i}") for i in range(PAGES)}


DOCS = 5


def two_hosts(port: int) -> tuple[str, str]:
    """A mirror host p1 owns and a main host p2 owns, on this port."""
    ring = HashRing({"p1": 1.0, "p2": 1.0}, 256)
    owner = lambda host: ring.owner(f"{host}:{port}")  # noqa: E731
    mirror = next(h for h in (f"m{n}.copy.test" for n in range(64)) if owner(h) == "p1")
    main = next(h for h in (f"w{n}.copy.test" for n in range(64)) if owner(h) == "p2")
    return mirror, main


def mirrored(port: int, mirror: str, main: str):
    pages = texts()[:DOCS]

    def doc(i: int, on_mirror: bool) -> bytes:
        more = "#" if on_mirror else f"/doc{i}-only"
        q = "?sid=abc" if on_mirror else ""
        links = f'<p class="next"><a href="{more}">more</a> <a href="/doc{(i + 1) % DOCS}{q}">next</a></p>\n'
        text = pages[i].replace("</head>", f'<link rel="canonical" href="http://{main}:{port}/doc{i}">\n</head>', 1)
        return text.replace("</body>", links + "</body>", 1).encode("utf-8")

    def route(host: str, target: str) -> Reply | None:
        path, _, query = target.partition("?")
        if host == mirror and path == "/":
            return reply(200, html("views", [f"/doc{i}?sid=abc" for i in range(DOCS)]))
        m = re.fullmatch(r"/doc(\d+)(-only)?", path)
        if host not in (mirror, main) or m is None or int(m[1]) >= DOCS:
            return None
        if m[2]:
            return reply(200, html(f"only doc {m[1]}"))
        return reply(200, doc(int(m[1]), host == mirror))

    return route


async def test_a_correction_crosses_the_ring_to_the_peer_that_wrote_the_copys_row(tmp_path):
    web = HostileWeb()
    async with trio.open_nursery() as nursery:
        await nursery.start(web.serve)
        mirror, main = two_hosts(web.port)
        web.route = mirrored(web.port, mirror, main)
        toml = cluster_toml(tmp_path, [web.url(mirror, "/")], peers=2, sections={"dedupe": {"enabled": True}})
        async with Ring(tmp_path, toml.read_text()) as ring:
            with trio.fail_after(BOUNDED):
                for p in ("p1", "p2"):
                    await ring.start_in_process(nursery, p)
                await ring.wait()
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            tails = ring.tails()
        nursery.cancel_scope.cancel()
    assert codes == {"p1": 0, "p2": 0}, tails
    rows = {}
    for p in ("p1", "p2"):
        con = duckdb.connect(str(tmp_path / p / "pages.duckdb"), read_only=True)
        try:
            rows.update({u: (p, d) for u, d in con.execute("SELECT url, duplicate_of FROM pages").fetchall()})
        finally:
            con.close()
    fetched = web.fetched()
    for i in range(DOCS):
        view, page = web.url(mirror, f"/doc{i}?sid=abc"), web.url(main, f"/doc{i}")
        # The view's row is p1's, corrected by p2's page; the page is the original and its links followed.
        assert rows[view] == ("p1", page) and rows[page] == ("p2", None), (i, rows[view], rows[page])
        assert fetched[web.url(main, f"/doc{i}-only")] == 1
