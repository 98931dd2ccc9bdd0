"""peer.core.dedupe.held and its wiring: verdicts in the crawl core, band queries through the peer core and the ring node.

Driven synchronously, ``now`` passed in: a page is fetched and parsed by the
crawl's own ``parse_response`` with ``[dedupe]`` on, and what the core
returns (rows, discoveries, band queries) is what is checked. A member's
band query's claims (its fetch time, its URL's host) are judged by
peer.core.dedupe.claims.
"""

from __future__ import annotations

import random

from peer.core.crawl.core import CrawlCore, Finished, Origin, Queued, Row, Sleep, parse_response
from peer.core.crawl.decisions import NearAsk
from peer.core.dedupe.bands import NearAnswer
from peer.core.door.peer import PeerCore
from peer.core.urls.normalize import host_key
from ring import messages as wire
from ring.actions import NearAnswered, NearAsked, Send
from ring.node import RingNode
from tests.core.test_crawl import answer, config, start
from peer.core.crawl.figures import limits_figures
from tests.core.test_peercore import INC, R2, RING, SEEDS, hosts_of, known

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def text(seed: int, n: int = 200) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def page(body_text: str, *links: str) -> bytes:
    anchors = "".join(f'<a href="{u}">link</a>' for u in links)
    return f"<html><body><p>{body_text}</p>{anchors}</body></html>".encode()


def crawl_core(**dedupe) -> CrawlCore:
    """A crawl core with [dedupe] on (it is off by default), and ``dedupe``'s keys."""
    from dataclasses import replace

    cfg = config(obey_robots=False)
    return CrawlCore(replace(cfg, dedupe=replace(cfg.dedupe, **{"enabled": True, **dedupe})), "p1",
                     rng=random.Random(1))


def fetch(c: CrawlCore, url: str, body: bytes, now: float) -> list:
    """Fetch ``url`` answering ``body``, parsed as the engine parses it; the core's effects."""
    c.discover(url, 0, now, Origin.LINK)
    job = start(c, now)
    while job.url != url:  # a link found before, on another host: left in flight
        job = start(c, now)
    c.admit(job, now)
    res = answer(url, 200, body)
    assert c.fetched(job, res, now)
    parsed = parse_response(url, body, "utf-8", c.cfg.extract, 0, c.params, c.page_rules, c.cfg.dedupe)
    out = c.on_result(job, res, parsed, now)
    c.job_ended(job)
    return out


def rows(effects) -> list[Row]:
    return [e for e in effects if isinstance(e, Row)]


def queued(effects) -> set[str]:
    return {e.url for e in effects if isinstance(e, Queued)}


def answered_here(c: CrawlCore, effects, now: float) -> list:
    """A ring of one: every band is ours; answer each query as ``PeerCore`` does."""
    out = []
    for e in effects:
        if isinstance(e, NearAsk):
            out += c.dup_answer(c.peer_id, c.dedupe.serve(e.query), now)
        else:
            out.append(e)
    return out


SITE = "http://site.web.test"
OTHER = "http://other.web.test"  # links go here: the site's host is free for the next page


def test_an_exact_copy_is_recorded_as_such_and_its_links_are_not_followed():
    c = crawl_core()
    body = page(text(1), f"{OTHER}/child")
    first = answered_here(c, fetch(c, f"{SITE}/a", body, 0.0), 0.0)
    assert queued(first) == {f"{OTHER}/child"}
    [row] = rows(first)
    assert row.duplicate_kind is None and row.payload_digest.startswith("sha1:") and row.simhash is not None
    # The same bytes under another URL: known at once, with no question asked.
    again = fetch(c, f"{SITE}/a?print=1", body, 1.0)
    assert not any(isinstance(e, NearAsk) for e in again)
    assert queued(again) == set()
    [row] = rows(again)
    assert (row.duplicate_kind, row.duplicate_of) == ("exact", f"{SITE}/a")
    assert row.payload_digest == rows(first)[0].payload_digest
    figures = c.dup_figures()
    assert figures["dedupe.exact"] == 1 and figures["dedupe.unfollowed_links"] == 1


def test_a_near_copy_waits_with_its_row_and_links_held_then_follows_nothing():
    c = crawl_core()
    words = text(2)
    answered_here(c, fetch(c, f"{SITE}/a", page(words, f"{OTHER}/x"), 0.0), 0.0)
    # The same text, other links (a session id's copy): other bytes, the same SimHash.
    effects = fetch(c, f"{SITE}/b", page(words, f"{OTHER}/trap"), 1.0)
    asks = [e for e in effects if isinstance(e, NearAsk)]
    # Held: no row and no link until the band owners answered (rule 2).
    assert asks and not rows(effects) and not queued(effects)
    assert c.held.waiting() == 1
    done = answered_here(c, asks, 1.0)
    [row] = rows(done)
    assert (row.duplicate_kind, row.duplicate_of) == ("near", f"{SITE}/a")
    assert queued(done) == set() and c.held.waiting() == 0


def test_a_page_whose_owners_stay_silent_is_new_at_its_timeout_and_its_links_then_followed():
    c = crawl_core(answer_timeout=5.0)
    effects = fetch(c, f"{SITE}/a", page(text(3), f"{OTHER}/x"), 0.0)
    assert [e for e in effects if isinstance(e, NearAsk)] and not rows(effects)
    nxt = c.next(1.0)
    assert isinstance(nxt, Sleep) and nxt.until == 5.0  # the scheduler wakes for the deadline
    nxt = c.next(5.0)
    assert isinstance(nxt, Sleep) and nxt.until == 5.0
    [row] = rows(nxt.effects)
    assert row.duplicate_kind is None and queued(nxt.effects) == {f"{OTHER}/x"}
    # The link's Queued before its page's Row (journal crash ordering rule 1).
    kinds = [type(e) for e in nxt.effects]
    assert kinds.index(Queued) < kinds.index(Row)
    assert c.dup_figures()["dedupe.timeouts"] == 1
    # A late answer is dropped and counted.
    assert c.dup_answer("p1", NearAnswer(f"{SITE}/a", None), 6.0) == []
    assert c.dup_figures()["dedupe_late_answers"] == 1


def test_a_stopped_crawl_writes_its_held_pages_rows_before_it_finishes():
    c = crawl_core()
    effects = fetch(c, f"{SITE}/a", page(text(4), f"{OTHER}/x"), 0.0)
    assert not rows(effects)
    c.stopping = True
    nxt = c.next(0.5)
    assert isinstance(nxt, Sleep) and len(rows(nxt.effects)) == 1
    assert isinstance(c.next(0.5), Finished)


def test_an_answer_from_a_peer_not_asked_is_dropped_and_counted():
    c = crawl_core()
    effects = fetch(c, f"{SITE}/a", page(text(5)), 0.0)
    asks = [e for e in effects if isinstance(e, NearAsk)]
    assert asks
    assert c.dup_answer("p9", NearAnswer(f"{SITE}/a", f"{SITE}/z", 0), 0.1) == []
    assert c.dup_figures()["dedupe_stray_answers"] == 1 and c.held.waiting() == 1
    # Rule 3: a peer with a page waiting is not idle (termination waits for it).
    assert not c.locally_idle()
    assert len(rows(answered_here(c, asks, 0.2))) == 1
    assert c.locally_idle()


def test_off_means_no_fingerprints_no_columns_and_links_followed():
    c = crawl_core(enabled=False)
    fetch(c, f"{SITE}/a", page(text(6), f"{OTHER}/x"), 0.0)
    effects = fetch(c, f"{SITE}/b", page(text(6), f"{OTHER}/y"), 1.0)
    [row] = rows(effects)
    assert (row.payload_digest, row.duplicate_kind) == (None, None) and queued(effects) == {f"{OTHER}/y"}


# -- over the ring: the peer core and the node ---------------------------------------------


def ring_peer(peer_id: str = "p1") -> PeerCore:
    node = RingNode(peer_id, dict((s[0], s[1]) for s in SEEDS)[peer_id], 1.0, RING, seeds=SEEDS,
                    gossip_interval=0.1, suspect_after=0.5, dead_after=1.5, now=0.0,
                    incarnation=INC, owner_key=host_key)
    from dataclasses import replace

    cfg = config(obey_robots=False)
    crawl = CrawlCore(replace(cfg, dedupe=replace(cfg.dedupe, enabled=True)), peer_id, rng=random.Random(1))
    core = PeerCore(crawl, node, now=0.0)
    core.tick(0.0)
    return core


def test_a_band_owned_by_another_member_is_asked_by_message_and_its_answer_decides():
    p1 = ring_peer()
    known(p1)
    [mine] = hosts_of(p1, "p1")
    url = f"http://{mine}/a"
    crawl = p1.crawl
    crawl.discover(url, 0, 0.0, Origin.LINK)
    job = start(crawl, 0.0)
    crawl.admit(job, 0.0)
    body = page(text(7), f"http://{mine}/x")
    res = answer(url, 200, body)
    crawl.fetched(job, res, 0.0)
    parsed = parse_response(url, body, "utf-8", crawl.cfg.extract, 0, crawl.params, crawl.page_rules,
                            crawl.cfg.dedupe)
    out = p1.routed(crawl.on_result(job, res, parsed, 0.0), 0.0)
    crawl.job_ended(job)
    sends = [e for e in out if isinstance(e, Send)]
    # Four bands at k = 3 over two peers: some are p2's, asked by one message, the rest answered here.
    assert [s.dest for s in sends] == ["p2"] and isinstance(sends[0].msg, wire.NearQuery)
    q = sends[0].msg
    assert (q.sender, q.reply_to, q.url, q.fingerprint) == ("p1", "p1", url, parsed.simhash)
    assert not rows(out) and crawl.held.waiting() == 1
    # p2 answers through the ring: the node checks the sender, the crawl the answer.
    got = p1.receive(R2, wire.NearAnswer(RING, "p2", url, None, -1), 0.2, wall=0.2)
    [row] = rows(got)
    assert row.duplicate_kind is None and queued(got) == {f"http://{mine}/x"}


def test_a_members_band_query_is_answered_to_its_sender_and_a_strangers_is_dropped():
    p1 = ring_peer()
    known(p1)
    [h] = hosts_of(p1, "p2")  # a host of p2's: the queries' URLs are its own (peer.core.dedupe.claims rule 3)
    q = wire.NearQuery(RING, "p2", (0, 1, 2, 3), 2**63 + 5, f"http://{h}/a", "p3", 1.0)
    assert p1.node.receive(R2, q, 0.1) == [NearAsked(q)]  # type: ignore[union-attr]
    out = p1.receive(R2, q, 0.1, wall=1.1)
    # To the sender, never to the reply_to a query names.
    assert out == [Send("p2", wire.NearAnswer(RING, "p1", f"http://{h}/a", None, -1))]
    # The same fingerprint again from p2, later: a copy of the first, at distance 0.
    q2 = wire.NearQuery(RING, "p2", (0,), 2**63 + 5, f"http://{h}/b", "p2", 2.0)
    assert p1.receive(R2, q2, 0.2, wall=2.2) == [
        Send("p2", wire.NearAnswer(RING, "p1", f"http://{h}/b", f"http://{h}/a", 0))]
    # One from a peer that is no member, on its own route: dropped and counted.
    stranger = wire.NearQuery(RING, "p7", (0,), 1, "http://h.web.test/c", "p7", 1.0)
    assert p1.receive(b"p7/bbbb", stranger, 0.3, wall=0.3) == []
    assert p1.node.dropped["unknown_sender"] == 1  # type: ignore[union-attr]
    a = wire.NearAnswer(RING, "p2", "http://h.web.test/zz", None, -1)
    assert p1.node.receive(R2, a, 0.4) == [NearAnswered(a)]  # type: ignore[union-attr]


def test_check_shows_the_dedupe_section():
    from dataclasses import replace

    from peer.commands.check import describe

    cfg = config()
    assert "   dedupe: off" in describe(cfg)  # the default
    cfg = replace(cfg, dedupe=replace(cfg.dedupe, enabled=True))
    assert "   dedupe: exact by body digest (at most 1,000,000 kept), near by SimHash within k=3 " \
           "(4 band owners asked" in describe(cfg)
    assert "   dedupe: off" in describe(replace(cfg, dedupe=replace(cfg.dedupe, enabled=False)))


def test_a_members_claims_are_bounded_by_this_peers_clock_and_ring():
    """peer.core.dedupe.claims: a fetch time of 1970 or of the future is refused, a URL of another
    member's host is answered but never recorded; each counted where ring status shows drops."""
    p1 = ring_peer()
    known(p1)
    [theirs] = hosts_of(p1, "p2")
    [mine] = hosts_of(p1, "p1")
    fp, wall = 2**63 + 5, 1_800_000_000.0
    nothing = lambda url: [Send("p2", wire.NearAnswer(RING, "p1", url, None, -1))]  # noqa: E731
    forged = [(f"http://{theirs}/old", 0.0),  # 1970: before every page
              (f"http://{theirs}/late", wall - 25.0),  # past answer_timeout (10) and max_clock_skew (10)
              (f"http://{theirs}/future", wall + 60.0),
              (f"http://{mine}/notyours", wall)]  # p1's host: p2 never fetched it
    for url, seen_at in forged:
        q = wire.NearQuery(RING, "p2", (0, 1, 2, 3), fp, url, "p2", seen_at)
        assert p1.receive(R2, q, 0.1, wall=wall) == nothing(url)
    figures = p1.crawl.dup_figures()
    assert (figures["dedupe_refused_too_old"], figures["dedupe_refused_future"],
            figures["dedupe_unrecorded_not_owner"]) == (2, 1, 1)
    assert len(p1.crawl.dedupe.bands) == 0  # none of them recorded
    # A true query, within the window, of p2's own host: recorded, and a later copy names it.
    for n, url in enumerate((f"http://{theirs}/a", f"http://{theirs}/b")):
        q = wire.NearQuery(RING, "p2", (0, 1, 2, 3), fp, url, "p2", wall - 15.0 + n)
        got = p1.receive(R2, q, 0.1, wall=wall)
    assert got == [Send("p2", wire.NearAnswer(RING, "p1", f"http://{theirs}/b", f"http://{theirs}/a", 0))]
    # Shown where an operator looks: with the limits ring status and /metrics carry (drops: dedupe_*).
    shown = limits_figures(p1.crawl, 0.1, {})
    assert shown["dedupe_refused_too_old"] == 2 and shown["dedupe_unrecorded_not_owner"] == 1
