"""``python -m peer try URL --ring cluster.toml``: what the crawl would do with one URL.

Scrapy users reach for ``scrapy shell``; this is the same idea for ringcrawl's
rules. No rule is restated here: the URL goes through the crawl core itself
(``peer.core.crawl.core.CrawlCore``), in virtual time, and every verdict is printed
as the core gives it: a URL it does not take comes back as a ``Refused`` effect
whose ``Reason`` is shown (``refusal``), with the rule or key that decided:

1. ``CrawlCore.discover`` of the URL, met for the first time: normalisation
   (with ``strip_params`` and ``sort_query``: the URL shown is the one the
   crawl keeps, and the parameters stripped are named), scope
   (``allow_hosts``, ``deny_hosts``, then ``skip_extensions`` and
   ``rules``, the rule that decided named), the URL caps, and ownership in
   cluster.toml's ring (every listed peer taken as alive): with ``--peer``,
   whether that one would fetch it or forward it;
2. ``CrawlCore.admit`` and ``on_robots``: robots.txt, fetched through the
   crawl's fetcher, and the core's answer to it (a 429 or 503 with
   Retry-After holds the host until then, as in a crawl);
3. the fetch itself (``peer.net.fetcher``: the SSRF guard, ``[dns] resolve``,
   ``max_body``, the timeout), a redirect's target with the verdict of the
   crawl core's ``on_result`` (a core that fetched the page holds it as
   seen: a redirect back to it, or one past ``max_redirects``, is not
   followed), and
   the addresses its connection tried, in order (happy eyeballs, RFC 8305),
   with the one that connected;
4. what the page says of itself (``peer.core.page.directives``): its canonical
   URL and robots directives, each with its source (the head or the HTML),
   and what the crawl does about them; then the links found
   (``CrawlCore.fetched`` says whether to parse), each with its
   ``discover`` verdict and, for a frame, a meta refresh or a ``<link
   rel>``, its source; cut at ``max_links_per_page`` as the crawl cuts
   them, ``nofollow`` honoured;
5. the fields the ``[extract]`` rules (or the user function) take, as the
   crawl stores them: after a field's ``strip`` and ``re``, with the value
   the selector found beside it when they changed it;
6. a sitemap (``peer.core.sitemaps.document``): a URL named by robots.txt's
   ``Sitemap:`` lines or ``[sitemaps] seeds`` is fetched as the crawl
   fetches sitemaps (up to ``sitemaps.max_bytes``), and any 2xx answer that
   is no HTML is read as one: its kind, its URLs or child sitemaps, the
   problems counted, and the first URLs with their hints and verdicts. Its
   scope verdict is the crawl's: read, though ``crawl.rules`` refuse it as a
   page (they judge the URLs it lists), so one the rules refuse waits for
   its host's robots.txt before its scope line is said.

A dry run: no results file, no crawl state, no ring socket; only the two
requests (robots.txt, the page) leave the machine. A URL out of scope is still
fetched, to show its links and fields, and the verdict says the crawl would
not; a URL robots.txt disallows is not fetched unless ``--ignore-robots``.
"""

from __future__ import annotations

import argparse
import sys
import time
from ring.commandnames import Command, command, spoken
from collections.abc import Sequence

from typing import TYPE_CHECKING

from peer.core.config.cluster import ClusterConfig, CrawlConfig
from peer.core.dns.eyeballs import ATTEMPT_DELAY
from peer.state.configfile import load_config
from peer.errors import PeerError, URLError, user_error
from ring.durations import duration
from ring.tools.shell import reader_gone

if TYPE_CHECKING:
    from peer.core.crawl.core import CrawlCore, Parsed, Refused, Row
    from peer.core.config.retry import RetryConfig
    from peer.core.http.result import FetchResult

__all__ = ["main", "refusal"]

EXIT_USAGE = 2
#: Links printed unless --links says otherwise.
DEFAULT_LINKS = 30


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=command(Command.PEER, sys.argv[0]) + " try",
        description=("Fetch one URL through the crawl's own fetcher, scope, robots.txt, ownership\n"
                     "and extraction rules, and print every verdict, the links found (with their\n"
                     "verdicts) and the extracted fields. A dry run: nothing is written to the\n"
                     "results or the crawl state."),
        epilog=("examples:\n"
                "  python -m peer try http://s001.web.test:8080/ --ring solo.toml\n"
                "  python -m peer try http://shop.web.test:8080/book/1 --ring cluster.toml --peer p2\n"
                "Exit status: 0 when the page was fetched (whatever its status), 1 when it was not "
                "(robots.txt, a fetch error), 2 for a usage or config error."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL", help="the URL to try")
    p.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml whose rules apply")
    p.add_argument("--peer", metavar="ID", help="judge ownership as this peer would (default: the owner)")
    p.add_argument("--links", metavar="N", type=int, default=DEFAULT_LINKS,
                   help=f"links printed at most (default {DEFAULT_LINKS}; 0: all)")
    p.add_argument("--ignore-robots", action="store_true",
                   help="fetch the page even if robots.txt disallows it (the crawl would not)")
    # Commands named as the user started this one (installed, or from a checkout).
    p.description, p.epilog = spoken(p.description or "", sys.argv[0]), spoken(p.epilog or "", sys.argv[0])
    return p


#: The Bloom filter of a core that judges one URL (a real crawl's would be
#: sized for millions: a fresh core a verdict must cost a fraction of a ms).
_JUDGE_CAPACITY = 64
#: The id a core judges as when no --peer is given: no member's, so every
#: URL of a ring goes to its owner, who is named.
_NOBODY = ""


def refusal(core: CrawlCore, e: Refused) -> str:
    """The core's refusal ``e`` (``peer.core.crawl.decisions.Reason``) as one phrase, its key named."""
    from peer.core.crawl.decisions import Reason

    reason = e.reason
    if reason is Reason.RULES or reason is Reason.EXTENSION:
        return f"out of scope: {core.discovery.judge(e.url).why()}: not crawled"
    if reason is Reason.REDIRECTS:
        return (f"not followed: past crawl.max_redirects ({core.cfg.crawl.max_redirects}); "
                "the crawl records the page as 'too_many_redirects'")
    if reason is Reason.HOST and core.cfg.crawl.allow_domains:
        return ("out of scope (host: in no crawl.allow_domains domain"
                + (" and matching no crawl.allow_hosts pattern" if core.cfg.crawl.allow_hosts else "")
                + ", or denied by crawl.deny_hosts): not crawled")
    words = {
        Reason.BAD_URL: "not a URL the crawl would take",
        Reason.HOST: "out of scope (host): not crawled",
        Reason.DEPTH: "out of scope (deeper than max_depth): not crawled",
        Reason.SEEN: "seen already: the crawl does not queue it again",
        Reason.GIVEN_UP: "dropped: its host was given up (down, or asking for a Retry-After over "
                         "politeness.max_retry_after, for retry.down_give_up)",
    }
    return words.get(reason) or f"dropped by crawl.{reason.value}"  # the caps: max_url_length...


class _Rules:
    """Verdicts of the crawl core itself, one fresh core a URL (each met for the first time)."""

    def __init__(self, cfg: ClusterConfig, peer: str | None) -> None:
        import dataclasses

        from ring.hashring import HashRing

        self.cfg, self.peer = cfg, peer
        self.small = dataclasses.replace(
            cfg, bloom=dataclasses.replace(cfg.bloom, capacity=_JUDGE_CAPACITY))
        self.ring = (HashRing({p.id: p.weight for p in cfg.peers}, vnodes=cfg.ring.vnodes)
                     if len(cfg.peers) > 1 else None)

    def core(self, peer_id: str) -> CrawlCore:
        from peer.core.crawl.core import CrawlCore

        return CrawlCore(self.small, peer_id)

    def verdict(self, url: str, depth: int) -> str:
        """What ``CrawlCore.discover`` does with one URL, as one phrase: its own verdict, shown."""
        from peer.core.crawl.core import Forward, Origin, Queued, Refused
        from peer.core.urls.normalize import host_key

        core = self.core(self.peer if self.peer is not None else _NOBODY)
        core.ring = self.ring
        for e in core.discover(url, depth, 0.0, Origin.LINK):
            if isinstance(e, Refused):
                return refusal(core, e)
            if isinstance(e, Forward | Queued):
                # The rule that let it in, if one did: the core's rules for its host.
                judged = core.discovery.judge(e.url)
                ruled = f" ({judged.why()})" if judged.rule is not None else ""
                domain = core.scope.covering_domain(host_key(e.url))
                if domain is not None:  # let in by crawl.allow_domains (peer/core/urls/scope.py)
                    ruled = f" (host under crawl.allow_domains {domain!r})" + ruled
                if isinstance(e, Queued):
                    return (f"in scope{ruled}, would be queued" if self.ring is None
                            else f"in scope{ruled}: fetched by {self.peer}")
                if self.peer is None:
                    return f"in scope{ruled}: fetched by {e.owner}"
                return f"in scope{ruled}: {self.peer} forwards it to its owner {e.owner}"
        return "not queued"  # pragma: no cover - a fresh core leaves one verdict for a URL

    def priority(self, url: str, depth: int, sitemap_priority: float | None = None) -> str:
        """The band ``url`` is queued in at ``depth`` and why (frontier rule 11), as one phrase."""
        from peer.core.frontier.order import BANDS, band_of, make_slot, sitemap_boost
        from peer.core.urls.normalize import normalize
        from peer.core.urls.priority import parse_priority_rules

        fr = self.cfg.frontier
        if fr.order == "fifo":
            return "one FIFO a host, in the order found (frontier.order = \"fifo\")"
        why = [f"depth {depth}"]
        boost = sitemap_boost(sitemap_priority)
        if boost:
            why.append(f"sitemap <priority> {sitemap_priority:g}: {boost:+d}")
        from peer.core.urls.rules import parse_url_rules

        try:
            clean = normalize(url, parse_url_rules(self.cfg.crawl, str(self.cfg.path)).params)
        except URLError:
            clean = url
        from peer.core.config.sites import SiteSettings
        from peer.core.urls.normalize import host_key

        cfg = self.cfg
        prules = parse_priority_rules(fr.priority, str(cfg.path))
        try:  # a [[site]] block's priority replaces frontier.priority for its hosts
            prules = SiteSettings(cfg.sites, cfg.crawl, cfg.politeness, cfg.retry, prules).for_host(host_key(clean)).priority
        except URLError:
            pass
        rule = prules.first(clean)
        if rule is not None:
            boost += rule.boost
            why.append(f"{rule.boost:+d} by {rule}")
        band = band_of(make_slot(depth, boost))
        return f"band {band} of 0-{BANDS - 1}, lower served first in its host's queue ({', '.join(why)})"

    def owner(self, url: str) -> str | None:
        """The peer that fetches ``url``'s host (None: a ring of one)."""
        from peer.core.urls.normalize import host_key

        if self.ring is None:
            return None
        try:
            return self.ring.owner(host_key(url))
        except URLError:
            return None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cfg = load_config(args.ring)
        if args.peer is not None:
            cfg.peer(args.peer)
        if args.links < 0:
            raise PeerError("--links: expected a number >= 0")
        from peer.core.urls.normalize import normalize
        from peer.core.urls.rules import parse_url_rules

        params = parse_url_rules(cfg.crawl, str(cfg.path)).params
        try:
            url = normalize(args.url, params)
        except URLError as exc:
            raise PeerError(f"{args.url!r}: not a URL the crawl would take ({exc})") from None
        args.stripped = params.removed(normalize(args.url)) if params else []
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    import trio

    try:
        code: int = trio.run(_try, cfg, url, args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return reader_gone()
    except BaseException as exc:
        err = user_error(exc)
        if err is None:
            raise
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE


def _say(label: str, text: str) -> None:
    print(f"{label + ':':<11} {text}")


def _normalized(urls: Sequence[str]) -> set[str]:
    from peer.core.urls.normalize import normalize

    out = set()
    for u in urls:
        try:
            out.add(normalize(u))
        except URLError:
            pass
    return out


def _connect(res: FetchResult) -> None:
    """The addresses the fetch's connection tried, in order, and the one that connected."""
    if len(res.tried) == 1 and res.address is not None:
        _say("connect", f"{res.address} connected, the first address tried")
    elif res.tried:
        won = f"{res.address} connected" if res.address is not None else "none connected"
        _say("connect", f"tried {', '.join(res.tried)} (IPv6 first, "
             f"{ATTEMPT_DELAY * 1000:.0f} ms apart: RFC 8305): {won}")


def _sitemap(cfg: ClusterConfig, rules: _Rules, url: str, body: bytes, robots_url: str | None,
             limit: int) -> bool:
    """Read ``body`` as the crawl reads a sitemap; False (nothing said) if it is none."""
    import time

    from peer.core.sitemaps.document import SitemapKind, host_authority, parse

    grant = host_authority(robots_url) if robots_url is not None else None
    sm = parse(body, url, [grant] if grant is not None else [], cfg.sitemaps.limits())
    if sm.kind is SitemapKind.NONE and not sm.problems.keys() - {"not_a_sitemap"}:
        return False
    kind = {SitemapKind.URLSET: "urlset", SitemapKind.INDEX: "sitemap index",
            SitemapKind.TEXT: "text sitemap", SitemapKind.NONE: "no usable sitemap"}[sm.kind]
    listed = (f"{len(sm.sitemaps):,} child sitemaps" if sm.kind is SitemapKind.INDEX
              else f"{len(sm.urls):,} URLs")
    _say("sitemap", f"{kind}: {listed} of {sm.entries:,} entries, {sm.size:,} bytes read")
    _say("authority", f"{url.rsplit('/', 1)[0]}/ (its directory)"
         + (f" and all of {grant.origin} (named by {robots_url})" if grant is not None else ""))
    problems = ", ".join(f"{k} {n}" for k, n in sorted(sm.problems.items()))
    _say("problems", problems + " (counted as drops in a crawl)" if problems else "none")
    refs = sm.sitemaps if limit == 0 else sm.sitemaps[:limit]
    for ref in refs:
        print(f"  {ref.loc}  a sitemap one level deeper: fetched by "
              f"{rules.owner(ref.loc) or 'this peer'} (sitemaps.max_depth {cfg.sitemaps.max_depth})")
    shown = sm.urls if limit == 0 else sm.urls[:limit]
    for u in shown:
        hints = [f"lastmod {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(u.lastmod))}"
                 if u.lastmod is not None else "",
                 f"priority {u.priority:g}" if u.priority is not None else "",
                 u.changefreq.value if u.changefreq is not None else ""]
        said = ", ".join(h for h in hints if h)
        verdict = rules.verdict(u.loc, 0)
        if verdict.startswith("in scope"):
            verdict += "; " + rules.priority(u.loc, 0, u.priority)
        print(f"  {u.loc}  {verdict}" + (f" ({said})" if said else ""))
    more = len(sm.urls) - len(shown) + len(sm.sitemaps) - len(refs)
    if more > 0:
        print(f"  ... {more} more (--links 0 shows all)")
    return True


def _sitemap_scope(why: str) -> str:
    """The scope line of a sitemap the crawl reads (``why``: how it finds it)."""
    return (f"a sitemap ({why}): the crawl reads it for the URLs it lists, which crawl.rules "
            "and the scope judge as links; it is no page (no row, not counted in max_pages)")


def _coding(crawl: CrawlConfig, res: FetchResult) -> str:
    """What was asked for (peer.core.http.inflate) and what came on the wire."""
    from peer.core.http.inflate import accept_encoding

    return (f"asked for {accept_encoding(crawl.accept_encodings)} (crawl.accept_encodings), "
            f"zstd window up to {crawl.zstd_max_window:,} bytes; {res.raw_bytes:,} bytes on the wire"
            + (f": {res.detail}" if res.error == "decode" else ""))


async def _try(cfg: ClusterConfig, url: str, args: argparse.Namespace) -> int:
    from peer.core.crawl.core import Drop, Fetch, FetchRobots, FetchSitemap, Origin, Requeue, Row, Sleep, Start, parse_response
    from peer.net.fetcher import Fetcher
    from peer.net.resolver import Resolver
    from peer.core.crawl.robots import MAX_ROBOTS_BYTES
    from peer.core.http.cookies import cookie_words

    rules = _Rules(cfg, args.peer)
    # The User-Agent its owner (or --peer) sends: {machine} replaced (peer.core.config.workers).
    fetching = rules.owner(url) or args.peer or cfg.peers[0].id
    cfg = cfg.for_peer(fetching)
    rules = _Rules(cfg, args.peer)
    crawl = cfg.crawl
    _say("url", url)
    if args.stripped:
        _say("params", f"stripped {', '.join(args.stripped)} (crawl.strip_params): the crawl keeps the URL above")
    # A sitemap is no page: the crawl reads one named by robots.txt or
    # [sitemaps] seeds whatever crawl.rules say of it (they judge the URLs
    # it lists). One the rules refuse is said after robots.txt is read.
    sitemap_seed = url in _normalized(cfg.sitemaps.seeds)
    verdict = rules.verdict(url, 0)
    held_verdict = None
    if sitemap_seed:
        _say("scope", _sitemap_scope("[sitemaps] seeds lists it"))
    elif (verdict.startswith("out of scope:") and cfg.sitemaps.from_robots
          and crawl.obey_robots):
        held_verdict = verdict
    else:
        _say("scope", verdict)
    # The page's own core: alone (every host its own), the URL queued whatever
    # its scope (it is fetched to be shown), in virtual time from 0.
    core = rules.core(_NOBODY)
    now = 0.0
    core.discover(url, 0, now, Origin.HANDED_BACK)
    step = core.next(now)
    assert isinstance(step, Start)
    job = step.job
    # The [[site]] block whose settings the URL's host is crawled with (peer/core/config/sites.py).
    _say("site", core.sites.label(job.host))
    # The band its host's queue serves it in (frontier rule 11), found at depth 0 as here.
    _say("priority", rules.priority(url, 0))
    adm = core.admit(job, now)
    resolver = Resolver(cfg.dns, allow_private=crawl.allow_private)
    async with Fetcher(crawl, resolver, sites=core.sites) as fetcher:
        if fetcher.proxies is not None:  # the proxy the crawl would go through (peer/core/config/proxies.py)
            proxy = fetcher.proxies.for_host(job.host)
            _say("proxy", proxy.spec.label if proxy is not None else "none: a direct connection")
        if url.startswith("https:"):
            # The certificate and the check that applies (peer/net/tls.py), by
            # a handshake of its own: the fetch's connection shows no certificate.
            from peer.core.http.http1 import request_target
            from peer.net.connections import certificate_line

            _, host, port, _, _ = request_target(url)
            _say("tls", await certificate_line(fetcher.connector, host, port,
                                               core.sites.for_host(host).verify,
                                               fetcher.proxies.for_host(host) if fetcher.proxies else None))
        if isinstance(adm, FetchRobots):
            robots_url = adm.url
            res = await fetcher.fetch(robots_url, max_body=MAX_ROBOTS_BYTES, prefix_ok=True)
            effects = core.on_robots(job, res, now)
            core.job_ended(job)
            if res.status is not None and (not 200 <= res.status < 300 or res.error is None
                                           or (res.error == "too_large" and res.truncated)):
                got = f"HTTP {res.status}"
                if res.retry_after is not None and res.status in (429, 503):
                    got += f" (Retry-After {res.retry_after:g}s)"
            else:
                got = f"not read ({res.error or 'unknown'})"
            # The job again, when the host's delay allows: what the core says now.
            while isinstance(step := core.next(now), Sleep) and step.until > now:
                now = step.until
            again = core.admit(step.job, now) if isinstance(step, Start) else None
            failed = next((e for e in (*effects, *(again.effects if again is not None else ()))
                           if isinstance(e, Row)), None)
            # No job again: the host's queue was recorded and removed (a robots.txt
            # no retry mends), and ``failed`` says with what.
            if isinstance(again, Fetch | FetchSitemap):
                shown = "allowed"
            elif isinstance(again, Requeue | FetchRobots):
                wait = core.robots.retry_at(job.host) - now
                shown = ("held: robots.txt unreachable, the crawl asks again later"
                         + (f" (in {duration(wait)})" if wait > 0 else ""))
            elif failed is not None and failed.error == "robots":
                shown = "disallowed: the crawl records it as 'robots'"
            else:
                shown = f"not readable: the crawl records it as '{failed.error if failed else 'unknown'}'"
            delay = core.robots.crawl_delay(job.host)
            _say("robots", f"{robots_url} {got}: {shown}"
                 + (f"; Crawl-delay {delay:g}s" if delay else ""))
            if res.status is None and res.tried:
                _connect(res)
            if not isinstance(again, Fetch | FetchSitemap) and not args.ignore_robots:
                _say("fetch", "not fetched (--ignore-robots to fetch it anyway)")
                return 1
        elif held_verdict is not None and isinstance(adm, Drop):
            # Refused as a page: its host's robots.txt, read as the crawl
            # reads it for a page of that host, may name it as a sitemap.
            robots_url = core.robots.robots_url(job.host, url.split(":", 1)[0])
            res = await fetcher.fetch(robots_url, max_body=MAX_ROBOTS_BYTES, prefix_ok=True)
            if res.status is not None:
                core.robots.loaded(job.host, res.status, res.body, now, truncated=res.truncated)
            got = f"HTTP {res.status}" if res.status is not None else f"not read ({res.error or 'unknown'})"
            _say("robots", f"{robots_url} {got}: read for its Sitemap: lines only")
        else:
            assert isinstance(adm, Fetch | FetchSitemap | Drop | Requeue)
            _say("robots", "not asked (crawl.obey_robots = false)" if not crawl.obey_robots
                 else "not asked: the crawl does not queue this URL")
            robots_url = None
        named = robots_url is not None and url in _normalized(core.robots.sitemaps(job.host))
        if held_verdict is not None:
            _say("scope", _sitemap_scope(f"robots.txt of {job.host} names it") if named else held_verdict)
        sent = None
        if named or url in _normalized(cfg.sitemaps.seeds):
            res = await fetcher.fetch(url, max_body=cfg.sitemaps.max_bytes, prefix_ok=True)
        else:
            # The crawl's jar (peer/core/http/cookies.py): what robots.txt set is sent.
            sent = core.cookies.header(url, time.time()) if core.cookies is not None else None
            res = await fetcher.fetch(url, cookie=sent)
    where = f" from {res.address}" if res.address else ""
    if res.status is None:
        _say("fetch", f"failed: {res.error}{where} after {res.elapsed * 1000:.0f} ms")
        if res.tried:
            _connect(res)
        _say("retry", _retry_words(core.sites.for_host(job.host).retry, res))
        return 1
    _say("fetch", f"HTTP {res.status}{where}, {res.content_type or 'no content type'}, "
         f"{len(res.body):,} bytes{' (cut at max_body)' if res.truncated else ''}, "
         f"{res.elapsed * 1000:.0f} ms" + (f", error {res.error}" if res.error else ""))
    _connect(res)
    _say("coding", _coding(crawl, res))
    if res.retry_after is not None:
        _say("retry", f"Retry-After {res.retry_after:g}s (capped at politeness.max_retry_after "
             f"{cfg.politeness.max_retry_after:g}s)")
    policy = core.sites.for_host(job.host).retry
    if policy.retries_status(res.status) or policy.retries_error(res.error):
        _say("retry", _retry_words(core.sites.for_host(job.host).retry, res))
    if 300 <= res.status < 400 and res.location:
        _say("redirect", f"{res.location} -> {_redirect(rules, url, res)}")
        return 0
    if not 200 <= res.status <= 599:
        _say("status", f"{res.status} is outside 100-599 (or a final 1xx): the crawl retries it "
             "as a 5xx and records the code (RFC 9110 §15)")
    parsed = (parse_response(url, res.body, res.charset, cfg.extract, crawl.max_links_per_page,
                             core.params, core.page_rules) if core.fetched(job, res, now) else None)
    if res.set_cookies or core.cookies is not None:
        _say("cookies", cookie_words(core.cookies, url, res.set_cookies, sent, time.time()))
    said = _directives(rules, url, res, parsed)
    if parsed is None:
        if not (200 <= res.status < 300 and res.body and _sitemap(cfg, rules, url, res.body,
                                                                   robots_url if named else None,
                                                                   args.links)):
            _say("parse", "not parsed (only 2xx HTML is parsed for links and items)")
        return 0
    page = parsed.page
    _say("title", repr(page.title))
    nofollow = said is not None and said.nofollow is True
    cut = f", {len(page.links)} followed (max_links_per_page)" if page.n_links > len(page.links) else ""
    follow = "nofollow: none followed" if nofollow else f"{page.n_links} found{cut}"
    if (not nofollow and not crawl.follow_noncanonical and said is not None
            and said.canonical not in (None, url)):
        follow += "; none followed: the canonical is another URL (crawl.follow_noncanonical = false)"
    _say("links", follow)
    if not nofollow:
        via = dict(page.via)
        listed = page.links if not args.links else page.links[: args.links]
        for link in listed:
            source = f" [{_VIA[via[link]]}]" if link in via else ""
            print(f"  {link}{source}  {rules.verdict(link, 1)}")
        if len(listed) < len(page.links):
            print(f"  ... {len(page.links) - len(listed)} more (--links 0 shows all)")
    if not cfg.extract:
        _say("items", "no [extract] rules")
    elif said is not None and said.noindex and (parsed.items or parsed.errors):
        _say("items", "not stored: the page is noindex (the fields below are what the rules found)")
    elif not parsed.items and not parsed.errors:
        _say("items", "no rule matches this URL")
    raw: dict[str, dict[str, object]] = {}
    if any(f.cleans for r in cfg.extract.rules for f in r.fields):
        from peer.core.page.extract import parse_tree
        from peer.core.page.items import raw_items

        raw = raw_items(cfg.extract, url, parse_tree(res.body, res.charset))
    for table, row in parsed.items:
        _say("item", table)
        found = raw.get(table, {})
        for name, value in row.items():
            before = found.get(name, value)
            print(f"  {name}: {value!r}" + (f"  (from {before!r})" if before != value else ""))
    for err in parsed.errors:
        _say("extract", f"failed: {err}")
    return 0




def _redirect(rules: _Rules, url: str, res: FetchResult) -> str:
    """The redirect's target and the verdict of a core that fetched the page (so holds it as seen)."""
    from peer.core.crawl.core import Origin, Queued, Refused, Start

    # A fresh core, as ``_directives``'s: the page's own may have dropped its
    # job already (robots.txt said no, and --ignore-robots fetched it anyway).
    core = rules.core(_NOBODY)
    core.discover(url, 0, 0.0, Origin.HANDED_BACK)
    step = core.next(0.0)
    assert isinstance(step, Start)
    for e in core.on_result(step.job, res, None, 0.0):
        if isinstance(e, Refused):
            return f"{e.url}: {refusal(core, e)}"
        if isinstance(e, Queued):
            return f"{e.url}: {rules.verdict(e.url, 0)}"  # and who fetches it, in the ring
    return "not a URL the crawl would take"


#: How the links list names a link's source (peer.core.page.extract's names).
_VIA = {"frame": "frame", "refresh": "meta refresh", "link": "link rel"}


def _directives(rules: _Rules, url: str, res: FetchResult, parsed: Parsed | None) -> Row | None:
    """Print the page's canonical URL and robots directives with their sources.

    A fresh crawl core's row says what the crawl records (None: the answer
    is retried, and no row is written yet); only the sources are read here.
    """
    from peer.core.crawl.core import Origin, Row, Start
    from peer.core.page.directives import x_robots_tag

    core = rules.core(_NOBODY)
    core.discover(url, 0, 0.0, Origin.HANDED_BACK)
    step = core.next(0.0)
    assert isinstance(step, Start)
    row = next((e for e in core.on_result(step.job, res, parsed, 0.0) if isinstance(e, Row)), None)
    if row is None:
        return None
    page = parsed.page if parsed is not None else None
    if row.canonical is not None:
        where = "Link header" if res.canonical is not None else "<link rel=canonical>"
        same = "the page itself" if row.canonical == url else "another URL"
        _say("canonical", f"{row.canonical} (from the {where}: {same})")
    header = x_robots_tag(res.x_robots, core.page_rules.agent) if res.x_robots else (False, False)
    for i, name in enumerate(("noindex", "nofollow")):
        sources = [s for s, on in (("X-Robots-Tag", header[i]),
                                   ("<meta> robots", page is not None and (page.noindex, page.nofollow)[i]))
                   if on]
        if sources:
            what = ("no items stored, the page row kept" if i == 0 else "its links are not followed")
            _say(name, f"from {' and '.join(sources)}: {what}")
    return row


def _retry_words(policy: RetryConfig, res: FetchResult) -> str:
    """What the crawl does after this answer, by ``[retry]`` and the host's [[site]] block (peer/core/config/retry.py)."""
    what = res.error if res.status is None else f"HTTP {res.status}" + (f" ({res.error})" if res.error else "")
    if not (policy.retries_error(res.error) or (res.status is not None and policy.retries_status(res.status))):
        return f"{what} is not retried ([retry] statuses, errors); its row keeps it"
    waits = ", ".join(f"{policy.wait(n, 1.0):g}s" for n in range(min(policy.times, 6)))
    down = (f"; {policy.down_after} in a row on a host that answered before: the host is held as down, "
            f"probed after {policy.down_wait:g}s, given up after {policy.down_give_up:g}s"
            if res.status is None and res.error in policy.down_errors else "")
    return f"{what} is retried {policy.times} times ({waits or 'none'}, +-50%){down}"
