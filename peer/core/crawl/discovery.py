"""The way a URL comes in: every URL the crawl core meets, judged once (pure).

``Discovery`` is a part of ``peer.core.crawl.core.CrawlCore``: it owns the
seen set (the Bloom filter and its exact sieve, ``peer.core.seen``; the
driver replaces both on recovery) and judges each URL against the scope,
the URL rules, the caps and the ring, reaching the rest of the core through
what it is handed: the limits, the frontier (through ``push``), the jobs'
redirect hops, the hand-off side (who owns a host, the URLs handed in), a
sitemap entry's reader and ``pass_on``.

How each origin of a URL treats the Bloom filter (``discover``), once:

============  =========  ===============  =========  =====================================
origin        normalise  scope, URL caps  host cap   Bloom filter
============  =========  ===============  =========  =====================================
SEED          yes        yes              yes        add; already there: drop
LINK          no [1]     yes              yes        add; already there: drop
REDIRECT      no [1]     yes              yes        add; already there: drop
SITEMAP       no [6]     yes              yes        add; already there: drop
RELAY         yes [2]    yes              yes        add; already there: drop
ADOPTED       yes [2]    yes              yes        add; already there: drop
HANDED_BACK   no         no [3]           no         add, queued unless handed as seen [3]
HANDED_SEEN   no         no               no         add, never queued [4]
RECOVERED     no         no               no         untouched [5]
REQUISITE     no [1]     [7]              yes        add; already there: drop
RETRY         no [8]     yes              no [8]     add; queued though already there [8]
============  =========  ===============  =========  =====================================

[1] ``normalize_link`` made it, with the core's ``params`` (strip_params,
sort_query), which are applied again (a no-op then). [2] Remote input from a peer or the adopt
tool. [3] Ours, on its way to a peer now gone (``Outbox.reroute``): it may
be in our filter already (queued here before its host moved), and nobody
else took it; unless a previous owner handed it to us as fetched (a link
forwarded to a leaver that had fetched it, refused by the leaver and
rerouted here): then it is dropped. [4] Fetched by another peer for a host now ours; if it was
already in the filter it may be queued here, and its job is dropped when
it comes up. [5] Recovered from the journal, whose filter holds it.
[6] ``peer.core.sitemaps.document.parse`` normalised it (a URL a sitemap lists:
``peer.core.sitemaps.jobs`` rule 4).
[7] A page requisite (``peer.core.crawl.requisites``): ``skip_extensions``
and include rules say which *pages* to crawl, not what a page needs to be
shown, so neither refuses it (as Heritrix's transclusion rule and wget's
``-p`` take embeds); an exclude rule that matches it does, and so do
``deny_hosts`` and, with ``[warc] requisites_other_hosts = false``,
``allow_hosts``; the URL caps hold.
[8] A failed page queued again (``--retry-failed``, peer/core/crawl/failedpages.py):
its URL is a results row's, normalised when first queued; it was counted
against ``max_urls_per_host`` then, and the filter holds it, which is why
it comes. A host another peer owns now gets it with a ``retry`` tail
(peer/core/sitemaps/hints.py), and that owner queues it the same way, even
if the host's previous owner handed it over as fetched, before or after
(its row there was the failure).

A page's links come in one call, :meth:`Discovery.discover_links`, that
judges each as ``discover(link, depth, now, Origin.LINK)`` would, in order,
with the same verdicts, counts and effects: what depends on a link's host
alone (its scope, URL rules and owner) is asked once a host; what the steps
before the host cap say of a link is remembered from an earlier page (they
depend on the link alone while the rules and the ring stay: ``_Judged``);
and the links that reach the Bloom filter are looked up in it together
(``BloomFilter.contains_many``), but for those found there before (a
filter only gains bits). A link found there is refused or checked as one
by one would (``add`` would have said "maybe seen" and changed nothing);
the rest are added one by one, in order, between the host cap's and the
budgets' questions that the links before them change. Measured on the
49-host bench web at 100 links a page (``scripts/bench_sidebyside.py``
--links 100), the per-link path fell from 28 % of a peer's CPU samples
(``discover`` one by one; 9 % in ``BloomFilter.add``) to 7 %.

A URL with a tail after a space (any origin but LINK and REDIRECT) is a
sitemap job or a URL with a sitemap's hints (``peer.core.sitemaps.hints``):
``peer.core.sitemaps.jobs.SitemapJobs.entry`` takes it apart first.

A URL not ours goes to its owner: ``Forward(relay=False)`` for our own
discoveries (the outbox's recently-forwarded cache may drop a repeat),
``relay=True`` for URLs we were handed (they may be the only copy).

Refusals: every origin but RECOVERED leaves exactly one verdict for the URL
it was given, ``Queued``, ``Checking``, ``Forward``, ``Seen`` or
``Refused``, whose ``Reason`` says which step said no, in the order above:
``BAD_URL``, then ``HOST`` or ``DEPTH`` (the scope; the host named first
when both refuse), ``EXTENSION`` or ``RULES``, ``URL_LENGTH`` or
``PATH_REPEAT``, ``URLS_PER_HOST``, ``GIVEN_UP`` or a spent budget's
``BUDGET_HOST``, ``BUDGET_SITE``, ``BUDGET_DOMAIN`` (a URL queued before is
``SEEN``, no drop), ``SEEN``. A URL with a sitemap's tail is the sitemaps'
part's: a URL with hints gets its verdict here, but a sitemap job queued
or refused there leaves none (it is never journaled, ``peer.core.sitemaps.jobs``
rules 3 and 5), nor does a malformed tail (a sitemap drop). ``python -m
peer try`` shows the reason as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from peer.core.crawl.decisions import Checking, Discover, Effect, Forward, Origin, Queued, Reason, Refused, Seen
from peer.core.crawl.limits import Cap
from peer.core.seen.sieve import Verdict as SeenVerdict
from peer.core.sitemaps.hints import RETRY, attach
from peer.core.urls.normalize import MAX_URL_LENGTH, host_key, normalize
from peer.core.urls.rules import Cause, UrlRules
from peer.errors import URLError

if TYPE_CHECKING:
    from peer.core.config.sites import SiteSettings
    from peer.core.crawl.budgets import Budgets
    from peer.core.crawl.jobs import Jobs
    from peer.core.crawl.limits import Limits
    from peer.core.handoff.moves import Handoffs, PassOn
    from peer.core.run.stats import Summary
    from peer.core.seen.bloom import BloomFilter
    from peer.core.seen.sieve import SeenSieve, SieveBatch
    from peer.core.urls.rules import Judgement, ParamRules
    from peer.core.urls.scope import Scope
    from ring.hashring import HashRing

__all__ = ["Discovery"]

# Most links are refused (seen, or another site's): the refusal's cost is
# the link's. Measured on this repo's 2-core box, a NamedTuple is made in
# ~200 ns by its own __new__ (a Python function) and in ~125 ns by
# tuple.__new__; a frozen dataclass takes ~300 ns; and reading an enum
# member off its class (Reason.SEEN) ~70 ns against ~7 for a module global.
_new = tuple.__new__
_SEEN, _HOST, _DEPTH, _BAD_URL = Reason.SEEN, Reason.HOST, Reason.DEPTH, Reason.BAD_URL
_PENDING = SeenVerdict.PENDING
# The refusals of the URL rules and of the caps, by the cause or cap that
# decided (an enum's call by value costs ~0.3 µs), and back for the counts.
_EXCLUDED = {Cause.EXTENSION: Reason.EXTENSION, Cause.RULE: Reason.RULES}
_CAPPED = {Cap.URL_LENGTH: Reason.URL_LENGTH, Cap.PATH_REPEAT: Reason.PATH_REPEAT,
           Cap.URLS_PER_HOST: Reason.URLS_PER_HOST, Cap.GIVEN_UP: Reason.GIVEN_UP,
           Cap.BUDGET_HOST: Reason.BUDGET_HOST, Cap.BUDGET_SITE: Reason.BUDGET_SITE,
           Cap.BUDGET_DOMAIN: Reason.BUDGET_DOMAIN}
_CAUSES = {v: k for k, v in _EXCLUDED.items()}
_CAPS = {v: k for k, v in _CAPPED.items()}
_NO_RULES = UrlRules()


#: What discover's steps before the host cap say of a link (``Discovery._judge_link``):
#: (URL cleaned of its parameters, host or "" for a bad URL, host in scope,
#: the first refusal of the URL rules, caps or a bad URL, owner). Links
#: repeat (a site's navigation is on every page), and these steps depend on
#: the link alone while the rules and the ring stay, so a link is judged
#: once; the memo and the set of links found in the Bloom filter are cleared
#: when full: 16,384 links each, 2 MiB together for links of 60 characters (tracemalloc).
_Judged = tuple[str, str, bool, "Reason | None", str]
_MEMO_LINKS = 1 << 14


class _NoBudgets:
    active = False

    def spent(self, host: str) -> Cap | None:
        return None


_NO_BUDGETS: Any = _NoBudgets()


class Discovery:
    """The way in of ``CrawlCore`` (module docstring)."""

    __slots__ = ("bloom", "sieve", "_me", "_scope", "_urlrules", "_params", "_sites", "_limits", "_summary",
                 "_jobs", "_handoffs", "_push", "_pass_on", "_entry", "_any_host", "_retrying", "_budgets",
                 "_memo", "_memo_ring", "_present", "_present_bloom")

    def __init__(self, me: str, *, bloom: BloomFilter, sieve: SeenSieve, scope: Scope, urlrules: UrlRules,
                 params: ParamRules | None, sites: SiteSettings, limits: Limits, summary: Summary,
                 jobs: Jobs, handoffs: Handoffs, push: Callable[..., None],
                 pass_on: PassOn, entry: Discover, requisites_any_host: bool = True,
                 retrying: Container[str] = frozenset(), budgets: Budgets | None = None) -> None:
        #: The seen set: every URL queued, forwarded to us, or handed in (``CrawlCore.bloom``).
        self.bloom = bloom
        #: The exact seen set's policy behind the Bloom filter (peer/core/seen/sieve.py).
        self.sieve = sieve
        self._me = me
        self._scope = scope
        self._urlrules = urlrules
        self._params = params
        self._sites = sites
        self._limits = limits
        self._summary = summary
        self._jobs = jobs
        self._handoffs = handoffs
        self._push = push
        self._pass_on = pass_on
        self._entry = entry
        #: ``[warc] requisites_other_hosts``: a requisite's host need not be in allow_hosts [7].
        self._any_host = requisites_any_host
        #: Failed pages queued again here, until their row [8] (``FailedPages.queued``).
        self._retrying = retrying
        #: The budgets (peer.core.crawl.budgets): a spent one refuses its hosts' new URLs.
        self._budgets = budgets if budgets is not None else _NO_BUDGETS
        #: Links judged on earlier pages, by their spelling (``_Judged``), under ``_memo_ring``.
        self._memo: dict[str, _Judged] = {}
        self._memo_ring: HashRing | None = None
        #: Links found in ``_present_bloom``: a Bloom filter only gains bits, so they stay found.
        self._present: set[str] = set()
        self._present_bloom: BloomFilter | None = None

    def recovered(self, queued: Iterable[tuple[str, int]], now: float) -> list[Effect]:
        """A recovered queue, each URL as :meth:`discover` with ``Origin.RECOVERED`` takes it.

        A restart puts back up to a journal's worth of URLs (a million)
        before its first request, so the host is looked up once a scheme and
        authority, not once a URL: a queued URL is normalised, so the slice
        up to its path's slash names its host (``host_key`` of the first URL
        with it says which), and the owner is asked once a host.
        """
        out: list[Effect] = []
        hosts: dict[str, tuple[str, bool]] = {}
        counts: dict[str, int] = {}
        owner, me, push, sieve_add = self._handoffs.owner, self._me, self._push, self.sieve.add
        for url, depth in queued:
            end = url.find("/", 8)   # past "https://": the path's first slash
            if end < 0 or " " in url:
                out += self.discover(url, depth, now, Origin.RECOVERED)
                continue
            origin = url[:end]
            known = hosts.get(origin)
            if known is None:
                host = host_key(url)
                known = hosts[origin] = (host, owner(host) == me)
            host, mine = known
            sieve_add(url, now)   # the sieve may have lost its hash with the batch open at the crash
            if mine:
                push(url, host, depth, now)
                counts[host] = counts.get(host, 0) + 1
            else:
                self._pass_on(url, depth, owner(host), host, out)
        for host, n in counts.items():
            self._limits.queued(host, n)
        return out

    def discover(self, url: str, depth: int, now: float, origin: Origin, hops: int = 0, *,
                 host: str | None = None, boost: int = 0) -> list[Effect]:
        """A URL arrives from ``origin``; see the module table for each origin's path.

        ``host``: the URL's ``host_key`` when the caller knows it (never for
        the origins that normalise the URL first); else it is computed here,
        once, and travels on with the URL (``Forward.host``).
        """
        if " " in url:
            # A tail after the URL: a sitemap job or a sitemap's hints (peer/core/sitemaps/hints.py).
            return self._entry(url, depth, now, origin, hops)
        if origin is Origin.HANDED_SEEN:
            host = host or host_key(url)
            self.sieve.add(url, now)
            # A failed page queued again here [8] was handed over by its failed row: it runs.
            self._handoffs.handed_in(url, host, queued=not self.bloom.add(url) and url not in self._retrying)
            return [Seen(url)]
        if origin is Origin.HANDED_BACK:
            host = host or host_key(url)
            if self._handoffs.owner(host) != self._me:
                return self.discover(url, depth, now, Origin.RELAY)
            if self._handoffs.was_handed_in(url):
                return [Refused(url, _SEEN)]  # fetched by the host's previous owner, which handed it over [3]
            self.bloom.add(url)
            self.sieve.add(url, now)
            self._push(url, host, depth, now)
            self._limits.queued(host)
            return [Queued(url, depth)]
        if origin is Origin.RECOVERED:
            host = host or host_key(url)
            owner = self._handoffs.owner(host)
            # Already in the Bloom filter; the sieve may have lost its hash
            # with the batch open at the crash (peer/state/sievefile.py).
            self.sieve.add(url, now)
            out: list[Effect] = []
            if owner == self._me:
                self._push(url, host, depth, now)
                self._limits.queued(host)
            else:
                self._pass_on(url, depth, owner, host, out)
            return out
        if origin is Origin.RETRY:
            return self._retry(url, depth, now, host)
        relay = origin is Origin.RELAY or origin is Origin.ADOPTED
        params = self._params
        if relay or origin is Origin.SEED:
            try:
                url = normalize(url, params)
            except URLError:
                return self._refuse(url, _BAD_URL)
            host = None  # the normalised URL's, below
        elif params is not None:
            # normalize_link with the same rules made it, unless a link source
            # forgot them: the seen set must never hold two spellings [1].
            url = params.clean(url)
        if host is None:
            try:
                host = host_key(url)
            except URLError:
                return self._refuse(url, _BAD_URL)
        if origin is Origin.REQUISITE:
            refused = self._requisite_refused(url, host)
        else:
            refused = self._scope_refused(url, depth, host)
        if refused is not None:
            return self._refuse(url, refused)
        limits = self._limits
        cap = limits.check_url(url)
        if cap is not None:
            return self._refuse(url, _CAPPED[cap])  # too long, or a repeating path: the same verdict at any peer
        ring = self._handoffs.ring
        if ring is not None:
            owner = ring.owner(host)
            if owner != self._me:
                # A URL we were handed (relay) must not be dropped by the
                # sender's "recently forwarded" cache: it may be the only copy.
                return [Forward(url, depth, owner, relay, host)]
        cap = limits.admit(host)
        if cap is None and self._budgets.active:
            cap = self._budgets.spent(host)  # peer.core.crawl.budgets rule 3
        if cap is not None:
            # Not put in the Bloom filter (a link farm would fill it); a URL
            # queued before is no drop.
            return self._refuse(url, _SEEN if url in self.bloom else _CAPPED[cap])
        if not self.bloom.add(url):
            # "Maybe seen": final below bloom.disk_after, else the URL waits
            # for the exact sieve (peer/core/seen/sieve.py). It is journaled now, before
            # its page's row (peer/state/journal.py rule 1), as a URL recovery judges
            # again (Checking): not as queued, since it may be a duplicate of
            # one queued here, whose record a "done" would then cancel.
            if self.sieve.check(url, host, depth, hops, now) is _PENDING:
                return [Checking(url, depth)]
            return [_new(Refused, (url, _SEEN))]  # counted by the seen set (SeenSieve.stats)
        self.sieve.add(url, now, direct=True)
        self.sieve.note_size(self.bloom.count)
        limits.queued(host)
        if hops:
            self._jobs.set_hops(url, hops)
        self._push(url, host, depth, now, boost)
        return [Queued(url, depth)]

    def discover_links(self, links: Sequence[str], depth: int, now: float) -> list[Effect]:
        """A page's links, each judged as ``discover(link, depth, now, Origin.LINK)`` would, in order.

        One verdict a link, in the links' order, with the same counts and the
        same pushes (module docstring); a link with a tail (a space) sends the
        page's links through :meth:`discover` one by one.
        """
        if len(links) < 2 or " " in "".join(links):
            out: list[Effect] = []
            for url in links:
                out += self.discover(url, depth, now, Origin.LINK)
            return out
        ring = self._handoffs.ring
        if ring is not self._memo_ring:
            self._memo.clear()   # its owners were another ring's
            self._memo_ring = ring
        verdicts: list[Any] = [None] * len(links)
        todo: list[tuple[int, str, str]] = []   # (index, url, host) of the links that reach the filter
        memo, me, refusal = self._memo, self._me, self._refusal
        scope = self._scope
        deep = bool(scope.max_depth and depth > scope.max_depth)
        hosts: dict[str, tuple[str, bool, UrlRules | None, str]] = {}
        for i, link in enumerate(links):
            judged = memo.get(link)
            if judged is None:
                judged = self._judge_link(link, ring, hosts)
                if len(memo) >= _MEMO_LINKS:
                    memo.clear()
                memo[link] = judged
            url, host, allowed, why, owner = judged
            if not host:
                verdicts[i] = refusal(url, _BAD_URL)
            elif deep or not allowed:
                # The host named first when both refuse, as discover does.
                verdicts[i] = refusal(url, _DEPTH if deep and allowed else _HOST)
            elif why is not None:
                verdicts[i] = refusal(url, why)
            elif owner != me:
                verdicts[i] = Forward(url, depth, owner, False, host)
            else:
                todo.append((i, url, host))
        if todo:
            self._admit(todo, verdicts, depth, now)
        return verdicts

    def _judge_link(self, link: str, ring: HashRing | None,
                    hosts: dict[str, tuple[str, bool, UrlRules | None, str]]) -> _Judged:
        """What ``discover``'s steps before the host cap say of a link, none counted (``_Judged``).

        ``hosts``: the scheme and authority of a normalised link -> (host, in
        scope, URL rules, owner), for the links of one page: ``host_key``'s fast
        path gives every URL with that prefix (at most MAX_URL_LENGTH long) the same host.
        """
        url = self._params.clean(link) if self._params is not None else link   # note [1]
        end = url.find("/", 8)
        key = url[:end] if end > 0 and len(url) <= MAX_URL_LENGTH else ""
        known = hosts.get(key) if key else None
        if known is None:
            try:
                host = host_key(url)
            except URLError:
                return (url, "", False, _BAD_URL, "")
            rules = self._rules_for(host)
            known = (host, self._scope.allows_host(host), rules or None,
                     self._me if ring is None else ring.owner(host))
            if key and (key == "http://" + host or key == "https://" + host):
                hosts[key] = known
        host, allowed, rules, owner = known
        why: Reason | None = None
        if rules is not None:
            cause = rules.excluded(url)
            if cause is not None:
                why = _EXCLUDED[cause]
        if why is None:
            cap = self._limits.check_url(url)
            if cap is not None:
                why = _CAPPED[cap]
        return (url, host, allowed, why, owner)

    def _admit(self, todo: list[tuple[int, str, str]], verdicts: list[Any], depth: int, now: float) -> None:
        """The host cap, the budgets and the seen set for the links of :meth:`discover_links` that
        reach them, in order; ``discover``'s last steps, the filter asked about all of them at once."""
        bloom, sieve, limits, budgets, push = self.bloom, self.sieve, self._limits, self._budgets, self._push
        present = self._present
        if bloom is not self._present_bloom:
            present.clear()   # the driver put in another filter (recovery)
            self._present_bloom = bloom
        ask = [url for _, url, _ in todo if url not in present]
        found = dict(zip(ask, bloom.contains_many(ask))) if ask else {}
        if len(present) + len(ask) > _MEMO_LINKS:
            present.clear()
        admit = limits.admit
        # Below disk_after the filter's "maybe seen" is final (SeenSieve.check): counted at the end.
        exact, drops = sieve.exact, 0
        for i, url, host in todo:
            known = found.get(url, True)   # not asked: in ``present``
            cap = admit(host)
            if cap is None and budgets.active:
                cap = budgets.spent(host)
            if cap is not None:
                verdicts[i] = self._refusal(url, _SEEN if known or url in bloom else _CAPPED[cap])
                continue
            if known or not bloom.add(url):
                # A link the filter held before the page: add would say "maybe seen" and set no bit.
                if not exact:
                    drops += 1
                    verdicts[i] = _new(Refused, (url, _SEEN))
                elif sieve.check(url, host, depth, 0, now) is _PENDING:
                    verdicts[i] = Checking(url, depth)
                else:
                    verdicts[i] = _new(Refused, (url, _SEEN))
            else:
                sieve.add(url, now, direct=True)
                sieve.note_size(bloom.count)
                exact = sieve.exact
                limits.queued(host)
                push(url, host, depth, now, 0)
                verdicts[i] = Queued(url, depth)
            present.add(url)   # in the filter now, for good
        if drops:
            sieve.dropped(drops)

    def _retry(self, url: str, depth: int, now: float, host: str | None) -> list[Effect]:
        """A failed page queued again [8]: the scope and the rules in force now still judge it."""
        if host is None:
            try:
                host = host_key(url)
            except URLError:
                return self._refuse(url, _BAD_URL)
        refused = self._scope_refused(url, depth, host)
        if refused is not None:
            return self._refuse(url, refused)
        ring = self._handoffs.ring
        if ring is not None:
            owner = ring.owner(host)
            if owner != self._me:
                return [Forward(attach(url, RETRY), depth, owner, True, host)]
        if self.bloom.add(url):
            self.sieve.add(url, now, direct=True)  # new here: its host's failures were another peer's
        self._handoffs.take_fetched_elsewhere(url)  # handed over as fetched, and failed there: it runs
        self._push(url, host, depth, now)
        return [Queued(url, depth)]

    def _rules_for(self, host: str) -> UrlRules | None:
        """The URL rules ``host`` is judged by: its ``[[site]]`` block's, else ``[crawl]``'s."""
        return self._urlrules if not self._sites else self._sites.for_host(host).urlrules

    def _scope_refused(self, url: str, depth: int, host: str) -> Reason | None:
        """Why a page's URL is refused by the scope and the URL rules, or None."""
        scope = self._scope
        if not scope.allows(url, depth, host=host):
            # Which of its two tests said no, asked only here: the host's
            # (named first when both refuse), unless the depth's alone.
            deep = scope.max_depth and depth > scope.max_depth
            return _DEPTH if deep and scope.allows_host(host) else _HOST
        rules = self._rules_for(host)
        if rules:
            cause = rules.excluded(url)
            if cause is not None:
                return _EXCLUDED[cause]  # peer/core/urls/rules.py: rules, skip_extensions
        return None

    def _requisite_refused(self, url: str, host: str) -> Reason | None:
        """Why a page requisite is refused by the scope and the URL rules, or None [7]."""
        scope = self._scope
        if scope.denies_host(host) or (not self._any_host and not scope.allows_host(host)):
            return _HOST
        rules = self._rules_for(host)
        if rules is not None and rules.rules:
            rule = rules.first_rule(url)
            if rule is not None and not rule.include:
                return Reason.RULES
        return None

    def rescope(self, urlrules: UrlRules, sites: SiteSettings) -> None:
        """The URL rules and ``[[site]]`` blocks in force from now on (a live change: ``CrawlCore.adopt``)."""
        self._urlrules = urlrules
        self._sites = sites
        self._memo.clear()   # judged by the rules before

    def _refuse(self, url: str, reason: Reason) -> list[Effect]:
        """:meth:`_refusal`, as ``discover``'s answer."""
        return [self._refusal(url, reason)]

    def _refusal(self, url: str, reason: Reason) -> Effect:
        """The one place a refusal is counted (``Reason``'s docstring says where)."""
        if reason is _HOST or reason is _DEPTH:
            self._summary.out_of_scope += 1
        elif reason in _CAUSES:
            self._summary.excluded[_CAUSES[reason]] += 1
        elif reason in _CAPS:
            self._limits.dropped(_CAPS[reason])
        effect: Effect = _new(Refused, (url, reason))
        return effect

    def url_rules(self, url: str) -> UrlRules:
        """The URL rules in force for ``url``'s host, as ``discover`` reads them: its [[site]] block's, or the global ones."""
        if not self._sites:
            return self._urlrules
        try:
            host = host_key(url)
        except URLError:
            return self._urlrules
        return self._rules_for(host) or _NO_RULES

    def judge(self, url: str) -> Judgement:
        """What the URL rules in force say of ``url`` (its parameters cleaned), and which rule decided."""
        clean = self._params.clean(url) if self._params is not None else url
        return self.url_rules(clean).judge(clean)

    def sieve_verdicts(self, batch: SieveBatch, new: list[bool], now: float) -> list[Effect]:
        """The sieve's answer for ``batch``: new URLs are queued after all; duplicates are dropped."""
        out: list[Effect] = []
        owner_of, me = self._handoffs.owner, self._me
        for p in self.sieve.verdicts(batch, new, now):
            owner = owner_of(p.host)
            if owner != me:
                out.append(Forward(p.url, p.depth, owner, True, p.host))  # its host moved while it waited
                continue
            # Into the sieve with the next batch, after this Queued is
            # committed: the sieve never holds a URL the journal does not.
            self.sieve.add(p.url, now)
            out.append(Queued(p.url, p.depth))
            self._limits.queued(p.host)
            if p.hops:
                self._jobs.set_hops(p.url, p.hops)
            self._push(p.url, p.host, p.depth, now)
        return out

    def sieve_readd(self, urls: Iterable[str], now: float) -> None:
        """Hashes the sieve may have lost in a crash (the recovered journal's rows)."""
        for url in urls:
            self.sieve.add(url, now)
