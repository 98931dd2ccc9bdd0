"""What ``--check`` learns by asking: each seed host resolved and its robots.txt read.

``config_warnings`` (``peer.commands.cli``) judges what the config alone says
and does no I/O, so it cannot know that ``/etc/hosts`` maps a name to
127.0.0.1, that nothing listens on a seed's port, or that robots.txt forbids
the seed. This module asks, the way the crawl will:

1. The host is resolved by the crawl's own resolver (``peer.net.resolver``):
   ``[dns] resolve``, then ``[dns] nameservers`` or the system's, and the
   SSRF guard on the answer (``crawl.allow_private``).
2. robots.txt is fetched by the crawl's own fetcher (RFC 9309 §2.3: the
   crawler's user agent, ``max_body`` of robots.txt, no redirect followed),
   through the host's proxy if it has one (``crawl.proxy``; a proxy that
   resolves names leaves step 1 to it), and the seed checked against it by
   the crawl's robots core. With
   ``crawl.obey_robots = false`` the seed itself is fetched instead: the
   question is only whether anything answers.

Each seed host is asked at most once, the first :data:`MAX_HOSTS` of them,
:data:`PARALLEL` at a time, each step within :data:`PROBE_TIMEOUT` seconds (or
``crawl.timeout`` when shorter), so ``--check`` ends within seconds whatever
the seeds are. A seed out of scope is not asked: ``config_warnings`` already
says it will not be crawled. Each problem is one line saying what the crawl
will do with the seed and the key or fact to change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence, Set
from typing import TYPE_CHECKING

import trio

from peer.core.config.cluster import ClusterConfig
from peer.errors import ErrorKind, FetchError

if TYPE_CHECKING:
    from peer.core.crawl.robots import RobotsCache
    from peer.core.http.result import FetchResult

__all__ = ["MAX_HOSTS", "PARALLEL", "PROBE_TIMEOUT", "probe_seeds"]

#: Seed hosts asked by one ``--check`` (the rest are counted in one line).
MAX_HOSTS = 20
#: Hosts asked at a time.
PARALLEL = 8
#: Seconds one step (a lookup, a request) may take, at most.
PROBE_TIMEOUT = 5.0

#: What the crawl records a seed as, and why, per error kind of a failed request.
_BECAUSE = {
    ErrorKind.CONNECT: "nothing answers (connection refused, or no route); check the host and port, and that the server is up",
    ErrorKind.TIMEOUT: "no answer within {timeout:g}s; check the URL and the server",
    ErrorKind.TLS: "its TLS handshake failed (protocol, or a certificate error)",
    ErrorKind.TLS_EXPIRED: "its certificate has expired (or is not yet valid)",
    ErrorKind.TLS_HOSTNAME: "its certificate is for another host name",
    ErrorKind.TLS_UNTRUSTED: "its certificate is signed by no CA we trust: crawl.ca_file, or a [[site]] block's verify = false",
    ErrorKind.TLS_CLIENT_CERT: "its server wants a client certificate (crawl.client_cert), or refused ours",
    ErrorKind.RESET: "the connection was closed before an answer",
    ErrorKind.PROTOCOL: "what answers is not HTTP/1.1",
    ErrorKind.PROXY: "the proxy cannot be reached or broke its protocol; check crawl.proxy",
    ErrorKind.PROXY_AUTH: "the proxy refused the credentials; check what crawl.proxy_auth_env or proxy_auth_file holds",
    ErrorKind.PROXY_REFUSED: "the proxy could not or would not reach it (its ACL, or the host is down)",
}


def _seed_hosts(cfg: ClusterConfig, skip: Set[int]) -> list[tuple[int, str, str, str]]:
    """(seed index, seed, normalised URL, host key) of the first seed of each host in scope,
    the hosts of the seeds in ``skip`` left out."""
    from peer.core.urls.normalize import URLError, host_key, normalize
    from peer.core.urls.scope import Scope

    c = cfg.crawl
    scope = Scope.from_seeds(c.seeds, c.allow_hosts, c.deny_hosts, c.max_depth, c.allow_domains)
    out: list[tuple[int, str, str, str]] = []
    seen: set[str] = set()
    for i, seed in enumerate(c.seeds):
        try:
            url = normalize(seed)
        except URLError:
            continue
        host = host_key(url)
        if host in seen or not scope.allows(url, 0):
            continue
        if i in skip:
            seen.add(host)
            continue
        seen.add(host)
        out.append((i, seed, url, host))
    return out


async def probe_seeds(cfg: ClusterConfig, skip: Set[int] = frozenset()) -> list[str]:
    """One line per seed host the crawl cannot fetch, as the crawl would find out (module
    docstring); the hosts of the seeds in ``skip`` (already warned of) are not asked."""
    from peer.core.crawl.robots import MAX_ROBOTS_BYTES, RobotsCache
    from peer.core.urls.normalize import hostname
    from peer.net.fetcher import Fetcher
    from peer.net.resolver import Resolver
    from peer.core.config.sites import SiteSettings

    c = cfg.crawl
    hosts = _seed_hosts(cfg, skip)
    where = str(cfg.path)
    timeout = min(PROBE_TIMEOUT, c.timeout)
    crawl = dataclasses.replace(c, timeout=timeout)
    found: dict[int, str] = {}
    resolver = Resolver(cfg.dns, allow_private=c.allow_private)
    # Each host asked with its own [[site]] agent and headers, as the crawl asks it.
    sites = SiteSettings(cfg.sites, c, cfg.politeness)
    robots = RobotsCache(c.user_agent, max_crawl_delay=cfg.politeness.max_crawl_delay,
                         tokens=lambda h: sites.for_host(h).token)
    limit = trio.CapacityLimiter(PARALLEL)

    async def ask(fetcher: Fetcher, i: int, seed: str, url: str, host: str) -> None:
        name = f"crawl.seeds[{i}] {seed!r}"
        async with limit:
            # Through a proxy that resolves names (peer/core/config/proxies.py rule 1) the
            # crawl asks no DNS: only the guard on what is known here, then the proxy.
            proxy = fetcher.proxies.for_host(host) if fetcher.proxies is not None else None
            remote = proxy is not None and proxy.spec.scheme.remote_dns
            with trio.move_on_after(timeout) as scope:
                try:
                    if remote:
                        resolver.known(hostname(host))
                    else:
                        await resolver.resolve(hostname(host))
                except FetchError as exc:
                    found[i] = _lookup_line(where, name, exc)
                    return
            if scope.cancelled_caught:
                found[i] = f"{where}: {name}: its host {hostname(host)} did not resolve within {timeout:g}s"
                return
            target = robots.robots_url(host, url.partition(":")[0]) if c.obey_robots else url
            with trio.move_on_after(timeout + 1.0):
                res = await fetcher.fetch(target, max_body=MAX_ROBOTS_BYTES, prefix_ok=True)
                line = _answer_line(where, name, target, res, robots, host, url, c.obey_robots, timeout)
                if line:
                    found[i] = line
                return
            found[i] = f"{where}: {name}: {target} did not answer within {timeout:g}s"

    async with Fetcher(crawl, resolver, sites=sites) as fetcher, trio.open_nursery() as nursery:
        for i, seed, url, host in hosts[:MAX_HOSTS]:
            nursery.start_soon(ask, fetcher, i, seed, url, host)
    out = [found[i] for i in sorted(found)]
    if len(hosts) > MAX_HOSTS:
        out.append(f"{where}: {len(hosts) - MAX_HOSTS} more seed host(s) not asked (--check asks the "
                   f"first {MAX_HOSTS})")
    return out


def _lookup_line(where: str, name: str, exc: FetchError) -> str:
    detail = str(exc).partition(": ")[2]
    if exc.kind is ErrorKind.BLOCKED:
        return (f"{where}: {name}: {detail.split(':')[0]}: the SSRF guard refuses it, so the crawl "
                "records it as 'blocked'; set crawl.allow_private = true to crawl a private or "
                "loopback address (an intranet, a local test web)")
    return (f"{where}: {name}: its host does not resolve ({detail or exc.kind}), so the crawl records "
            "it as 'dns'; check the URL, or [dns] resolve / [dns] nameservers")


def _answer_line(where: str, name: str, target: str, res: FetchResult, robots: RobotsCache,
                 host: str, url: str, obey: bool, timeout: float) -> str | None:
    """The line for one answer (or failure) of ``target``; None when the seed can be crawled."""
    from peer.core.crawl.robots import Verdict

    via = f" at {res.address}" if res.address else ""
    if res.status is None:
        kind = res.error or ErrorKind.UNKNOWN
        because = _BECAUSE.get(kind, f"the request failed ({kind})").format(timeout=timeout)
        what = "robots.txt" if obey else "the seed"
        return (f"{where}: {name}: {target}{via}: {because}; the crawl asks for {what} again "
                f"(crawl.robots_retry), then records the host's URLs as '{kind}'"
                if obey else f"{where}: {name}: {target}{via}: {because}; the crawl records it as '{kind}'")
    if not obey:
        return None
    status = res.status
    if status == 429 or status >= 500:
        return (f"{where}: {name}: {target} answers HTTP {status}: robots.txt is unreachable (RFC 9309 "
                "§2.3.1.4), so the crawl holds the host and asks again after crawl.robots_retry")
    robots.loaded(host, status, res.body, 0.0, truncated=res.truncated)
    if robots.check(host, url, 0.0) is Verdict.DISALLOW:
        return (f"{where}: {name}: {target} forbids it to {robots.token!r}, so the crawl records it "
                "as 'robots' (crawl.obey_robots = false ignores robots.txt: only on sites you run)")
    return None


def probe_lines(cfg: ClusterConfig, skip: Set[int] = frozenset()) -> Sequence[str]:
    """:func:`probe_seeds` run in an event loop of its own (``--check``)."""
    return trio.run(probe_seeds, cfg, skip)
