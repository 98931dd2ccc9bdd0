"""Budgets: the pages and bytes a crawl may spend on one host, one ``[[site]]`` block, one registered domain (pure).

A part of ``peer.core.crawl.core.CrawlCore``, counted by the peer that owns
the host. Where ``crawl.max_urls_per_host`` (``peer.core.crawl.limits``
rule 2) bounds what a host may make this peer *queue*, a budget bounds what
the crawl *spends* on it: the requests the host answers and the bytes it
sends. A calendar (``/cal/2026/12`` linking the next month for ever) or a
path that deepens (``/a/a/a/...``) stops at its budget, as Heritrix's queue
budgets, url-frontier's per-domain limit and spider-rs's ``budget`` do.

Rules (config keys in brackets; 0, the default, is no budget):

1. **What a page costs** [``crawl.max_pages_per_host``,
   ``max_pages_per_domain``, a block's ``max_pages``]: one a page request,
   reserved when ``CrawlCore.admit`` says ``Fetch``, so the requests in
   flight are counted and a budget is never passed (as ``max_pages`` is
   kept: ``ring.membership.budget`` rule 4). A retry is a request and costs
   one too: the budget is what the server's log shows. robots.txt, sitemaps
   and page requisites cost nothing (they are not pages).
2. **What a byte costs** [``max_bytes_per_host``, ``max_bytes_per_domain``,
   a block's ``max_bytes``]: the body's bytes as they came on the wire
   (``FetchResult.raw_bytes``, before content decoding; the summary's
   ``on the wire`` figure, ``wire_bytes`` in stats.json), counted when the
   answer comes. A size is known only then, so a bytes budget is checked
   before each request and passed by at most the answers in flight, each
   at most ``crawl.max_body``.
3. **Spent** when its count reaches its budget. Then the URLs of its hosts
   queued here are dropped at their turn, without a request (``Done`` in
   the journal), and a new URL of them is refused before the seen set, as
   the URL caps refuse one. Both are counted as the not-requested cause
   ``budget_host``, ``budget_site`` or ``budget_domain`` (the first budget
   spent, in that order): never a failure. A page requisite of a spent host
   is refused too (the URL caps hold for requisites: ``peer.core.crawl.discovery``
   note 7); a sitemap job is still read, its URLs refused. Like the caps' causes they count
   links met, a URL once for each page that links it after the budget was
   spent (``ring.vocabulary`` rule 3). ``cap.budgets_spent`` counts the
   hosts, blocks and domains whose budget was spent.
4. **A block or a domain across owners.** A ``[[site]]`` block's hosts, and
   a registered domain's (``peer.core.urls.domains.registered_domain``),
   may be owned by several members of a ring, and each counts only its
   own. The rule that never overshoots without a message between them: the
   budget is split evenly among the ring's members, each spending its
   share (``budget // n``, one more for the first ``budget % n`` members by
   id: the shares add up to the budget). Its cost: a block or a domain
   whose hosts all fall on one member gets only that member's share, a
   third of the budget in a ring of three. A host's budget has one owner
   and needs no split. A solo crawl spends the whole budget. The shares
   follow the live members: a member that joins mid-crawl shrinks the
   others' shares, and what they spent before stays spent (the sum may
   then pass the budget by what the smaller shares no longer allow).
5. **Across a resume.** Each host's counts ride with its page rows in the
   journal's counters (``budget.pages:<host>``, ``budget.bytes:<host>``,
   only when a budget is set) and in every snapshot's; a resumed peer sums
   them again into its blocks and domains (:meth:`Budgets.restore`). The
   requests of a host since its last row (its retries) are forgotten by a
   kill -9. A host that moves to another member starts afresh there: the
   counts stay with the peer that spent them.

Memory, only with a budget set: two ints a host fetched, and a block's or a
domain's two ints; the host's block and domain are memoised (cleared when
full, as ``Scope`` does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from peer.core.crawl.limits import Cap
from peer.core.urls.domains import registered_domain
from peer.core.urls.normalize import hostname

if TYPE_CHECKING:
    from peer.core.config.sections import CrawlConfig
    from peer.core.config.sites import SiteSettings
    from peer.core.crawl.limits import Limits

__all__ = ["Budgets", "BUDGET_CAPS", "PAGES_PREFIX", "BYTES_PREFIX", "share"]

#: The caps a budget hit is counted as, in the order rule 3 names the first spent.
BUDGET_CAPS = (Cap.BUDGET_HOST, Cap.BUDGET_SITE, Cap.BUDGET_DOMAIN)
#: A host's counts as the journal's counters name them (rule 5).
PAGES_PREFIX = "budget.pages:"
BYTES_PREFIX = "budget.bytes:"
#: Hosts whose block and domain are memoised before the memo is cleared.
MEMO_SIZE = 65536


def share(budget: int, rank: int, members: int) -> int:
    """Rule 4: the share of ``budget`` of the member ``rank`` (by id) of ``members``; they add up to it."""
    if members <= 1:
        return budget
    return budget // members + (1 if rank < budget % members else 0)


class _Count:
    """Pages and bytes spent on one host, block or domain."""

    __slots__ = ("pages", "bytes")

    def __init__(self) -> None:
        self.pages = 0
        self.bytes = 0


class Budgets:
    """The budgets of one peer's crawl (module rules). ``sites()``: the ``[[site]]`` blocks in force."""

    __slots__ = ("active", "_crawl", "_sites", "_limits", "_rank", "_members", "_hosts", "_blocks",
                 "_domains", "_memo", "_spent", "_domain_of", "_me", "_ring", "_ring_seen")

    def __init__(self, crawl: CrawlConfig, sites: Callable[[], SiteSettings], limits: Limits, *,
                 me: str = "", ring: Callable[[], Iterable[str] | None] = lambda: None,
                 domain_of: Callable[[str], str] = registered_domain) -> None:
        self._me = me
        self._ring = ring
        self._ring_seen: object = None
        self._crawl = crawl
        self._sites = sites
        self._limits = limits
        self._domain_of = domain_of
        self._rank, self._members = 0, 1
        self._hosts: dict[str, _Count] = {}
        self._blocks: dict[tuple[str, ...], _Count] = {}
        self._domains: dict[str, _Count] = {}
        self._memo: dict[str, tuple[tuple[str, ...] | None, str | None]] = {}
        self._spent: set[tuple[Cap, str]] = set()
        #: Whether any budget is set: without one the crawl core asks nothing of this part.
        self.active = False
        self.configure(crawl)

    def configure(self, crawl: CrawlConfig) -> None:
        """The ``[crawl]`` keys in force (a live change of ``[[site]]`` blocks is read through ``sites``)."""
        self._crawl = crawl
        sites = self._sites()
        self._memo.clear()
        self.active = bool(crawl.max_pages_per_host or crawl.max_bytes_per_host or crawl.max_pages_per_domain
                           or crawl.max_bytes_per_domain
                           or any(b.max_pages or b.max_bytes for b in getattr(sites, "blocks", ())))

    def _ring_now(self) -> None:
        """The ring's members now (rule 4): this peer's rank among them by id, and their number;
        computed again only when the ring is another object (a membership change)."""
        ring = self._ring()
        if ring is self._ring_seen:
            return
        self._ring_seen = ring
        ids = sorted(ring) if ring is not None else []
        self._members = max(len(ids), 1)
        self._rank = ids.index(self._me) if self._me in ids else 0

    # -- where a host's counts go ----------------------------------------------------

    def _keys(self, host: str) -> tuple[tuple[str, ...] | None, str | None]:
        """The host's block (by its hosts, when it has a budget) and registered domain (with one)."""
        known = self._memo.get(host)
        if known is not None:
            return known
        block: tuple[str, ...] | None = None
        sites = self._sites()
        if sites:
            i = sites.for_host(host).block
            if i >= 0:
                b = sites.blocks[i]
                if b.max_pages or b.max_bytes:
                    block = b.hosts
        domain = None
        crawl = self._crawl
        if crawl.max_pages_per_domain or crawl.max_bytes_per_domain:
            domain = self._domain_of(hostname(host))
        if len(self._memo) >= MEMO_SIZE:
            self._memo.clear()
        known = self._memo[host] = (block, domain)
        return known

    def _share(self, budget: int | None) -> int | None:
        """This peer's share of a block's or a domain's ``budget`` (rule 4); None: no budget."""
        return share(budget, self._rank, self._members) if budget else None

    def _block_budget(self, hosts: tuple[str, ...]) -> tuple[int | None, int | None]:
        for b in getattr(self._sites(), "blocks", ()):
            if b.hosts == hosts:
                return self._share(b.max_pages), self._share(b.max_bytes)
        return None, None  # the block is gone (a live change): no budget

    # -- rule 3: spent ---------------------------------------------------------------

    def spent(self, host: str) -> Cap | None:
        """The first budget of ``host`` that is spent (rule 3), or None. Not counted: the caller
        counts a URL it drops with ``Limits.dropped``."""
        crawl = self._crawl
        c = self._hosts.get(host)
        if c is not None and _over(c, crawl.max_pages_per_host or None, crawl.max_bytes_per_host or None):
            return Cap.BUDGET_HOST
        block, domain = self._keys(host)
        if block is None and domain is None:
            return None
        self._ring_now()
        if block is not None and _over(self._blocks.get(block) or _ZERO, *self._block_budget(block)):
            return Cap.BUDGET_SITE
        if domain is not None and _over(self._domains.get(domain) or _ZERO, self._share(crawl.max_pages_per_domain),
                                        self._share(crawl.max_bytes_per_domain)):
            return Cap.BUDGET_DOMAIN
        return None

    # -- rules 1, 2: spending --------------------------------------------------------

    def page(self, host: str) -> None:
        """A page request of ``host`` is about to be made (rule 1)."""
        self._spend(host, 1, 0)

    def received(self, host: str, wire_bytes: int) -> None:
        """An answer of ``host`` came with ``wire_bytes`` of body on the wire (rule 2)."""
        if wire_bytes > 0:
            self._spend(host, 0, wire_bytes)

    def _spend(self, host: str, pages: int, nbytes: int) -> None:
        was = self.spent(host)
        for c in self._counts(host):
            c.pages += pages
            c.bytes += nbytes
        now = self.spent(host)
        if now is not None and now is not was:
            key = host if now is Cap.BUDGET_HOST else str(self._keys(host)[0 if now is Cap.BUDGET_SITE else 1])
            if (now, key) not in self._spent:
                self._spent.add((now, key))
                self._limits.hits[Cap.BUDGETS_SPENT] += 1

    def _counts(self, host: str) -> list[_Count]:
        out = [self._hosts.get(host) or self._hosts.setdefault(host, _Count())]
        block, domain = self._keys(host)
        if block is not None:
            out.append(self._blocks.get(block) or self._blocks.setdefault(block, _Count()))
        if domain is not None:
            out.append(self._domains.get(domain) or self._domains.setdefault(domain, _Count()))
        return out

    def host_spent(self, host: str) -> tuple[int, int]:
        """(pages, bytes) spent on ``host`` by this peer."""
        c = self._hosts.get(host)
        return (c.pages, c.bytes) if c is not None else (0, 0)

    # -- rule 5: across a resume -----------------------------------------------------

    def counters(self, host: str | None = None) -> dict[str, float]:
        """The counts as the journal keeps them: ``host``'s, or every host's (a snapshot)."""
        if not self.active:
            return {}
        hosts = self._hosts if host is None else {host: self._hosts[host]} if host in self._hosts else {}
        out: dict[str, float] = {}
        for h, c in hosts.items():
            out[PAGES_PREFIX + h] = c.pages
            out[BYTES_PREFIX + h] = c.bytes
        return out

    def restore(self, counters: Mapping[str, float]) -> None:
        """A resumed peer's counts from its journal's counters, summed again into blocks and domains."""
        for name, value in counters.items():
            if name.startswith(PAGES_PREFIX):
                host, pages, nbytes = name[len(PAGES_PREFIX):], int(value), 0
            elif name.startswith(BYTES_PREFIX):
                host, pages, nbytes = name[len(BYTES_PREFIX):], 0, int(value)
            else:
                continue
            self._spend(host, pages, nbytes)


_ZERO = _Count()


def _over(c: _Count, pages: int | None, nbytes: int | None) -> bool:
    """Whether ``c`` reached a budget of ``pages`` or ``nbytes`` (None: no budget; a share of 0
    of a budget split among many members, rule 4, is spent at once)."""
    return (pages is not None and c.pages >= pages) or (nbytes is not None and c.bytes >= nbytes)
