"""End to end: a web of pages, their exact and near copies on hosts other peers own, crawled by a ring of three.

The web is :func:`localweb.sitegraph.nearcopies.mirror_web` served by the local web
server: originals on three hosts, each copied by four changes onto four
mirror hosts and once exactly under ``/print/`` on its own host. Judged by
the peers' rows (every copy within k bits of its original is a duplicate of
it, of the right kind; no original is a duplicate) and by the server's
request log (a duplicate's links are not followed: the child page its
relative link names on its own host is never requested; a page that is not
a duplicate has its links followed). Real processes, bounded in time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localweb import HostileWeb, serve_in_thread
from localweb.sitegraph.nearcopies import Change, MirrorWeb, mirror_web
from localweb.processes.peerrun import Run, cluster_toml, run_peers
from localweb.hostile.wire import reply
from peer.core.config.dedupe import DedupeConfig
from peer.core.dedupe.simhash import distance
from peer.core.page.items import ExtractConfig
from peer.core.page.parse import parse_response
from ring.hashring import HashRing

BOUNDED = 90.0
K = 3


def fp(body: bytes) -> int:
    """The SimHash the peers' parse computes ([dedupe] defaults: the main content's)."""
    got = parse_response("http://x.test/", body, None, ExtractConfig(), dedupe=DedupeConfig(enabled=True, k=K)).simhash
    assert got is not None
    return got


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> tuple[HostileWeb, MirrorWeb, Run, Path]:
    tmp = tmp_path_factory.mktemp("dupes")
    web = HostileWeb()
    with serve_in_thread(web):
        mw = mirror_web(12, port=web.port)
        for (host, path), body in mw.pages.items():
            web.program[(host, path)] = reply(200, body)
        toml = cluster_toml(tmp, [web.url(h, p) for h, p in mw.seeds], peers=3,
                            sections={"dedupe": {"enabled": True, "k": K}})
        run = run_peers(toml, peers=3, timeout=BOUNDED, rss_kill_mb=1500)
    return web, mw, run, tmp


def test_every_copy_within_k_is_found_and_its_links_are_not_followed(crawl):
    web, mw, run, tmp = crawl
    assert not run.timed_out and run.codes == [0, 0, 0], run.stderr()
    rows = run.by_url()
    url = lambda hp: web.url(*hp)  # noqa: E731
    ring = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0}, 256)
    owner = lambda host: ring.owner(f"{host}:{web.port}")  # noqa: E731
    fetched = web.fetched()

    # Every original is new, and its links were followed (its child fetched once).
    for i, hp in enumerate(mw.originals):
        row = rows[url(hp)]
        assert (row["duplicate_kind"], row["duplicate_of"]) == (None, None), row
        assert row["payload_digest"].startswith("sha1:") and row["simhash"] is not None
        assert fetched[web.url(hp[0], f"/p{i}-child.html")] == 1

    # A family: an original and its copies. A copy is a near duplicate of any
    # earlier page of its family within k bits (two copies of one original
    # may be nearer each other than either is to the original); of no other.
    family = {url(hp): i for i, hp in enumerate(mw.originals)}
    family.update({url(where): i for where, (i, _) in mw.copies.items()})
    prints = {url(where): fp(mw.pages[where]) for where in mw.copies}
    prints.update({url(hp): fp(mw.pages[hp]) for hp in mw.originals})
    found = missed = by_sibling = crossed = exact_across = 0
    for where, (i, how) in mw.copies.items():
        row = rows[url(where)]
        original = mw.originals[i]
        near = distance(prints[url(where)], prints[url(original)]) <= K
        trap = fetched[url(mw.traps[where])]
        dup = row["duplicate_of"]
        if dup is not None:
            assert family.get(dup) == i, (where, how, row)  # precision: its own family only
            assert distance(prints[url(where)], prints[dup]) <= K, (where, how, row)
            assert trap == 0, f"{where}: a duplicate's link was followed"
        else:
            assert row["duplicate_kind"] is None
            assert trap == 1, f"{where}: a page that is not a duplicate must have its links followed"
        if near:
            assert dup is not None, f"{where} ({how.value}) is within {K} bits of its original, not found"
            found += 1
            if dup == url(original):
                same_peer = owner(where[0]) == owner(original[0])
                crossed += not same_peer
                exact_across += how is Change.EXACT and not same_peer
                # The same bytes: its peer's digest table, or its band-0 owner's (across peers); else the band owners.
                want = "exact" if how is Change.EXACT else "near"
                assert row["duplicate_kind"] == want, (where, how, row)
        else:
            missed += 1
            by_sibling += dup is not None
    assert crossed > 0  # the ring's part is tested: copies on hosts other peers own
    assert exact_across > 0  # byte-identical mirrors on other peers' hosts, exact (their band-0 owner)
    assert found + missed == len(mw.copies)
    print(f"k={K}: {found} of {len(mw.copies)} copies within k of their original, all found "
          f"(recall {found / len(mw.copies):.2f} of all copies); {by_sibling} of the {missed} beyond k "
          f"found as copies of a sibling copy; {crossed} found across peers ({exact_across} exact); no page called a copy "
          f"of a page of another family (precision 1.00)")

    # Counted where an operator looks: stats.json of each peer.
    totals = {"dedupe.exact": 0, "dedupe.near": 0}
    for p in ("p1", "p2", "p3"):
        stats = json.loads((tmp / p / "stats.json").read_text())
        figures = stats["dedupe"]
        for k in totals:
            totals[k] += figures.get(k.removeprefix("dedupe."), 0)
        assert figures.get("timeouts", 0) == 0 and figures["drops"] == {}, figures
    kinds = [r["duplicate_kind"] for r in rows.values()]
    assert totals == {"dedupe.exact": kinds.count("exact"), "dedupe.near": kinds.count("near")}
