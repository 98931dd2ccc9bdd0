"""peer.core.crawl.discovery: every URL judged once; a URL not taken is a ``Refused`` value with its reason, counted once.

Driven synchronously through ``CrawlCore.discover`` (``now`` passed in). The
``Refused`` effect and its ``Reason`` are peer.core.crawl.decisions'.
"""

from __future__ import annotations

import pytest

from peer.core.crawl.core import Checking, Forward, Origin, Queued, Reason, Refused, Seen
from peer.core.crawl.limits import Cap
from ring.hashring import HashRing
from tests.core.test_crawl import SITE, core, owned_by


def reason(effects: list) -> Reason | None:
    (e,) = effects
    return e.reason if isinstance(e, Refused) else None


def test_each_refusal_names_the_step_that_said_no_and_is_counted_once():
    c = core(obey_robots=False, max_depth=2, max_url_length=64, max_path_repeat=2, max_urls_per_host=1,
             rules=["exclude:*/private/*"])
    assert c.discover(f"{SITE}/first", 1, 0.0, Origin.LINK) == [Queued(f"{SITE}/first", 1)]
    cases = [
        ("notaurl", 0, Origin.RELAY, Reason.BAD_URL),
        ("ftp://site.web.test/x", 1, Origin.LINK, Reason.BAD_URL),
        ("http://elsewhere.example/", 1, Origin.LINK, Reason.HOST),
        (f"{SITE}/deep", 3, Origin.LINK, Reason.DEPTH),
        ("http://elsewhere.example/deep", 3, Origin.LINK, Reason.HOST),  # both: the host named
        (f"{SITE}/private/x", 1, Origin.LINK, Reason.RULES),
        (f"{SITE}/doc.pdf", 1, Origin.LINK, Reason.EXTENSION),
        (f"{SITE}/" + "x" * 100, 1, Origin.LINK, Reason.URL_LENGTH),
        (f"{SITE}/a/a/a/", 1, Origin.LINK, Reason.PATH_REPEAT),
        (f"{SITE}/second", 1, Origin.LINK, Reason.URLS_PER_HOST),
        (f"{SITE}/first", 1, Origin.LINK, Reason.SEEN),  # over the host cap, but queued before: no drop
    ]
    for url, depth, origin, why in cases:
        assert reason(c.discover(url, depth, 0.0, origin)) is why, url
    # Each where the Reason's docstring says, once: scope and the URL rules in
    # the summary, the caps by Limits; seen and bad URLs are no drop.
    assert c.summary.out_of_scope == 3
    assert c.summary.excluded == {"rules": 1, "skip_extensions": 1}
    assert c.limits.hits == {Cap.URL_LENGTH: 1, Cap.PATH_REPEAT: 1, Cap.URLS_PER_HOST: 1}
    assert len(c.frontier) == 1


def test_a_refusal_carries_the_url_the_crawl_judged():
    # Normalised (a relay) or cleaned of its tracking parameters (a link): the
    # URL the seen set holds, not the spelling that came.
    c = core(obey_robots=False)
    c.discover(f"{SITE}/a", 1, 0.0, Origin.LINK)
    assert c.discover("HTTP://Site.Web.Test:80/a#x", 1, 0.0, Origin.RELAY) == [Refused(f"{SITE}/a", Reason.SEEN)]
    assert c.discover(f"{SITE}/a?utm_source=x", 1, 0.0, Origin.LINK) == [Refused(f"{SITE}/a", Reason.SEEN)]


@pytest.mark.parametrize("origin", [o for o in Origin if o is not Origin.RECOVERED])
def test_every_origin_but_recovered_leaves_exactly_one_verdict(origin):
    c = core(obey_robots=False)
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(ring, 0.0)
    ours, theirs = owned_by(ring, "p1")[0], owned_by(ring, "p2")[0]
    urls = [f"http://{ours}/a", f"http://{ours}/a", f"http://{theirs}/b", "http://elsewhere.example/c"]
    if origin not in (Origin.HANDED_BACK, Origin.HANDED_SEEN):  # ours: never a bad URL
        urls.append("notaurl")
    for url in urls:
        effects = c.discover(url, 1, 0.0, origin)
        assert len(effects) == 1 and isinstance(effects[0], Queued | Checking | Forward | Seen | Refused), effects


def test_judge_names_the_rule_behind_a_refusal():
    c = core(obey_robots=False, rules=["exclude:re:[?&]q=", "include:*/library/*"])
    (e,) = c.discover(f"{SITE}/library/search?q=x&utm_source=y", 1, 0.0, Origin.LINK)
    assert e == Refused(f"{SITE}/library/search?q=x", Reason.RULES)
    judged = c.discovery.judge(e.url)
    assert judged.why() == "excluded by crawl.rules[0] 're:[?&]q='"
    assert c.discovery.judge(f"{SITE}/library/a").why() == "included by crawl.rules[1] '*/library/*'"


def test_a_refusal_is_a_small_immutable_value():
    r = Refused(f"{SITE}/a", Reason.SEEN)
    assert r == Refused(f"{SITE}/a", Reason.SEEN) and hash(r) == hash(Refused(f"{SITE}/a", Reason.SEEN))
    with pytest.raises(AttributeError):
        r.reason = Reason.HOST  # type: ignore[misc]
    assert Reason.URLS_PER_HOST == Cap.URLS_PER_HOST.value  # a cap's reason is its config key
