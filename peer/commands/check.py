"""What ``python -m peer --check`` says of a config, without asking anything.

``describe`` is the summary of a validated config; ``config_warnings`` what a
valid config will do that its author probably does not want (no seeds, a
seed out of scope or refused by the SSRF guard, an idle peer, a ring of two);
``seed_owners`` who owns each seed host; ``check_host`` the settings in force
for one host (``--check --host``). No I/O but printing: what needs the
network (a seed's name resolved, its robots.txt read) is
``peer.commands.preflight``. A run logs ``config_warnings`` again as it
starts.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from peer.core.config.cluster import ClusterConfig, CrawlConfig
from peer.errors import EXIT_USAGE
from ring.commandnames import spoken

__all__ = ["check_host", "config_warnings", "describe", "idle_peers", "machine_warnings", "ring_warnings", "seed_hosts_text",
           "seed_owners", "static_refused", "SEED_OWNERS_SHOWN"]


def describe(cfg: ClusterConfig, peer_id: str | None = None) -> str:
    """A short human summary of a validated config."""
    lines = [f"{cfg.path}: ok: ring {cfg.ring.name!r}, {len(cfg.peers)} peer(s)"]
    for spec in cfg.peers:
        mark = "*" if spec.id == peer_id else " "
        address = spec.address or "(no address: solo)"
        lines.append(f" {mark} {spec.id:<8} {address:<24} weight {spec.weight:g}  data_dir {spec.data_dir}"
                     + (f"  machine {spec.machine}" if spec.machine != spec.id else ""))
    # As this peer sends it: {machine} replaced (peer.core.config.workers).
    c, pol = (cfg.for_peer(peer_id) if peer_id else cfg).crawl, cfg.politeness
    scope = ", ".join(c.allow_hosts) or ("" if c.allow_domains else "the seeds' hosts")
    if c.allow_domains:  # crawl.allow_domains: each domain and every name below it
        scope += ("; " if scope else "") + "domains " + ", ".join(c.allow_domains) + " and below"
    lines.append(f"   seeds: {len(c.seeds)}{' and ' + c.seeds_file if c.seeds_file else ''}; scope: {scope}; concurrency {c.concurrency}; "
                 f"robots {'on' if c.obey_robots else 'off'}; SSRF guard {'off' if c.allow_private else 'on'}")
    from peer.core.config.proxies import proxy_lines
    from peer.core.crawl.robots import product_token

    # What every request carries; header values are not shown (a header may
    # hold a token for one's own sites), nor are proxy credentials.
    names = ", ".join(c.headers) or "none"
    lines.append(f"   requests: User-Agent {c.user_agent!r} (robots.txt token {product_token(c.user_agent)!r}); "
                 f"extra headers: {names}"
                 + ("" if c.cookies or any(b.cookies for b in cfg.sites) else "; cookies off")
                 + ("" if c.proxy else "; no proxy (direct)"))
    lines.extend(f"   {line}" for line in proxy_lines(cfg))
    lines.append(f"   content codings: {_codings(c)}")
    rate = f"{pol.rate:g} pages/min per host" if pol.rate else "no rate limit"
    lines.append(f"   politeness: {rate}, PID window {pol.window:g}s, host_concurrency {pol.host_concurrency}"
                 + ("; one setpoint per registered domain (politeness.group)" if pol.by_domain else ""))
    lines.append(f"   {cfg.retry.describe()}; Retry-After capped at {pol.max_retry_after:g}s")
    on = [f"site[{i}] {b.label}" for i, b in enumerate(cfg.sites) if b.cookies]
    if c.cookies or on:
        off = [f"site[{i}]" for i, b in enumerate(cfg.sites) if b.cookies is False]
        lines.append("   cookies: " + ("on (crawl.cookies)" if c.cookies else "on for " + ", ".join(on))
                     + (f", off for {', '.join(off)}" if c.cookies and off else "")
                     + f"; kept per host, at most {c.cookies_per_host} a host, {c.cookies_max_total} in all")
    budgets = [f"{name} {getattr(c, key):,}" for key, name in (
        ("max_pages_per_host", "pages per host"), ("max_bytes_per_host", "bytes per host"),
        ("max_pages_per_domain", "pages per registered domain"), ("max_bytes_per_domain", "bytes per registered domain"),
    ) if getattr(c, key)]
    budgets += [f"site[{i}] {b.max_pages or 0:,} pages, {b.max_bytes or 0:,} bytes" for i, b in enumerate(cfg.sites)
                if b.max_pages or b.max_bytes]
    if budgets:  # peer/core/crawl/budgets.py; nothing said without one
        lines.append("   budgets: " + "; ".join(budgets) + " (bytes as on the wire; a site's and a domain's "
                     "split among a ring's members)")
    if cfg.sites:
        lines.append("   sites: " + "; ".join(f"site[{i}] {b.label}" for i, b in enumerate(cfg.sites))
                     + " (--check --host HOST: what applies to a host)")
    lines.append(f"   {cfg.dedupe.describe()}")
    lines.append(f"   bloom: {cfg.bloom.capacity:,} URLs at p={cfg.bloom.error_rate:g}")
    rv = cfg.revisit
    lines.append("   revisit: " + ("off (the crawl ends when its frontier is empty)" if not rv.enabled else
                 f"on: every {rv.min_interval:g}-{rv.max_interval:g}s a page (first {rv.clamp(rv.initial_interval):g}s), "
                 f"{rv.revisit_share:.0%} of a host's starts; runs "
                 + (f"{rv.run_for:g}s" if rv.run_for else "until stopped")))
    from peer.core.config.tls import describe_tls

    lines.append(f"   {describe_tls(c, cfg.sites)}")
    from peer.core.urls.rules import parse_url_rules

    lines.append(f"   url {parse_url_rules(c, str(cfg.path)).describe()}")
    # The order each host's queue is served in (frontier rule 11).
    fr = cfg.frontier
    lines.append("   order: " + ("fifo, each host's URLs in the order found (frontier.order)" if fr.order == "fifo" else
                 "depth, each host's shallower URLs first, moved by sitemap <priority>"
                 + (f" and {len(fr.priority)} frontier.priority rule(s): "
                    + ", ".join(repr(r) for r in fr.priority) if fr.priority else "")))
    ex = cfg.extract
    if ex:
        rules = ", ".join(f"{r.table} ({len(r.fields)} fields, match {r.match!r})" for r in ex.rules)
        lines.append(f"   extract: {rules or 'no rules'}"
                     + (f"; user function {ex.module}" if ex.module else ""))
    lines.append(f"   {cfg.warc.describe()}")
    lines.append("   ring: " + (f"CurveZMQ keys in {cfg.ring.curve_keys}" if cfg.ring.curve_keys
                                else "unauthenticated (no [ring] curve_keys)"))
    owners = seed_owners(cfg)
    if len(cfg.peers) > 1 and owners:
        lines.append(f"   seed hosts: {seed_hosts_text(owners)}")
    lines.extend(f"warning: {w}" for w in config_warnings(cfg))
    return "\n".join(lines)


def check_host(cfg: ClusterConfig, text: str) -> int:
    """``--check --host``: the settings in force for one host, and where each came from."""
    from peer.core.config.sites import SiteSettings
    from peer.core.urls.normalize import URLError, host_key

    try:
        host = host_key(text if "://" in text else f"http://{text}/")
    except URLError as exc:
        print(f"error: --host: expected a host name or URL, got {text!r} ({exc})", file=sys.stderr)
        return EXIT_USAGE
    from peer.core.urls.priority import parse_priority_rules

    sites = SiteSettings(cfg.sites, cfg.crawl, cfg.politeness, cfg.retry,
                         parse_priority_rules(cfg.frontier.priority, str(cfg.path)))
    from peer.core.config.proxies import host_proxy

    proxy = host_proxy(cfg, sites.for_host(host).block)
    r = cfg.retry
    group: list[str] = []
    if cfg.politeness.by_domain:  # politeness.group = "domain": its domain's one setpoint (frontier rule 8)
        from peer.core.urls.domains import registered_domain
        from peer.core.urls.normalize import hostname

        group = [f"  paced with every host of its registered domain {registered_domain(hostname(host))} "
                 "as one host, at the smallest rate among them (politeness.group)"]
    print("\n".join(sites.describe(host) + group + ([f"  proxy {proxy}"] if proxy else [])
                    + [f"  down after {r.down_after} {'/'.join(r.down_errors) or 'never'} failures in a row: held "
                       f"{r.down_wait:g}s, doubled up to {r.down_max_wait:g}s, given up after {r.down_give_up:g}s ([retry])"]))
    return 0


#: Seed hosts whose owner ``--check`` names (the rest are counted).
SEED_OWNERS_SHOWN = 8


def seed_owners(cfg: ClusterConfig) -> list[tuple[str, str]]:
    """(seed host, the peer that owns it) on the ring of cluster.toml's peers, in seed order."""
    from peer.core.urls.normalize import URLError, host_key, normalize
    from ring.hashring import HashRing

    # The ring of the listed peers, as ``python -m ring table`` draws it; not
    # through ring.tools, whose client a starting peer has no use for.
    ring = HashRing.of_members(cfg.peers, cfg.ring.vnodes)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for seed in cfg.crawl.seeds:
        try:
            host = host_key(normalize(seed))
        except URLError:
            continue
        if host not in seen:
            seen.add(host)
            out.append((host, ring.owner(host)))
    return out


def seed_hosts_text(owners: Sequence[tuple[str, str]]) -> str:
    """``host -> owner, ...`` of the first :data:`SEED_OWNERS_SHOWN`, the rest counted."""
    more = len(owners) - SEED_OWNERS_SHOWN
    return (", ".join(f"{host} -> {owner}" for host, owner in owners[:SEED_OWNERS_SHOWN])
            + (f" (and {more} more)" if more > 0 else ""))


def idle_peers(cfg: ClusterConfig, seeds: Sequence[tuple[str, str]]) -> list[str]:
    """Peers of a ring that own none of the seed hosts (``seeds``: :func:`seed_owners`):
    they fetch nothing until a link leads to a host of theirs (a crawl of one or two
    sites may never)."""
    owners = {owner for _, owner in seeds}
    return [p.id for p in cfg.peers if owners and p.id not in owners] if len(cfg.peers) > 1 else []


def _codings(c: CrawlConfig) -> str:
    """Accept-Encoding as sent (peer.core.http.inflate), and a coding left out for its missing library."""
    from peer.core.http.inflate import AVAILABLE, accept_encoding

    missing = [x for x in c.accept_encodings if x not in AVAILABLE]
    return (f"Accept-Encoding {accept_encoding(c.accept_encodings)} (crawl.accept_encodings), "
            f"zstd window up to {c.zstd_max_window:,} bytes"
            + (f"; not asked for, their library missing: {', '.join(missing)}" if missing else ""))


def config_warnings(cfg: ClusterConfig) -> list[str]:
    """What a valid config will do that its author probably does not want (``--check``).

    Each would end a crawl at once with 0 pages and no other sign: no seeds, a
    seed out of scope (its host, or ``crawl.rules``/``skip_extensions``, the
    rule named), a seed the SSRF guard will refuse (peer/core/dns/guard.py:
    an IP literal, ``localhost``, or a ``[dns] resolve`` answer that is not
    public, while ``allow_private`` is false). A seed resolved by real DNS is
    judged when it is fetched, not here: --check does no I/O. A ``[[site]]``
    block with ``verify = false`` is one too (peer/core/config/tls.py rule 4).
    """
    from peer.core.config.sites import SiteSettings
    from peer.core.urls.normalize import host_key, hostname, normalize
    from peer.core.urls.scope import Scope
    from peer.core.urls.rules import parse_url_rules

    c = cfg.crawl
    where = str(cfg.path)
    urlrules = parse_url_rules(c, where)
    sites = SiteSettings(cfg.sites, c, cfg.politeness)
    from peer.core.config.tls import unverified_warnings

    ring = ring_warnings(cfg) + machine_warnings(cfg) + [f"{where}: {w}" for w in unverified_warnings(cfg.sites)]
    if not c.seeds and not c.seeds_file:
        return [f"{where}: crawl.seeds is empty: the crawl will end at once with 0 pages", *ring]
    out = ring
    idle = idle_peers(cfg, seed_owners(cfg)) if not c.seeds_file else []  # a file's hosts are not read here
    if idle:
        out.append(f"{where}: {', '.join(idle)} own{'s' if len(idle) == 1 else ''} none of the seed "
                   "hosts: idle until a link leads to a host of theirs (with a site or two, perhaps "
                   "for the whole crawl); add seeds of more hosts, or run fewer peers")
    scope = Scope.from_seeds(c.seeds, c.allow_hosts, c.deny_hosts, c.max_depth, c.allow_domains)
    for i, seed in enumerate(c.seeds):
        url = normalize(seed, urlrules.params)
        host = hostname(host_key(url))
        if not scope.allows(url, 0):
            why = (f"its host {host} is denied by crawl.deny_hosts"
                   if (not c.allow_hosts and not c.allow_domains) or scope.in_allowed_domain(host)
                   or any(Scope((p,)).allows_host(host) for p in c.allow_hosts)
                   else f"its host {host} matches no crawl.allow_hosts pattern"
                   + (" and is in no crawl.allow_domains domain" if c.allow_domains else ""))
            out.append(f"{where}: crawl.seeds[{i}] {seed!r} is out of scope ({why}): it will not be crawled")
            continue
        judged = (sites.for_host(host_key(url)).urlrules or urlrules).judge(url)
        if judged.excluded is not None:
            out.append(f"{where}: crawl.seeds[{i}] {seed!r} is out of scope ({judged.why()}): "
                       "it will not be crawled")
    out.extend(static_refused(cfg).values())
    return out


def static_refused(cfg: ClusterConfig) -> dict[int, str]:
    """Seeds the SSRF guard will refuse, judged without I/O: by seed index, the line to say.

    An IP literal, ``localhost``, or a ``[dns] resolve`` answer that is not
    public, while ``allow_private`` is false (peer/core/dns/guard.py).
    """
    from peer.core.dns.cache import DnsCache
    from peer.core.dns.guard import is_public_address
    from peer.core.urls.normalize import URLError, host_key, hostname, normalize

    c = cfg.crawl
    if c.allow_private:
        return {}
    static = DnsCache(static=cfg.dns.resolve)
    out: dict[int, str] = {}
    for i, seed in enumerate(c.seeds):
        try:
            host = hostname(host_key(normalize(seed)))
        except URLError:
            continue
        addresses = static.peek(host, 0.0)
        if host == "localhost" or host.endswith(".localhost"):
            addresses = ("127.0.0.1",)
        blocked = [a for a in addresses or () if not is_public_address(a)]
        if blocked:
            out[i] = (f"{cfg.path}: crawl.seeds[{i}] {seed!r} resolves to {', '.join(blocked)}, which "
                      "the SSRF guard refuses: set crawl.allow_private = true to crawl a private or "
                      "loopback address (such as the local test web)")
    return out


def ring_warnings(cfg: ClusterConfig) -> list[str]:
    """What the ring's leases (ring/membership/lease.py) make of the number of peers (``--check``).

    A peer starts requests only while a majority of the ring vouches for its
    view of it, dead members counted (so that the two sides of a split
    cannot both go on). A majority of two is two: either peer stopping stops
    the other, until an operator forgets the dead one. An even ring split
    in halves leaves neither half a majority.
    """
    n = len(cfg.peers)
    where = str(cfg.path)
    if n == 2:
        a, b = (p.id for p in cfg.peers)
        return [spoken(f"{where}: a ring of two peers stops when either peer stops (a majority of two is "
                       f"two, so the other pauses); `python -m ring forget --ring {where} --id {b}` (or "
                       f"--id {a}) lets the other go on; three peers survive one stopping", sys.argv[0])]
    if n > 2 and n % 2 == 0:
        return [f"{where}: a ring of {n} peers split in two halves of {n // 2} pauses on both sides "
                "(neither has a majority); an odd number of peers always leaves one side going on"]
    return []


def machine_warnings(cfg: ClusterConfig) -> list[str]:
    """What the ``machine`` of the peers makes of quorum and per-IP politeness (``--check``, the start).

    A machine that stops takes all its peers with it: a machine holding half
    the ring or more leaves the rest without a majority, and they pause. Its
    workers may hold more fetches to one IP than ``ip_concurrency`` allows one
    peer of its weight (peer/core/politeness/machines.py rule 2).
    """
    from peer.core.config.workers import machines
    from peer.core.politeness.machines import crowded
    from ring.hashring import HashRing

    where, n = str(cfg.path), len(cfg.peers)
    machine_of = machines(cfg.peers)
    counts: dict[str, int] = {}
    for m in machine_of.values():
        counts[m] = counts.get(m, 0) + 1
    out = []
    if len(counts) > 1:
        for m, k in sorted(counts.items()):
            if k > 1 and n - k <= n // 2:
                out.append(spoken(f"{where}: machine {m!r} runs {k} of the ring's {n} peers: when it stops, "
                                  f"the other {n - k} are no majority and pause until it is back (or `python -m "
                                  f"ring forget` drops its peers); spread the peers over more machines",
                                  sys.argv[0]))
    pol = cfg.politeness
    if pol.ip_concurrency and n > 1:
        shares = HashRing.of_members(cfg.peers, cfg.ring.vnodes).shares()
        for c in crowded(pol.ip_concurrency, shares, machine_of):
            out.append(f"{where}: machine {c.machine!r}: its {c.workers} peers may hold {c.in_flight} fetches "
                       f"to one IP address at once where one peer of their weight holds {c.share_cap} "
                       f"(each keeps one); politeness.ip_concurrency >= {c.enough} avoids it")
    return out
