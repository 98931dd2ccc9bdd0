"""ring.forwarding.intake: what a Deliver and a Rerouted hand the crawl, in rule order (ring.crawlport's calls follow it)."""

from ring.actions import Deliver, Rerouted
from ring.forwarding.intake import ADOPT_PREFIX, DURABLE, Source, Take, TakeSeen, adopted, intake

URLS = (("http://a.test/1", 2), ("http://b.test/2", 0))
SEEN = ("http://a.test/done", "http://c.test/done")


def test_a_members_batch_is_relayed_then_its_seen_urls_then_made_durable():
    # Rules 1-3: the ack goes after DURABLE, whatever the driver does next.
    assert intake(Deliver(URLS, SEEN, "p2")) == (Take(Source.RELAY, URLS), TakeSeen(SEEN), DURABLE)


def test_the_adopt_tools_batch_is_adopted_by_its_sender_id():
    assert adopted(ADOPT_PREFIX + "p3") and not adopted("p3") and not adopted("p3" + ADOPT_PREFIX)
    assert intake(Deliver(URLS, (), ADOPT_PREFIX + "p3")) == (Take(Source.ADOPTED, URLS), DURABLE)


def test_a_batch_is_made_durable_even_with_nothing_in_it():
    assert intake(Deliver((), SEEN, "p2")) == (TakeSeen(SEEN), DURABLE)
    assert intake(Deliver((), (), "p2")) == (DURABLE,)


def test_our_entries_back_are_seen_first_then_handed_back_in_the_reroutes_order_and_never_committed():
    # Rule 4: a URL a previous owner handed us as fetched is known seen before it would be queued.
    steps = intake(Rerouted(URLS, SEEN))
    assert steps == (TakeSeen(SEEN), Take(Source.HANDED_BACK, URLS))
    assert DURABLE not in steps
    assert intake(Rerouted(URLS, ())) == (Take(Source.HANDED_BACK, URLS),)
    assert intake(Rerouted((), ())) == ()


def test_the_sources_are_the_crawls_origins_by_value():
    # peer.core.crawl.decisions.Origin names them alike: a driver maps one to the other by value.
    from peer.core.crawl.decisions import Origin

    assert {s.value for s in Source} <= {o.value for o in Origin}
