"""cluster.toml's sections: every key's type, default, check and one-line doc, in frozen dataclasses.

``peer.core.config.cluster`` loads a file into these (and re-exports them); the
checks of a single value live here beside their keys, the checks across keys
and sections in the loader. A section of a feature of its own may live in
that feature's module (``peer.core.config.sitemaps``, ``peer.core.config.tls``)
with the same ``peer.core.config.keys.key``.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from peer.core.config.metrics import metrics_listen
from peer.core.config.keys import REQUIRED, at_least_one, key as _key, non_empty, non_negative, positive
from peer.core.http.inflate import CODINGS, MAX_WINDOW, check_codings, check_window
from peer.core.urls.normalize import MAX_URL_LENGTH
from peer.core.urls.rules import DEFAULT_SKIP_EXTENSIONS, DEFAULT_STRIP_PARAMS
from ring.addresses import bind_address as _bind_of, parse_endpoint
from ring.membership.protocol import MAX_WEIGHT
from ring.messages import MAX_ARRAY
from ring.seedadds import MAX_ANSWERED, MAX_WAITING

__all__ = ["BloomConfig", "CrawlConfig", "DnsConfig", "FrontierConfig", "PeerSpec", "PolitenessConfig",
           "PoliteGroup", "RingConfig", "bind_address", "parse_address", "parse_metrics_address"]

def _weight(v: Any) -> str | None:
    # A member's ring points grow with its weight: gossip refuses more too.
    return None if 0 < v <= MAX_WEIGHT else f"a number > 0 and at most {MAX_WEIGHT:g}"


def _at_least_two(v: Any) -> str | None:
    return None if v >= 2 else "an integer >= 2"


def _non_positive(v: Any) -> str | None:
    # A positive gain would speed up a host that is already over its setpoint.
    return None if v <= 0 else "a number <= 0 (a positive gain speeds up a host that is too fast)"


class PoliteGroup(enum.Enum):
    """What one politeness setpoint paces (``politeness.group``; docs/politeness.md)."""

    HOST = "host"      # each host its own setpoint
    DOMAIN = "domain"  # the hosts of one registered domain share one (frontier rule 8)


def _group(v: Any) -> str | None:
    names = [g.value for g in PoliteGroup]
    return None if v in names else " or ".join(f'"{n}"' for n in names)


def _probability(v: Any) -> str | None:
    return None if 0 < v < 1 else "a number between 0 and 1, exclusive"


def _url_length(v: Any) -> str | None:
    return None if 0 <= v <= MAX_URL_LENGTH else f"an integer from 0 to {MAX_URL_LENGTH} (the normaliser's own limit)"


def _seed_add_batch(v: Any) -> str | None:
    # ring.messages.MAX_ARRAY: the codec's bound on the lines of one frame.
    return None if 1 <= v <= MAX_ARRAY else f"an integer from 1 to {MAX_ARRAY} (the wire's array bound)"


#: The bounds of crawl.seed_add_waiting and crawl.seed_add_answers (their checks say why).
MAX_SEED_ADD_WAITING = 4096
MAX_SEED_ADD_ANSWERS = 65536


def _seed_add_waiting(v: Any) -> str | None:
    # Every frame received checks each waiting batch against its owners' acks
    # (ring.seedadds.SeedAdds.check): the bound keeps that scan short.
    return None if 1 <= v <= MAX_SEED_ADD_WAITING else f"an integer from 1 to {MAX_SEED_ADD_WAITING}"


def _seed_add_answers(v: Any) -> str | None:
    # An answer kept with five outcomes is ~570 bytes (tracemalloc): 65,536 of them ~37 MB.
    return None if 1 <= v <= MAX_SEED_ADD_ANSWERS else f"an integer from 1 to {MAX_SEED_ADD_ANSWERS}"


def _workers(v: Any) -> str | None:
    # One worker a core: a bound that a machine may reach, and a typo of
    # 1000 may not (each worker is a process and a port).
    return None if 1 <= v <= MAX_WORKERS else f"an integer from 1 to {MAX_WORKERS}"


def _mismatch(v: Any) -> str | None:
    return None if v in ("refuse", "adopt") else '"refuse" or "adopt"'


def _machine(v: Any) -> str | None:
    return None if v == "" else _peer_id(v)


#: The most workers one [[peer]] entry may stand for.
MAX_WORKERS = 256


def _peer_id(v: Any) -> str | None:
    return None if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", v) else (
        "1-64 characters of letters, digits, '_', '.', '-' (starting with a letter or digit)"
    )


def parse_address(address: str, *, wildcard: bool = False) -> tuple[str, int]:
    """``tcp://host:port`` -> (host, port), host without brackets; ValueError says what was expected.

    The forms of ``ring.addresses``: IPv4, [IPv6] or a DNS name; ``wildcard``
    (a bind) also takes ``*``, ``0.0.0.0`` and ``[::]``.
    """
    ep = parse_endpoint(address, wildcard=wildcard)
    return ep.host, ep.port


def _expected(exc: ValueError) -> str:
    # The caller adds "got <value>" itself: keep only what was expected, and why.
    head, sep, tail = str(exc).removeprefix("expected ").rpartition(", got ")
    if not sep:
        return str(exc)
    why = tail[tail.index(" (") + 2:-1] if tail.endswith(")") and " (" in tail else ""
    return f"{head}; {why}" if why else head


def _address(v: Any) -> str | None:
    if v == "":
        return None  # a solo peer needs none (peer.engine.observe); _check_cross requires it in a ring
    try:
        parse_address(v)
    except ValueError as exc:
        return _expected(exc)
    return None


def _bind(v: Any) -> str | None:
    if v == "":
        return None
    try:
        parse_address(v, wildcard=True)
    except ValueError as exc:
        return _expected(exc)
    return None


def parse_metrics_address(address: str) -> tuple[str, int]:
    """``[[peer]] metrics_address`` -> (host, port): ``host:port``, or ``:port`` / ``port`` for
    loopback (``peer.core.config.metrics`` rule 1); ValueError says what was expected."""
    return metrics_listen(address)


def _metrics_address(v: Any) -> str | None:
    if not v:
        return None
    try:
        parse_metrics_address(v)
    except ValueError as exc:
        return str(exc).split(", got")[0].removeprefix("expected ")
    return None


# ---------------------------------------------------------------------------
# The sections. Field order is the order of docs/configuration.md's reference.
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RingConfig:
    """``[ring]``: the cluster's identity and gossip timing."""

    name: str = _key(str, "ringcrawl", "the ring's name; peers of another ring are refused", non_empty)
    vnodes: int = _key(int, 256, "virtual nodes per unit of peer weight on the hash ring", at_least_one)
    gossip_interval: float = _key(float, 0.5, "seconds between gossip rounds", positive)
    suspect_after: float = _key(float, 2.0, "seconds a probe of a peer waits for its answer (direct or through others) before the peer is suspected", positive)
    dead_after: float = _key(float, 6.0, "seconds after an unanswered probe before its peer, suspected and not refuted, is declared dead", positive)
    lease: float = _key(float, 0.0, "seconds a peer may go on starting requests after it last heard from a majority of the ring vouching for its view; less than dead_after, at least 2 x gossip_interval (docs/membership.md); 0 = half of dead_after", non_negative)
    # 30 s: five dead_after of the default. A partition that heals within it
    # costs no page fetched twice (a peer cut off for 25 s is declared dead
    # 6-8 s in and is back ~18 s later), and a crashed peer's hosts wait
    # about half a minute, little next to a crawl's hours (peer/core/handoff/holds.py).
    takeover_after: float = _key(float, 30.0, "seconds the hosts of a peer declared dead wait, not fetched, for it to come back before another peer takes them over and fetches them: a peer beyond a partition that heals in time gets them back with nothing fetched twice; 0: at once", non_negative)
    curve_keys: str = _key(str, "", "directory of CurveZMQ keys (scripts/keys.py); empty: unauthenticated, unencrypted ring")
    tombstone_ttl: float = _key(float, 3600.0, "seconds a dead or left member is remembered (and gossiped) before it is forgotten; at least 2 x dead_after", positive)
    recv_queue: int = _key(int, 16, "messages queued per incoming ring connection before zmq stops reading it; memory bound per connection: (recv_queue + 1) x 8 MiB", at_least_one)
    seed_grace: float = _key(float, 60.0, "seconds from a peer's start in which a seed it has not heard from is not probed, so a rolling start longer than dead_after declares no seed dead; 0 = no grace", non_negative)
    join_seeds: int = _key(int, 3, "seeds a starting peer sends a Join to at a time, until one answers (each answer is the whole membership)", at_least_one)
    retransmit_mult: int = _key(int, 4, "each peer piggybacks a membership change it learns retransmit_mult x ceil(log10(N + 1)) times (SWIM's lambda log N)", at_least_one)
    batch_age: float = _key(float, 0.05, "seconds a partial URL batch (or an owed ack) waits for more before it is sent; the floor of the adaptive age", non_negative)
    max_batch_age: float = _key(float, 2.0, "the longest the adaptive batch age grows to keep message_budget: the latency forwarding may add per hop; at least batch_age", positive)
    message_budget: float = _key(float, 200.0, "forwarding frames per second a peer aims at (batches with acks piggybacked, lone acks); the batch age grows with peers and rate to keep it, up to max_batch_age; 0: a fixed batch_age", non_negative)
    send_window: int = _key(int, 8, "URL batches a peer may have sent to another and not had acked; more wait for its acks, so a slow receiver's queue never grows past them and probes are not stuck behind URLs; 0: no bound", non_negative)
    # "refuse" by default: a cluster.toml that differs from the running ring's at one
    # epoch is a file edited on some machines only (the ring's own changes are
    # later epochs, always taken); an operator who means the ring's settings to
    # win says "adopt" (ring.membership.epochs rule 6).
    config_mismatch: str = _key(str, "refuse", "what a peer that has not run yet does when its cluster.toml's live settings (rates, max_pages, rules, [[site]] blocks) differ from the ring's at the same config epoch (at epoch 0: the file a member runs or a majority of the voters holds): \"refuse\" stops it (exit 2) naming the keys that differ, or, when no file has a majority, waits saying so; \"adopt\" takes the ring's (with no majority: the file most voters hold) and logs the keys; a later epoch made by ring set is always taken (docs/operations.md, \"Peers started with different files\")", _mismatch)
    # 60 s: an upgrade's restart (a service manager's 5 s apart, a resume of
    # a few seconds) with room to spare; a peer not back by then dies as a
    # silent one does, and its hosts wait takeover_after more (ring.membership.restarts).
    restart_hold: float = _key(float, 60.0, "seconds the others keep a peer that announced a planned restart (ringcrawl-ring restart, or a stop without --leave) in the ring, its hosts its own and not fetched, without probing it; not back by then, it is dead as a silent peer is", positive)


@dataclass(frozen=True, slots=True)
class PeerSpec:
    """One ``[[peer]]``: an initial member (a seed of the gossip ring)."""

    id: str = _key(str, REQUIRED, "the peer's unique id (required)", _peer_id)
    address: str = _key(str, "", "the address the others reach it at, and its gossip records carry: tcp://host:port, host an IPv4 address, an IPv6 address in brackets or a DNS name (resolved at each connection); required when cluster.toml lists several peers (a solo peer without one answers ring status on a loopback port it records in data_dir/status-address.json)", _address)
    bind: str = _key(str, "", "where its ZeroMQ socket listens when not at address (NAT, containers, pods): tcp://host:port, e.g. tcp://0.0.0.0:5555, tcp://[::]:5555 (both families) or tcp://*:5555; its port may differ from address's; empty: address itself, or every interface on address's port when address is a DNS name (localhost apart)", _bind)
    data_dir: str = _key(str, "", "results, Bloom filter and frontier of this peer; default data/<id>, relative to cluster.toml")
    weight: float = _key(float, 1.0, "its share of the ring relative to the others, at most 10", _weight)
    metrics_address: str = _key(str, "", "host:port where the peer serves Prometheus metrics at /metrics, and /healthz and /readyz; a port alone (\"9101\" or \":9101\") is 127.0.0.1: a routable host must be written out; port 0: any free port, logged; empty: off ([metrics] has its token and TLS)", _metrics_address)
    # peer/core/config/workers.py: an entry of N workers is N peers at parse time.
    workers: int = _key(int, 1, "peers this entry runs on its machine, one per core: it stands for peers <id>-0 .. <id>-(N-1), on consecutive ports from address (and metrics_address when set), with data directories <data_dir>/0 ..; `python -m peer --id <id>` runs them all under one supervisor (docs/operations.md)", _workers)
    machine: str = _key(str, "", "the machine this peer runs on: peers of one machine are one client to a site (docs/politeness.md, Per machine), and crawl.user_agent's {machine} is it; empty: the entry's id", _machine)


def bind_address(spec: PeerSpec) -> str:
    """Where ``spec``'s ring socket listens: its ``bind``, or the default ``ring.addresses.bind_address`` gives.

    ``""`` for a peer without an address (a solo peer: no ring socket). ``*``
    as host means every interface (ZeroMQ's spelling; both families where
    the machine has IPv6).
    """
    return _bind_of(spec.address, spec.bind)


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """``[crawl]``: what to crawl and how each fetch behaves."""

    seeds: tuple[str, ...] = _key(list, [], "start URLs (http or https)")
    seeds_file: str = _key(str, "", "a file of start URLs, one a line (plain or gzip; blank lines and # comments "
                           "skipped), relative to cluster.toml; read as a stream by the lowest-id [[peer]], each "
                           "URL sent to its host's owner, its position journaled (docs/operations.md, Seeds by "
                           "the million); needs crawl.allow_hosts; \"\" = none")
    seed_add_batch: int = _key(int, 1000, "lines a `ring seed add` batch may carry: the tool cuts its "
                               "batches at it, and a peer answers a longer one over_cap, taking none "
                               "(counted seed_add_batch.over_cap); at most 10000", _seed_add_batch)
    seed_add_wait: float = _key(float, 10.0, "seconds a peer that took a `ring seed add` batch waits for "
                                "the owners' acks of the URLs it forwarded before it answers anyway, "
                                "\"durable\" (on its disk, resent until acked)", non_negative)
    seed_add_waiting: int = _key(int, MAX_WAITING, "`ring seed add` batches that may wait at one peer for their owners' "
                                 "acks at once; one more is answered busy, taking none (the tool asks again), "
                                 "counted seed_add_batch.busy and cap.seed_add_waiting; at most 4096",
                                 _seed_add_waiting)
    seed_add_answers: int = _key(int, MAX_ANSWERED, "answers to `ring seed add` batches a peer keeps, so a tool that "
                                 "lost one and asks again is answered as before, nothing taken twice; each "
                                 "older one forgotten counts cap.seed_add_answers (a batch asked again after "
                                 "is judged anew: counted twice, fetched once); at most 65536",
                                 _seed_add_answers)
    allow_hosts: tuple[str, ...] = _key(list, [], "glob patterns of hosts in scope; empty: the seeds' hosts")
    deny_hosts: tuple[str, ...] = _key(list, [], "glob patterns of hosts never crawled (deny wins over allow)")
    allow_domains: tuple[str, ...] = _key(list, [], "registered domains in scope besides allow_hosts: each covers itself and every name below it (example.com: www.example.com, a.b.example.com); with allow_hosts empty, these alone are the scope (not the seeds' hosts); deny_hosts still wins")
    max_pages: int = _key(int, 0, "cluster-wide page limit, never exceeded: split over the [[peer]] "
                          "peers, idle peers grant their spare to busy ones; 0 = no limit",
                          non_negative)
    max_depth: int = _key(int, 0, "links followed from a seed; 0 = no limit", non_negative)
    concurrency: int = _key(int, 64, "fetches in flight per peer", at_least_one)
    user_agent: str = _key(str, "ringcrawl/0.1 (+https://example.invalid/bot)", "User-Agent header, also the robots.txt agent; {machine} in it is replaced by the peer's [[peer]] machine (one comment per machine)", non_empty)
    obey_robots: bool = _key(bool, True, "fetch and obey each host's robots.txt")
    # RFC 9309 §2.3.1.4: an unreachable robots.txt means "disallow all" for
    # now, and a crawler may ask again. 30 s doubling over 4 tries gives up on
    # a dead host within 3.5 minutes (4.5 when each try times out), where a
    # fixed 10 minutes, three times, held a first crawl of a wrong port for
    # 20; a server restarting for a minute still comes back in time
    # (peer/core/crawl/robots.py rule 4).
    robots_retry: float = _key(float, 30.0, "seconds before asking again for a robots.txt that could not be read (refused, timed out, 5xx, 429), doubled at each later failure up to 600; a 429/503's Retry-After, capped, wins", positive)
    robots_tries: int = _key(int, 4, "fetches of an unreadable robots.txt before its host's URLs are recorded with the cause (connect, timeout, robots); with robots_retry 30: given up after 30 + 60 + 120 s of waits", at_least_one)
    timeout: float = _key(float, 15.0, "seconds for a whole fetch, body included", positive)
    max_body: int = _key(int, 2 * 1024 * 1024, "bytes of body kept, after decompression: a body announced larger (Content-Length) is not read, one found larger as it is read is cut there; both rows say too_large, and only a cut one is parsed", at_least_one)
    # peer/core/http/inflate.py: each coding decoded with its output bounded by max_body.
    accept_encodings: tuple[str, ...] = _key(list, list(CODINGS), "content codings asked for (Accept-Encoding), of gzip, deflate, br, zstd: narrow it for servers that mishandle one; a coding whose library is missing is left out; empty: identity only", check_codings)
    zstd_max_window: int = _key(int, MAX_WINDOW, "largest zstd window decoded, bytes (RFC 9659: 8 MiB, what HTTP clients need); a frame asking for more is error decode", check_window)
    max_redirects: int = _key(int, 5, "redirects followed per fetch", non_negative)
    allow_private: bool = _key(bool, False, "allow connecting to private, loopback and link-local addresses (SSRF guard off)")
    proxy: str = _key(str, "", "the proxy every fetch goes through: http://host:port (a CONNECT tunnel), socks5h://host:port (the proxy resolves names) or socks5://host:port (names resolved here); no credentials in it; empty: none (docs/configuration.md, Proxies)")
    proxy_auth_env: str = _key(str, "", "the environment variable holding the proxy's user:password; empty: none")
    proxy_auth_file: str = _key(str, "", "a file holding the proxy's user:password on its first line, relative to cluster.toml; empty: none")
    proxy_allow_private: bool = _key(bool, False, "allow a proxy at a private, loopback or link-local address (the SSRF guard of the proxy's own address; crawl.allow_private is the targets')")
    store_body: bool = _key(bool, False, "keep page bodies in the results")
    store_links: bool = _key(bool, False, "keep the link graph (from_url, to_url) in the results")
    # DuckDB keeps committed rows in pages.duckdb.wal until a checkpoint
    # moves them into the file (automatically only past 16 MiB of log): a
    # peer killed before one left a file without even its pages table, and
    # an operator who copied the file alone had nothing. A checkpoint runs in
    # the store's worker thread; measured on the 2-core box: 0.055 s for 6,000
    # new rows (a minute at 100 pages/s) in a 100k-row file, 0.001 s with
    # nothing new.
    results_checkpoint: float = _key(float, 60.0, "seconds between checkpoints of the results file while the crawl runs (also at stop): a copy of pages.duckdb without its .wal lacks at most this many seconds of rows; 0 = only at stop", non_negative)
    # TLS options: peer/net/tls.py builds a context once per distinct setting.
    ca_file: str = _key(str, "", "PEM bundle of the CA certificates trusted instead of the default store (certifi's, or SSL_CERT_FILE), relative to cluster.toml; [[site]] ca_file overrides it for its hosts")
    client_cert: str = _key(str, "", "PEM client certificate (chain) sent to servers that ask for one, relative to cluster.toml; its key in it or in client_key")
    client_key: str = _key(str, "", "PEM private key of client_cert, relative to cluster.toml; empty: in client_cert's file")
    client_key_password_env: str = _key(str, "", "name of the environment variable holding the client key's passphrase (never the passphrase itself)")
    headers: Mapping[str, str] = _key(dict, {}, "extra request headers, name = value; [[site]] headers extend them; Host, User-Agent, Accept-Encoding and framing or hop-by-hop headers are refused")
    cookies: bool = _key(bool, False, "keep the cookies a host sets (Set-Cookie) and send them back to that host alone (peer/core/http/cookies.py); [[site]] blocks turn it on or off for their hosts")
    cookie_max_bytes: int = _key(int, 4096, "longest cookie kept, name and value in bytes; a longer one is refused (RFC 6265 §6.1: at least 4096)", at_least_one)
    cookies_per_host: int = _key(int, 50, "cookies kept per host; one more evicts the host's oldest (RFC 6265 §6.1: at least 50)", at_least_one)
    cookies_max_total: int = _key(int, 10_000, "cookies kept by this peer over all hosts; a new one beyond is refused (RFC 6265 §6.1: at least 3000)", at_least_one)
    # Caps against a hostile web (peer/core/crawl/limits.py has the rules and figures).
    # 1000, not Nutch's db.max.outlinks.per.page of 100: real pages commonly
    # carry a few hundred links (index, archive and footer-heavy pages), which
    # a crawl should follow whole; 1000 still bounds what one page costs.
    max_links_per_page: int = _key(int, 1000, "links followed (and stored) per page, in document order; 0 = no limit", non_negative)
    follow_frames: bool = _key(bool, True, "follow the src of frame and iframe elements as links (a browser loads them without a click)")
    follow_meta_refresh: bool = _key(bool, True, "follow the URL of a meta http-equiv=refresh as a link (a browser goes there by itself)")
    follow_link_rel: bool = _key(bool, False, "follow link elements with rel next, prev or alternate (hreflang too) as links; off: alternates multiply a crawl")
    follow_noncanonical: bool = _key(bool, True, "follow the links of a page whose canonical URL is another one; false: only its row is kept")
    # 100,000: a site bigger than that is crawled in part, and four link-farm
    # hosts then hold at most 400,000 queued URLs instead of millions.
    max_urls_per_host: int = _key(int, 100_000, "URLs of one host queued by this peer, queued plus fetched; the next are dropped; 0 = no limit", non_negative)
    # Budgets: pages and bytes spent per host, [[site]] block and registered
    # domain (peer/core/crawl/budgets.py has the rules and their cost in a ring).
    max_pages_per_host: int = _key(int, 0, "page requests made to one host (each try counts; robots.txt, sitemaps and requisites do not); once spent its queued URLs are dropped and new ones refused, counted as not requested (budget_host); 0 = no budget", non_negative)
    max_bytes_per_host: int = _key(int, 0, "bytes of page bodies received from one host as they came on the wire (before content decoding); checked before each request, so passed by at most the answers in flight; 0 = no budget", non_negative)
    max_pages_per_domain: int = _key(int, 0, "page requests made to the hosts of one registered domain (public suffix list: a.example.co.uk and b.example.co.uk are one); in a ring each member spends its share, the budget split evenly among the members; 0 = no budget", non_negative)
    max_bytes_per_domain: int = _key(int, 0, "bytes on the wire received from the hosts of one registered domain, split among a ring's members as max_pages_per_domain; 0 = no budget", non_negative)
    # 2048: the sitemaps protocol's limit, close to old IE's 2083; RFC 9110
    # §4.1 asks servers for 8000, but longer URLs are mostly session or trap
    # junk. peer.core.urls.normalize refuses more than 4096 in any case.
    max_url_length: int = _key(int, 2048, "longest URL queued, in characters (normalised); 0 = the normaliser's own 4096", _url_length)
    max_path_repeat: int = _key(int, 3, "drop a URL whose path has one segment more often than this (/a/a/a/a/, /x/y/x/y/x/y/x/y/); 0 = off", non_negative)
    # URL scope and identity: peer/core/urls/rules.py has the syntax, the order and the defaults' reasons.
    rules: tuple[str, ...] = _key(list, [], "'include:<pattern>' or 'exclude:<pattern>' on the whole normalised URL, after the host scope, in order, the first match deciding; a pattern is a glob ('*' crosses '/') or 're:<regex>' searched; a URL no rule matches is excluded when any rule is an include, else included")
    skip_extensions: tuple[str, ...] = _key(list, list(DEFAULT_SKIP_EXTENSIONS), "file extensions never fetched (the URL path's last segment, case-insensitive): images, audio, video, archives, binaries, fonts, office documents, PDF, CSS; empty: none")
    strip_params: tuple[str, ...] = _key(list, list(DEFAULT_STRIP_PARAMS), "query (and ;path) parameters removed from every URL before it is seen, queued or stored: names or globs, case-insensitive; tracking tags and platform session ids by default; empty: none")
    sort_query: bool = _key(bool, False, "sort each URL's query parameters by name (stable), so ?b=1&a=2 and ?a=2&b=1 are one URL")


@dataclass(frozen=True, slots=True)
class PolitenessConfig:
    """``[politeness]``: the per-host PID rate controller (peer/core/politeness/pid.py), its ceiling, per-IP budgets.

    docs/politeness.md derives the defaults: the gains are the PID post's, read at
    its operating point (40 pages/min) and scaled to any rate and window.
    """

    rate: float = _key(float, 60.0, "setpoint, pages per minute per host; 0 = no rate limit", non_negative)
    window: float = _key(float, 60.0, "seconds between PID updates", positive)
    kp: float = _key(float, -0.05, "PID proportional gain, the PID post's: seconds per page of error at 40 pages/min, scaled to the rate", _non_positive)
    ki: float = _key(float, -0.01, "PID integral gain, scaled like kp", _non_positive)
    kd: float = _key(float, 0.0, "PID derivative gain, scaled like kp", _non_positive)
    initial_delay: float = _key(float, 0.0, "a new host's delay between request starts, seconds; 0 = the nominal 60/rate", non_negative)
    min_delay: float = _key(float, 0.0, "lower clamp of the delay, seconds; 0 = nominal/1.1 (60/rate/1.1)", non_negative)
    max_delay: float = _key(float, 60.0, "upper clamp of the delay, seconds", non_negative)
    # 15, not a round 100: the PID law adds Ki*Sum every window until the
    # errors sum back to zero, so a large clamp is a long overshoot. In
    # tests/core/test_pid.py's simulation (S=40) a clamp of 100 never settled after
    # a fast->slow step; 10-20 settled within 7-22 windows. In seed pages: at
    # S pages a window the clamp is integral_limit * S/40 pages.
    integral_limit: float = _key(float, 15.0, "clamp of the PID's summed error, in pages at 40 pages a window (scaled to the setpoint)", non_negative)
    host_concurrency: int = _key(int, 1, "fetches in flight per host", at_least_one)
    max_crawl_delay: float = _key(float, 30.0, "cap on a robots.txt Crawl-delay, seconds", non_negative)
    # Off by default: the local test web serves every *.web.test host from
    # 127.0.0.1, so a per-IP budget would throttle all of it as one site.
    ip_rate: float = _key(float, 0.0, "pages per minute per IP address, cluster-wide, shared by the hosts on it; 0 = off", non_negative)
    ip_concurrency: int = _key(int, 0, "fetches in flight per IP address, cluster-wide; 0 = no cap", non_negative)
    # RFC 9110 §10.2.3 sets no upper bound: 3600, or a date in 9999, would
    # hold the host, and so the end of the crawl, for hours or for ever.
    max_retry_after: float = _key(float, 300.0, "cap on a Retry-After, seconds; a longer one holds the host this long, each time, its URLs kept, until retry.down_give_up", positive)
    # Off ("host") by default: a registered domain's hosts are often separate
    # servers (a university's departments), and the local test web's hosts
    # are all under web.test.
    group: str = _key(str, "host", 'what one setpoint (rate, ceilings, host_concurrency) paces: "host", each host its own; "domain", the hosts of one registered domain (a.example.com and b.example.com) together, like one host, at the smallest rate among them, each peer its ring share (docs/politeness.md, Per registered domain); "domain" with ip_rate or ip_concurrency is refused', _group)

    @property
    def by_domain(self) -> bool:
        """Whether a registered domain's hosts share one setpoint (``group = "domain"``)."""
        return self.group == PoliteGroup.DOMAIN.value

    @property
    def setpoint(self) -> float:
        """The PID's target S in pages per window."""
        return self.rate * self.window / 60.0

    @property
    def nominal_delay(self) -> float:
        """T0 = 60/rate, the delay between starts at which a host runs at the setpoint (0 if off)."""
        return 60.0 / self.rate if self.rate > 0 else 0.0

    @property
    def floor_delay(self) -> float:
        """The delay's lower clamp: ``min_delay``, or nominal/1.1 if unset (docs/politeness.md)."""
        if self.min_delay > 0:
            return self.min_delay
        return min(self.nominal_delay / 1.1, self.max_delay)

    @property
    def start_delay(self) -> float:
        """A new host's delay: ``initial_delay``, or the nominal delay if unset, clamped."""
        d = self.initial_delay if self.initial_delay > 0 else self.nominal_delay
        return min(max(d, self.floor_delay), self.max_delay)


@dataclass(frozen=True, slots=True)
class DnsConfig:
    """``[dns]``: the per-peer DNS cache (RFC 1035 TTLs, RFC 2308 negative caching; peer/core/dns/cache.py)."""

    resolve: Mapping[str, str | tuple[str, ...]] = _key(dict, {}, "static answers, host glob -> IP or list of IPs, like curl --resolve")
    nameservers: tuple[str, ...] = _key(list, [], "DNS servers (IP or IP:port) to query; empty: the system's resolver")
    min_ttl: int = _key(int, 30, "lower clamp of a cached answer's TTL, seconds", non_negative)
    max_ttl: int = _key(int, 3600, "upper clamp of a cached answer's TTL, seconds", non_negative)
    negative_ttl: int = _key(int, 60, "seconds a failed lookup is cached", non_negative)
    cache_size: int = _key(int, 100_000, "names kept in the cache (least recently used evicted)", at_least_one)


@dataclass(frozen=True, slots=True)
class BloomConfig:
    """``[bloom]``: the seen-URL filter of this peer's partition (a scalable Bloom filter, peer/core/seen/bloom.py)."""

    capacity: int = _key(int, 10_000_000, "URLs the filter is sized for", at_least_one)
    error_rate: float = _key(float, 0.001, "false-positive rate at capacity; past it the filter grows and stays under 2 x error_rate", _probability)
    growth: int = _key(int, 2, "each slice the filter grows by is this many times the last one (2: less memory allocated ahead; 4: fewer slices to probe)", _at_least_two)
    max_capacity: int = _key(int, 320_000_000, "URLs at which the filter stops growing (about 726 MiB at the default capacity and error_rate); past it the false-positive rate climbs and the peer warns; = capacity: a fixed-size filter", at_least_one)
    disk_after: int = _key(int, 1_000_000, "URLs in the seen set past which a Bloom filter \"maybe seen\" waits for the exact disk sieve of 64-bit URL hashes (peer/core/seen/sieve.py) instead of dropping the URL; below it the filter alone decides (about error_rate of new URLs dropped, counted); 0 = exact from the start", non_negative)
    sieve_batch: int = _key(int, 4096, "URLs waiting for the sieve that start a pass at once (a batch of checks sorted and merged with the hashes on disk)", at_least_one)
    sieve_wait: float = _key(float, 0.5, "seconds a URL waits at most for the sieve's verdict", positive)
    sieve_ram: int = _key(int, 4_000_000, "URL hashes (8 bytes each) held in RAM before they are merged into a sorted run file under data_dir/seen/", at_least_one)


def _order(v: Any) -> str | None:
    return None if v in ("depth", "fifo") else "'depth' or 'fifo'"


def _head_per_host(v: Any) -> str | None:
    # A block's URL count has 20 bits in its ref (peer/state/spill.py).
    return None if 0 <= v <= 1 << 20 else f"a number from 0 to {1 << 20}"


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    """``[frontier]``: how much of each host's queue stays in RAM (peer/core/frontier/frontier.py rule 9, peer/state/spill.py) and the order it is served in (rule 11)."""

    head_per_host: int = _key(int, 64, "URLs of a host's queue kept in RAM; the rest go to append-only segment files in data_dir/state/frontier, in blocks of this many; 0 = every URL in RAM, no segment files", _head_per_host)
    segment_mb: int = _key(int, 64, "MiB at which a frontier segment file is closed and the next begun; a segment is deleted at the first snapshot after all its URLs were taken", at_least_one)
    checkpoint_mb: int = _key(int, 64, "MiB of journal after which the crawl state is checkpointed (also every 10 minutes); recovery replays at most this much, about 0.5 M records and a few seconds per 64 MiB", at_least_one)
    packed_heads: bool = _key(bool, True, "a snapshot keeps each host's head packed (format 3): a restart makes no string of a URL of a host it has not started; false lists them URL by URL (format 2), which a build before packed heads reads: set it and let one snapshot pass before rolling a peer back")
    # An ordered frontier (peer/core/frontier/order.py, frontier rule 11).
    order: str = _key(str, "depth", "how each host's queue is served: 'depth' (breadth-first: shallower URLs first, moved up or down by a sitemap's <priority> and by frontier.priority) or 'fifo' (in the order the URLs were found)", _order)
    priority: tuple[str, ...] = _key(list, [], "'<boost>:<pattern>' rules on the whole normalised URL, the first match deciding: a URL of boost +1 is served as if one level shallower, -1 one level deeper (-4 to +4); a pattern is a glob ('*' crosses '/') or 're:<regex>' searched, as in crawl.rules")
