"""``python -m peer try URL --ring cluster.toml``: what the crawl would do with one URL.

Scrapy users reach for ``scrapy shell``; this is the same idea for ringcrawl's
rules. The URL goes through the crawl's own pieces, in the crawl's order, and
every verdict is printed:

1. normalisation (``peer.core.urls``), scope (``allow_hosts``, ``deny_hosts``) and
   the URL caps (``peer.core.limits``);
2. ownership: which peer of cluster.toml's ring owns the host (every listed
   peer taken as alive) and, with ``--peer``, whether that one would fetch it
   or forward it;
3. robots.txt (``peer.core.robots``), fetched through the crawl's fetcher;
4. the fetch itself (``peer.net.fetcher``: the SSRF guard, ``[dns] resolve``,
   ``max_body``, the timeout), a redirect's target with its own verdicts;
5. the links found, each with its scope, cap and owner verdict, cut at
   ``max_links_per_page`` as the crawl cuts them, ``nofollow`` honoured;
6. the fields the ``[extract]`` rules (or the user function) take.

A dry run: no results file, no crawl state, no ring socket; only the two
requests (robots.txt, the page) leave the machine. A URL out of scope is still
fetched, to show its links and fields, and the verdict says the crawl would
not; a URL robots.txt disallows is not fetched unless ``--ignore-robots``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from peer.core.config import ClusterConfig
from peer.state.configfile import load_config
from peer.errors import ErrorKind, PeerError, URLError, user_error

__all__ = ["main"]

EXIT_USAGE = 2
#: Links printed unless --links says otherwise.
DEFAULT_LINKS = 30


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m peer try",
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
    return p


class _Rules:
    """The crawl's pure deciders for one config."""

    def __init__(self, cfg: ClusterConfig, peer: str | None) -> None:
        from peer.core.limits import Limits
        from peer.core.urls import Scope
        from ring.hashring import HashRing

        self.cfg, self.peer = cfg, peer
        c = cfg.crawl
        self.scope = Scope.from_seeds(c.seeds, c.allow_hosts, c.deny_hosts, c.max_depth)
        self.limits = Limits.from_config(c, cfg.politeness)
        self.ring = HashRing({p.id: p.weight for p in cfg.peers}, vnodes=cfg.ring.vnodes)

    def verdict(self, url: str, depth: int) -> str:
        """Scope, caps and ownership of one URL, as one phrase."""
        from peer.core.urls import host_key

        if not self.scope.allows(url, depth):
            why = "deeper than max_depth" if self.cfg.crawl.max_depth and depth > self.cfg.crawl.max_depth else "host"
            return f"out of scope ({why}): not crawled"
        cap = self.limits.check_url(url)
        if cap is not None:
            return f"dropped by crawl.{cap.value}"
        owner = self.ring.owner(host_key(url))
        if len(self.cfg.peers) == 1:
            return "in scope, would be queued"
        if self.peer is None or self.peer == owner:
            return f"in scope: fetched by {owner}"
        return f"in scope: {self.peer} forwards it to its owner {owner}"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cfg = load_config(args.ring)
        if args.peer is not None:
            cfg.peer(args.peer)
        if args.links < 0:
            raise PeerError("--links: expected a number >= 0")
        from peer.core.urls import normalize

        try:
            url = normalize(args.url)
        except URLError as exc:
            raise PeerError(f"{args.url!r}: not a URL the crawl would take ({exc})") from None
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    import trio

    try:
        return trio.run(_try, cfg, url, args)
    except BaseException as exc:
        err = user_error(exc)
        if err is None:
            raise
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE


def _say(label: str, text: str) -> None:
    print(f"{label + ':':<11} {text}")


async def _try(cfg: ClusterConfig, url: str, args: argparse.Namespace) -> int:
    from peer.engine.crawler import parse_response
    from peer.core.extract import is_html
    from peer.net.fetcher import Fetcher
    from peer.net.resolver import Resolver
    from peer.core.robots import MAX_ROBOTS_BYTES, RobotsCache, Verdict
    from peer.core.urls import host_key, normalize_link

    rules = _Rules(cfg, args.peer)
    crawl = cfg.crawl
    host = host_key(url)
    _say("url", url)
    _say("scope", rules.verdict(url, 0))
    resolver = Resolver(cfg.dns, allow_private=crawl.allow_private)
    async with Fetcher(crawl, resolver) as fetcher:
        if crawl.obey_robots:
            robots = RobotsCache(crawl.user_agent, max_crawl_delay=cfg.politeness.max_crawl_delay,
                                 error_retry=crawl.robots_retry)
            robots_url = robots.robots_url(host, url.split(":", 1)[0])
            robots.check(host, url, trio_now())  # FETCH: the cache now waits for the answer
            res = await fetcher.fetch(robots_url, max_body=MAX_ROBOTS_BYTES, prefix_ok=True)
            now = trio_now()
            if res.status is not None and (not 200 <= res.status < 300 or res.error is None
                                           or (res.error == "too_large" and res.truncated)):
                robots.loaded(host, res.status, res.body, now, truncated=res.truncated)
                got = f"HTTP {res.status}"
            else:
                robots.failed(host, now, ErrorKind(res.error) if res.error else ErrorKind.UNKNOWN)
                got = f"not read ({res.error or 'unknown'})"
            verdict = robots.check(host, url, now)
            delay = robots.crawl_delay(host)
            allowed = verdict is Verdict.ALLOW
            shown = {Verdict.ALLOW: "allowed", Verdict.DISALLOW: "disallowed: the crawl records it as 'robots'",
                     Verdict.UNREACHABLE: "held: robots.txt unreachable, the crawl asks again later"}.get(
                         verdict, verdict.name.lower())
            _say("robots", f"{robots_url} {got}: {shown}"
                 + (f"; Crawl-delay {delay:g}s" if delay else ""))
            if not allowed and not args.ignore_robots:
                _say("fetch", "not fetched (--ignore-robots to fetch it anyway)")
                return 1
        else:
            _say("robots", "not asked (crawl.obey_robots = false)")
        res = await fetcher.fetch(url)
    where = f" from {res.address}" if res.address else ""
    if res.status is None:
        _say("fetch", f"failed: {res.error}{where} after {res.elapsed * 1000:.0f} ms")
        return 1
    _say("fetch", f"HTTP {res.status}{where}, {res.content_type or 'no content type'}, "
         f"{len(res.body):,} bytes{' (cut at max_body)' if res.truncated else ''}, "
         f"{res.elapsed * 1000:.0f} ms" + (f", error {res.error}" if res.error else ""))
    if res.retry_after is not None:
        _say("retry", f"Retry-After {res.retry_after:g}s (capped at politeness.max_retry_after "
             f"{cfg.politeness.max_retry_after:g}s)")
    if 300 <= res.status < 400 and res.location:
        target = normalize_link(url, res.location)
        _say("redirect", f"{res.location} -> " + (f"{target}: {rules.verdict(target, 0)}" if target
                                                   else "not a URL the crawl would take"))
        return 0
    if not (200 <= res.status < 300 and is_html(res.content_type, res.body)):
        _say("parse", "not parsed (only 2xx HTML is parsed for links and items)")
        return 0
    parsed = parse_response(url, res.body, res.charset, cfg.extract, crawl.max_links_per_page)
    page = parsed.page
    _say("title", repr(page.title))
    cut = f", {len(page.links)} followed (max_links_per_page)" if page.n_links > len(page.links) else ""
    follow = "nofollow: none followed" if page.nofollow else f"{page.n_links} found{cut}"
    _say("links", follow)
    if not page.nofollow:
        listed = page.links if not args.links else page.links[: args.links]
        for link in listed:
            print(f"  {link}  {rules.verdict(link, 1)}")
        if len(listed) < len(page.links):
            print(f"  ... {len(page.links) - len(listed)} more (--links 0 shows all)")
    if not cfg.extract:
        _say("items", "no [extract] rules")
    elif not parsed.items and not parsed.errors:
        _say("items", "no rule matches this URL")
    for table, row in parsed.items:
        _say("item", table)
        for name, value in row.items():
            print(f"  {name}: {value!r}")
    for err in parsed.errors:
        _say("extract", f"failed: {err}")
    return 0


def trio_now() -> float:
    import trio

    return trio.current_time()
