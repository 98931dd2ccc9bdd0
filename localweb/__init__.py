"""localweb: local test webs to crawl instead of the Internet, with oracles that judge a crawl.

This package is to ringcrawl what ``trio.testing`` is to trio: public,
installed with the crawler, and what its own tests, demo and benchmarks
use, so a user's tests of a config, an extraction rule or another crawler
can use it the same way. docs/testing.md shows how: start a web, point a
crawler at it with the cluster.toml lines it prints, then judge the crawl
by the server's own request log (every expected URL requested exactly
once, nothing robots.txt forbids, no trap followed; no host asked more
often than its ceiling in any 1 s or 5 s window, as judge.py counts it).
The benchmarks' shared parts live here too, split one concept a module as
the rest of the package is, so a test can reuse the same processes, web
and judge a benchmark does.

Two webs, each on one loopback port, whose hosts the crawler maps to
127.0.0.1 with ``[dns] resolve``. Layers, bottom up (each imports only
those above it)::

    The site graph (*.web.test): a realistic seeded web, judged by its oracle
    text.py       seeded text blocks and phrases                          - pure
    shop.py       the book shop's products and authors                    - pure
    hrefs.py      how a link is spelt (forms) and what each spelling names - pure
    directives.py bad.web.test/directives/: canonical, robots directives,
                  frames, meta refresh, link rel                          - pure
    session.py    bad.web.test/session: pages gated by a session cookie  - pure
    docsite.py    docs.web.test: a documentation site and its sitemap    - pure
    endpoints.py  bad.web.test: gzip bomb, huge, dripping, reset answers  - pure
    graph.py      hosts, routes, the links of every page, robots rules    - pure
    pages.py      the bytes of every page                                 - pure
    oracle.py     what a correct crawl requests and extracts, with its own
                  URL normaliser (never peer.core.urls.normalize, which it checks)       - pure
    sitegraph.py  SiteGraph = graph + pages + oracle, one object          - pure
    realdocs.py   real documentation pages (Debian's doc packages, read
                  from /usr/share/doc) and their labelled copies: a
                  corpus for duplicate detection on real templates
    nearcopies.py its pages' exact and near copies: a labelled corpus
                  for duplicate detection                                 - pure
    server.py     the trio + h11 server (WebFarm), behaviours, request log
    webfarm.py    the webfarm command (ringcrawl-webfarm), the peer config it needs

    The hostile web (*.test): every answer a crawler must survive
    wire.py     bytes: parse a request head, build any reply (Reply, End)  - pure
    site.py     the normal site: a known page graph, its exact URL set     - pure
    farm.py     link farms and traps, generated while they stream         - pure
    cases.py    the hostile hosts (Retry-After, desync, robots.txt, bad
                HTTP, fuzz) and the catalogue of cases (CASES)            - pure
    sitemaps.py sitemaps.test, a site that lists pages only its sitemaps
                name; bad-sitemaps.test: bombs, loops, entities           - pure
    changeweb.py changing.test: pages that change every few seconds and pages
                that never do, with ETag/Last-Modified and 304s           - pure
    hostile.py  the trio server on one loopback port, its request log,
                serve_in_thread, the config a crawler needs, the CLI
    peerrun.py  real `python -m peer` processes against it: cluster.toml,
                bounded runs, RSS polled from /proc, result rows, free_ports

    Beside them
    endless.py     a web without end: millions of URLs, for scale and crash runs
    nameserver.py  LocalDns: an authoritative DNS server for *.web.test on loopback
    proxies.py     ConnectProxy, Socks5Proxy: test proxies on loopback that log
                   every tunnel (client, target, user); their upstream leaves
                   from 127.0.0.2, so the web's log shows what came through
    politesim.py   simulated servers on simulated time: the frontier's and the
                   PID's request logs, no network, no clock              - pure
    changesim.py   a host whose pages change on a schedule, crawled and
                   revisited on simulated time by the revisit cores     - pure
    https.py       HttpsFarm: names on one 127.0.0.1 port chosen by SNI, with a
                   test CA's certificates (TestPki: expired, another name's,
                   self-signed, a client certificate), its log of SNI and ALPN
    demo.py        scripts/demo's ports and cluster.toml
    judge.py       a server's request log judged as a site owner would: the
                   most requests in any 1 s and 5 s window, ceilings, rates - pure
    owners.py      a ring's crawl judged from the request log alone: seconds
                   two peers asked one host, pages asked twice, coverage - pure
    netns.py       NetRing: peers and a web in network namespaces on a bridge,
                   links cut silently at the receiver (root only)
    partition.py   the webfarm and real peers in those namespaces through a
                   schedule of cuts, kills and restarts, judged by owners.py

    What the benchmarks (scripts/bench_*.py) share, one concept a module
    children.py    their processes: own session, never outliving the
                   benchmark, CPU read from /proc and os.wait4
    benchweb.py    the site graph rendered to files for nginx, or webfarm;
                   their request logs read into judge.Request rows
    benchcrawl.py  crawls by `python -m peer` processes and what they leave
    bench.py       options, timing, zmq frames, and every name above: the
                   one module a benchmark imports

The public API is :data:`__all__` below; the servers' names load on first
use. ``ringcrawl-webfarm --help`` (``python -m localweb.webfarm``) and
``python -m localweb.hostile --help`` print the cluster.toml lines a crawler
needs to reach each web.
"""

from localweb.hostile.cases import CASES, RETRY_AFTER, Case
from localweb.sitegraph.endpoints import BAD_HOST
from localweb.hostile.farm import Farm
from localweb.sitegraph.graph import SHOP_HOST, SiteSpec
from localweb.hostile.site import Site
from localweb.sitegraph.web import SiteGraph
from localweb.hostile.wire import End, Reply, reply

# The servers' names load on first use, so ``python -m localweb.hostile``
# (or ``-m localweb.webfarm``) runs its module once, as __main__, not also as
# an import of the package; and the pure layers load without trio.
_LAZY = {
    "DNS": "hostile.server", "HostileWeb": "hostile.server", "LogEntry": "hostile.server",
    "config_snippet": "hostile.server", "in_thread": "hostile.server", "serve_in_thread": "hostile.server",
    "FarmError": "sitegraph.server", "HostBehaviour": "sitegraph.server", "WebFarm": "sitegraph.server",
    "read_log": "sitegraph.server", "serve_webfarm": "sitegraph.server",
    "peer_config": "webfarm",
    "LocalDns": "services.nameserver",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"localweb.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'localweb' has no attribute {name!r}")


__all__ = [
    "BAD_HOST", "CASES", "Case", "DNS", "End", "Farm", "FarmError", "HostBehaviour", "HostileWeb",
    "LocalDns", "LogEntry", "RETRY_AFTER", "Reply", "SHOP_HOST", "Site", "SiteGraph", "SiteSpec", "WebFarm",
    "config_snippet", "in_thread", "peer_config", "read_log", "reply", "serve_in_thread", "serve_webfarm",
]
