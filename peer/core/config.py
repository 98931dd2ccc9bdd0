"""cluster.toml: one file, shared by every peer, parsed once into frozen objects.

Every key, its type, its default, its check and its one-line documentation live
in the dataclasses below and nowhere else (httpx's ``Timeout``/``Limits`` habit;
the counter-example is a string-keyed settings bag read all over the code).
``scripts/config_reference.py`` writes docs/configuration.md's reference from
the same fields, and a test checks that the page is current and that
``cluster.toml`` mentions every key, so the documentation cannot drift from the code.

A user's mistake raises ``ConfigError`` with one line naming the file, the key
path and what was expected; the command-line front ends print it and exit 2.

Relative paths (``data_dir``) are resolved against the directory of
cluster.toml, so a peer started from any working directory finds the same data.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from peer.errors import ConfigError, URLError
from peer.core.configkeys import key as _key
from peer.core.inflate import CODINGS, MAX_WINDOW, check_codings, check_window
from peer.core.items import ExtractConfig, parse_extract
from peer.core.revisitconfig import RevisitConfig
from peer.core.sitemapconfig import SitemapsConfig
from peer.core.urls import MAX_URL_LENGTH, Scope, normalize
from peer.core.urlrules import DEFAULT_SKIP_EXTENSIONS, DEFAULT_STRIP_PARAMS, parse_url_rules
from ring.membership import MAX_WEIGHT

if TYPE_CHECKING:
    from peer.core.sites import SiteBlock

__all__ = [
    "BloomConfig",
    "ClusterConfig",
    "CrawlConfig",
    "DnsConfig",
    "FrontierConfig",
    "PeerSpec",
    "PolitenessConfig",
    "RingConfig",
    "parse_config",
    "parse_address",
    "parse_metrics_address",
]

_REQUIRED = dataclasses.MISSING


def _positive(v: Any) -> str | None:
    return None if v > 0 else "a number > 0"


def _weight(v: Any) -> str | None:
    # A member's ring points grow with its weight: gossip refuses more too.
    return None if 0 < v <= MAX_WEIGHT else f"a number > 0 and at most {MAX_WEIGHT:g}"


def _non_negative(v: Any) -> str | None:
    return None if v >= 0 else "a number >= 0"


def _at_least_one(v: Any) -> str | None:
    return None if v >= 1 else "an integer >= 1"


def _at_least_two(v: Any) -> str | None:
    return None if v >= 2 else "an integer >= 2"


def _non_empty(v: Any) -> str | None:
    return None if v.strip() else "a non-empty string"


def _non_positive(v: Any) -> str | None:
    # A positive gain would speed up a host that is already over its setpoint.
    return None if v <= 0 else "a number <= 0 (a positive gain speeds up a host that is too fast)"


def _probability(v: Any) -> str | None:
    return None if 0 < v < 1 else "a number between 0 and 1, exclusive"


def _url_length(v: Any) -> str | None:
    return None if 0 <= v <= MAX_URL_LENGTH else f"an integer from 0 to {MAX_URL_LENGTH} (peer.core.urls' own limit)"


def _peer_id(v: Any) -> str | None:
    return None if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", v) else (
        "1-64 characters of letters, digits, '_', '.', '-' (starting with a letter or digit)"
    )


_ADDRESS = re.compile(r"tcp://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")


def parse_address(address: str) -> tuple[str, int]:
    """``tcp://host:port`` -> (host, port); ValueError says what was expected."""
    m = _ADDRESS.fullmatch(address)
    if not m or not 1 <= int(m["port"]) <= 65535:
        raise ValueError(
            f"expected an address like 'tcp://127.0.0.1:5701' (tcp://host:port, port 1-65535), got {address!r}"
        )
    return m["host"].strip("[]"), int(m["port"])


def _address(v: Any) -> str | None:
    if v == "":
        return None  # a solo peer needs none (peer.engine.observe); _check_cross requires it in a ring
    try:
        parse_address(v)
    except ValueError as exc:
        # The caller adds "got <value>" itself: keep only what was expected.
        head, sep, _ = str(exc).removeprefix("expected ").rpartition(", got ")
        return head if sep else str(exc)
    return None


def parse_metrics_address(address: str) -> tuple[str, int]:
    """``host:port`` of ``[[peer]] metrics_address`` -> (host, port); ValueError says what was expected."""
    m = re.fullmatch(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})", address)
    if not m or not 0 <= int(m["port"]) <= 65535:
        raise ValueError(f"expected host:port such as '127.0.0.1:9101' (port 0-65535; empty: off), got {address!r}")
    return m["host"].strip("[]"), int(m["port"])


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

    name: str = _key(str, "ringcrawl", "the ring's name; peers of another ring are refused", _non_empty)
    vnodes: int = _key(int, 256, "virtual nodes per unit of peer weight on the hash ring", _at_least_one)
    gossip_interval: float = _key(float, 0.5, "seconds between gossip rounds", _positive)
    suspect_after: float = _key(float, 2.0, "seconds a probe of a peer waits for its answer (direct or through others) before the peer is suspected", _positive)
    dead_after: float = _key(float, 6.0, "seconds after an unanswered probe before its peer, suspected and not refuted, is declared dead", _positive)
    lease: float = _key(float, 0.0, "seconds a peer may go on starting requests after it last heard from a majority of the ring vouching for its view; less than dead_after, at least 2 x gossip_interval (docs/membership.md); 0 = half of dead_after", _non_negative)
    # 30 s: five dead_after of the default. A partition that heals within it
    # costs no page fetched twice (a peer cut off for 25 s is declared dead
    # 6-8 s in and is back ~18 s later), and a crashed peer's hosts wait
    # about half a minute, little next to a crawl's hours (peer/core/holds.py).
    takeover_after: float = _key(float, 30.0, "seconds the hosts of a peer declared dead wait, not fetched, for it to come back before another peer takes them over and fetches them: a peer beyond a partition that heals in time gets them back with nothing fetched twice; 0: at once", _non_negative)
    curve_keys: str = _key(str, "", "directory of CurveZMQ keys (scripts/keys.py); empty: unauthenticated, unencrypted ring")
    tombstone_ttl: float = _key(float, 3600.0, "seconds a dead or left member is remembered (and gossiped) before it is forgotten; at least 2 x dead_after", _positive)
    recv_queue: int = _key(int, 16, "messages queued per incoming ring connection before zmq stops reading it; memory bound per connection: (recv_queue + 1) x 8 MiB", _at_least_one)
    seed_grace: float = _key(float, 60.0, "seconds from a peer's start in which a seed it has not heard from is not probed, so a rolling start longer than dead_after declares no seed dead; 0 = no grace", _non_negative)
    join_seeds: int = _key(int, 3, "seeds a starting peer sends a Join to at a time, until one answers (each answer is the whole membership)", _at_least_one)
    retransmit_mult: int = _key(int, 4, "each peer piggybacks a membership change it learns retransmit_mult x ceil(log10(N + 1)) times (SWIM's lambda log N)", _at_least_one)
    batch_age: float = _key(float, 0.05, "seconds a partial URL batch (or an owed ack) waits for more before it is sent; the floor of the adaptive age", _non_negative)
    max_batch_age: float = _key(float, 2.0, "the longest the adaptive batch age grows to keep message_budget: the latency forwarding may add per hop; at least batch_age", _positive)
    message_budget: float = _key(float, 200.0, "forwarding frames per second a peer aims at (batches with acks piggybacked, lone acks); the batch age grows with peers and rate to keep it, up to max_batch_age; 0: a fixed batch_age", _non_negative)
    send_window: int = _key(int, 8, "URL batches a peer may have sent to another and not had acked; more wait for its acks, so a slow receiver's queue never grows past them and probes are not stuck behind URLs; 0: no bound", _non_negative)


@dataclass(frozen=True, slots=True)
class PeerSpec:
    """One ``[[peer]]``: an initial member (a seed of the gossip ring)."""

    id: str = _key(str, _REQUIRED, "the peer's unique id (required)", _peer_id)
    address: str = _key(str, "", "where its ZeroMQ socket listens, tcp://host:port; required when cluster.toml lists several peers (a solo peer without one answers ring status on a loopback port it records in data_dir/status-address.json)", _address)
    data_dir: str = _key(str, "", "results, Bloom filter and frontier of this peer; default data/<id>, relative to cluster.toml")
    weight: float = _key(float, 1.0, "its share of the ring relative to the others, at most 10", _weight)
    metrics_address: str = _key(str, "", "host:port where the peer serves Prometheus metrics at /metrics (port 0: any free port, logged); empty: off", _metrics_address)


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """``[crawl]``: what to crawl and how each fetch behaves."""

    seeds: tuple[str, ...] = _key(list, [], "start URLs (http or https)")
    allow_hosts: tuple[str, ...] = _key(list, [], "glob patterns of hosts in scope; empty: the seeds' hosts")
    deny_hosts: tuple[str, ...] = _key(list, [], "glob patterns of hosts never crawled (deny wins over allow)")
    max_pages: int = _key(int, 0, "cluster-wide page limit, never exceeded: split over the [[peer]] "
                          "peers, idle peers grant their spare to busy ones; 0 = no limit",
                          _non_negative)
    max_depth: int = _key(int, 0, "links followed from a seed; 0 = no limit", _non_negative)
    concurrency: int = _key(int, 64, "fetches in flight per peer", _at_least_one)
    user_agent: str = _key(str, "ringcrawl/0.1 (+https://example.invalid/bot)", "User-Agent header, also the robots.txt agent", _non_empty)
    obey_robots: bool = _key(bool, True, "fetch and obey each host's robots.txt")
    # RFC 9309 §2.3.1.4: an unreachable robots.txt means "disallow all" for
    # now, and a crawler may ask again. 30 s doubling over 4 tries gives up on
    # a dead host within 3.5 minutes (4.5 when each try times out), where a
    # fixed 10 minutes, three times, held a first crawl of a wrong port for
    # 20; a server restarting for a minute still comes back in time
    # (peer/core/robots.py rule 4).
    robots_retry: float = _key(float, 30.0, "seconds before asking again for a robots.txt that could not be read (refused, timed out, 5xx, 429), doubled at each later failure up to 600; a 429/503's Retry-After, capped, wins", _positive)
    robots_tries: int = _key(int, 4, "fetches of an unreadable robots.txt before its host's URLs are recorded with the cause (connect, timeout, robots); with robots_retry 30: given up after 30 + 60 + 120 s of waits", _at_least_one)
    timeout: float = _key(float, 15.0, "seconds for a whole fetch, body included", _positive)
    max_body: int = _key(int, 2 * 1024 * 1024, "bytes of body kept, after decompression: a body announced larger (Content-Length) is not read, one found larger as it is read is cut there; both rows say too_large, and only a cut one is parsed", _at_least_one)
    # peer/core/inflate.py: each coding decoded with its output bounded by max_body.
    accept_encodings: tuple[str, ...] = _key(list, list(CODINGS), "content codings asked for (Accept-Encoding), of gzip, deflate, br, zstd: narrow it for servers that mishandle one; a coding whose library is missing is left out; empty: identity only", check_codings)
    zstd_max_window: int = _key(int, MAX_WINDOW, "largest zstd window decoded, bytes (RFC 9659: 8 MiB, what HTTP clients need); a frame asking for more is error decode", check_window)
    max_redirects: int = _key(int, 5, "redirects followed per fetch", _non_negative)
    allow_private: bool = _key(bool, False, "allow connecting to private, loopback and link-local addresses (SSRF guard off)")
    proxy: str = _key(str, "", "the proxy every fetch goes through: http://host:port (a CONNECT tunnel), socks5h://host:port (the proxy resolves names) or socks5://host:port (names resolved here); no credentials in it; empty: none (docs/configuration.md, Proxies)")
    proxy_auth_env: str = _key(str, "", "the environment variable holding the proxy's user:password; empty: none")
    proxy_auth_file: str = _key(str, "", "a file holding the proxy's user:password on its first line, relative to cluster.toml; empty: none")
    proxy_allow_private: bool = _key(bool, False, "allow a proxy at a private, loopback or link-local address (the SSRF guard of the proxy's own address; crawl.allow_private is the targets')")
    store_body: bool = _key(bool, False, "keep page bodies in the results")
    store_links: bool = _key(bool, False, "keep the link graph (from_url, to_url) in the results")
    # TLS options: peer/net/tls.py builds a context once per distinct setting.
    ca_file: str = _key(str, "", "PEM bundle of the CA certificates trusted instead of the default store (certifi's, or SSL_CERT_FILE), relative to cluster.toml; [[site]] ca_file overrides it for its hosts")
    client_cert: str = _key(str, "", "PEM client certificate (chain) sent to servers that ask for one, relative to cluster.toml; its key in it or in client_key")
    client_key: str = _key(str, "", "PEM private key of client_cert, relative to cluster.toml; empty: in client_cert's file")
    client_key_password_env: str = _key(str, "", "name of the environment variable holding the client key's passphrase (never the passphrase itself)")
    headers: Mapping[str, str] = _key(dict, {}, "extra request headers, name = value; [[site]] headers extend them; Host, User-Agent, Accept-Encoding and framing or hop-by-hop headers are refused")
    cookies: bool = _key(bool, False, "keep the cookies a host sets (Set-Cookie) and send them back to that host alone (peer/core/cookies.py); [[site]] blocks turn it on or off for their hosts")
    cookie_max_bytes: int = _key(int, 4096, "longest cookie kept, name and value in bytes; a longer one is refused (RFC 6265 §6.1: at least 4096)", _at_least_one)
    cookies_per_host: int = _key(int, 50, "cookies kept per host; one more evicts the host's oldest (RFC 6265 §6.1: at least 50)", _at_least_one)
    cookies_max_total: int = _key(int, 10_000, "cookies kept by this peer over all hosts; a new one beyond is refused (RFC 6265 §6.1: at least 3000)", _at_least_one)
    # Caps against a hostile web (peer/core/limits.py has the rules and figures).
    # 1000, not Nutch's db.max.outlinks.per.page of 100: real pages commonly
    # carry a few hundred links (index, archive and footer-heavy pages), which
    # a crawl should follow whole; 1000 still bounds what one page costs.
    max_links_per_page: int = _key(int, 1000, "links followed (and stored) per page, in document order; 0 = no limit", _non_negative)
    follow_frames: bool = _key(bool, True, "follow the src of frame and iframe elements as links (a browser loads them without a click)")
    follow_meta_refresh: bool = _key(bool, True, "follow the URL of a meta http-equiv=refresh as a link (a browser goes there by itself)")
    follow_link_rel: bool = _key(bool, False, "follow link elements with rel next, prev or alternate (hreflang too) as links; off: alternates multiply a crawl")
    follow_noncanonical: bool = _key(bool, True, "follow the links of a page whose canonical URL is another one; false: only its row is kept")
    # 100,000: a site bigger than that is crawled in part, and four link-farm
    # hosts then hold at most 400,000 queued URLs instead of millions.
    max_urls_per_host: int = _key(int, 100_000, "URLs of one host queued by this peer, queued plus fetched; the next are dropped; 0 = no limit", _non_negative)
    # 2048: the sitemaps protocol's limit, close to old IE's 2083; RFC 9110
    # §4.1 asks servers for 8000, but longer URLs are mostly session or trap
    # junk. peer.core.urls refuses more than 4096 in any case.
    max_url_length: int = _key(int, 2048, "longest URL queued, in characters (normalised); 0 = peer.core.urls' 4096", _url_length)
    max_path_repeat: int = _key(int, 3, "drop a URL whose path has one segment more often than this (/a/a/a/a/, /x/y/x/y/x/y/x/y/); 0 = off", _non_negative)
    # URL scope and identity: peer/core/urlrules.py has the syntax, the order and the defaults' reasons.
    rules: tuple[str, ...] = _key(list, [], "'include:<pattern>' or 'exclude:<pattern>' on the whole normalised URL, after the host scope, in order, the first match deciding; a pattern is a glob ('*' crosses '/') or 're:<regex>' searched; a URL no rule matches is excluded when any rule is an include, else included")
    skip_extensions: tuple[str, ...] = _key(list, list(DEFAULT_SKIP_EXTENSIONS), "file extensions never fetched (the URL path's last segment, case-insensitive): images, audio, video, archives, binaries, fonts, office documents, PDF, CSS; empty: none")
    strip_params: tuple[str, ...] = _key(list, list(DEFAULT_STRIP_PARAMS), "query (and ;path) parameters removed from every URL before it is seen, queued or stored: names or globs, case-insensitive; tracking tags and platform session ids by default; empty: none")
    sort_query: bool = _key(bool, False, "sort each URL's query parameters by name (stable), so ?b=1&a=2 and ?a=2&b=1 are one URL")


@dataclass(frozen=True, slots=True)
class PolitenessConfig:
    """``[politeness]``: the per-host PID rate controller (peer/core/pid.py), its ceiling, per-IP budgets.

    docs/politeness.md derives the defaults: the gains are the PID post's, read at
    its operating point (40 pages/min) and scaled to any rate and window.
    """

    rate: float = _key(float, 60.0, "setpoint, pages per minute per host; 0 = no rate limit", _non_negative)
    window: float = _key(float, 60.0, "seconds between PID updates", _positive)
    kp: float = _key(float, -0.05, "PID proportional gain, the PID post's: seconds per page of error at 40 pages/min, scaled to the rate", _non_positive)
    ki: float = _key(float, -0.01, "PID integral gain, scaled like kp", _non_positive)
    kd: float = _key(float, 0.0, "PID derivative gain, scaled like kp", _non_positive)
    initial_delay: float = _key(float, 0.0, "a new host's delay between request starts, seconds; 0 = the nominal 60/rate", _non_negative)
    min_delay: float = _key(float, 0.0, "lower clamp of the delay, seconds; 0 = nominal/1.1 (60/rate/1.1)", _non_negative)
    max_delay: float = _key(float, 60.0, "upper clamp of the delay, seconds", _non_negative)
    # 15, not a round 100: the PID law adds Ki*Sum every window until the
    # errors sum back to zero, so a large clamp is a long overshoot. In
    # tests/test_pid.py's simulation (S=40) a clamp of 100 never settled after
    # a fast->slow step; 10-20 settled within 7-22 windows. In seed pages: at
    # S pages a window the clamp is integral_limit * S/40 pages.
    integral_limit: float = _key(float, 15.0, "clamp of the PID's summed error, in pages at 40 pages a window (scaled to the setpoint)", _non_negative)
    host_concurrency: int = _key(int, 1, "fetches in flight per host", _at_least_one)
    max_crawl_delay: float = _key(float, 30.0, "cap on a robots.txt Crawl-delay, seconds", _non_negative)
    # Off by default: the local test web serves every *.web.test host from
    # 127.0.0.1, so a per-IP budget would throttle all of it as one site.
    ip_rate: float = _key(float, 0.0, "pages per minute per IP address, cluster-wide, shared by the hosts on it; 0 = off", _non_negative)
    ip_concurrency: int = _key(int, 0, "fetches in flight per IP address, cluster-wide; 0 = no cap", _non_negative)
    # RFC 9110 §10.2.3 sets no upper bound: 3600, or a date in 9999, would
    # hold the host, and so the end of the crawl, for hours or for ever.
    max_retry_after: float = _key(float, 300.0, "cap on a Retry-After, seconds; after 3 longer ones in a row the host is given up", _positive)

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
    """``[dns]``: the per-peer DNS cache (RFC 1035 TTLs, RFC 2308 negative caching; peer/core/dnscache.py)."""

    resolve: Mapping[str, str | tuple[str, ...]] = _key(dict, {}, "static answers, host glob -> IP or list of IPs, like curl --resolve")
    nameservers: tuple[str, ...] = _key(list, [], "DNS servers (IP or IP:port) to query; empty: the system's resolver")
    min_ttl: int = _key(int, 30, "lower clamp of a cached answer's TTL, seconds", _non_negative)
    max_ttl: int = _key(int, 3600, "upper clamp of a cached answer's TTL, seconds", _non_negative)
    negative_ttl: int = _key(int, 60, "seconds a failed lookup is cached", _non_negative)
    cache_size: int = _key(int, 100_000, "names kept in the cache (least recently used evicted)", _at_least_one)


@dataclass(frozen=True, slots=True)
class BloomConfig:
    """``[bloom]``: the seen-URL filter of this peer's partition (a scalable Bloom filter, peer/core/bloom.py)."""

    capacity: int = _key(int, 10_000_000, "URLs the filter is sized for", _at_least_one)
    error_rate: float = _key(float, 0.001, "false-positive rate at capacity; past it the filter grows and stays under 2 x error_rate", _probability)
    growth: int = _key(int, 2, "each slice the filter grows by is this many times the last one (2: less memory allocated ahead; 4: fewer slices to probe)", _at_least_two)
    max_capacity: int = _key(int, 320_000_000, "URLs at which the filter stops growing (about 726 MiB at the default capacity and error_rate); past it the false-positive rate climbs and the peer warns; = capacity: a fixed-size filter", _at_least_one)
    disk_after: int = _key(int, 1_000_000, "URLs in the seen set past which a Bloom filter \"maybe seen\" waits for the exact disk sieve of 64-bit URL hashes (peer/core/seen.py) instead of dropping the URL; below it the filter alone decides (about error_rate of new URLs dropped, counted); 0 = exact from the start", _non_negative)
    sieve_batch: int = _key(int, 4096, "URLs waiting for the sieve that start a pass at once (a batch of checks sorted and merged with the hashes on disk)", _at_least_one)
    sieve_wait: float = _key(float, 0.5, "seconds a URL waits at most for the sieve's verdict", _positive)
    sieve_ram: int = _key(int, 4_000_000, "URL hashes (8 bytes each) held in RAM before they are merged into a sorted run file under data_dir/seen/", _at_least_one)


def _head_per_host(v: Any) -> str | None:
    # A block's URL count has 20 bits in its ref (peer/state/spill.py).
    return None if 0 <= v <= 1 << 20 else f"a number from 0 to {1 << 20}"


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    """``[frontier]``: how much of each host's queue stays in RAM (peer/core/frontier.py rule 9, peer/state/spill.py)."""

    head_per_host: int = _key(int, 64, "URLs of a host's queue kept in RAM; the rest go to append-only segment files in data_dir/state/frontier, in blocks of this many; 0 = every URL in RAM, no segment files", _head_per_host)
    segment_mb: int = _key(int, 64, "MiB at which a frontier segment file is closed and the next begun; a segment is deleted at the first snapshot after all its URLs were taken", _at_least_one)
    checkpoint_mb: int = _key(int, 64, "MiB of journal after which the crawl state is checkpointed (also every 10 minutes); recovery replays at most this much, about 0.5 M records and a few seconds per 64 MiB", _at_least_one)


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """The whole of cluster.toml, validated."""

    path: Path
    ring: RingConfig
    peers: tuple[PeerSpec, ...]
    crawl: CrawlConfig
    politeness: PolitenessConfig
    dns: DnsConfig
    bloom: BloomConfig
    frontier: FrontierConfig = FrontierConfig()
    sitemaps: SitemapsConfig = SitemapsConfig()
    revisit: RevisitConfig = RevisitConfig()
    # [extract] is rule tables, not plain keys: parsed by peer.core.items, not SECTIONS.
    extract: ExtractConfig = ExtractConfig()
    # [[site]] is an array of override blocks: parsed by peer.core.sites.
    sites: tuple[SiteBlock, ...] = ()

    def peer(self, peer_id: str) -> PeerSpec:
        """The ``[[peer]]`` entry with this id; ConfigError names the known ids."""
        for spec in self.peers:
            if spec.id == peer_id:
                return spec
        known = ", ".join(p.id for p in self.peers)
        raise ConfigError(str(self.path), "peer", f"no peer with id {peer_id!r} (known: {known})")

    def data_dir(self, peer_id: str) -> Path:
        """The absolute data directory of a listed peer."""
        return Path(self.peer(peer_id).data_dir)


# TOML table name -> section class. [[peer]] is handled apart: it is a list.
SECTIONS: dict[str, type] = {
    "ring": RingConfig,
    "crawl": CrawlConfig,
    "politeness": PolitenessConfig,
    "dns": DnsConfig,
    "bloom": BloomConfig,
    "frontier": FrontierConfig,
    "sitemaps": SitemapsConfig,
    "revisit": RevisitConfig,
}


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def parse_config(text: str, path: str | Path = "cluster.toml", *, base: Path | None = None) -> ClusterConfig:
    """Validate the TOML text of a cluster.toml found at ``path``.

    A relative ``data_dir`` is taken relative to ``base``, by default the
    file's own directory as given; ``peer.state.configfile.load_config``
    passes it resolved (this module reads no file system, not even the
    working directory).
    """
    p = Path(path)
    where = str(p)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(where, "", f"is not valid TOML: {exc}") from None

    # peer.core.sites builds on this module's helpers: imported here, not at the top.
    from peer.core.sites import check_headers, parse_sites

    _reject_unknown(doc, [*SECTIONS, "peer", "extract", "site"], where, "")
    if isinstance(doc.get("crawl"), dict) and "headers" in doc["crawl"]:
        check_headers(doc["crawl"]["headers"], where, "crawl.headers")
    sections: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        table = doc.get(name, {})
        if not isinstance(table, dict):
            raise ConfigError(where, name, f"expected a table [{name}], got {_tname(table)}")
        sections[name] = _build(cls, table, where, name)

    raw_peers = doc.get("peer", [])
    if not isinstance(raw_peers, list) or not all(isinstance(t, dict) for t in raw_peers):
        raise ConfigError(where, "peer", "expected [[peer]] tables (an array of tables)")
    if not raw_peers:
        raise ConfigError(where, "peer", "expected at least one [[peer]] entry with an id (and, in a ring of several, an address)")
    if base is None:
        base = p.parent
    peers = tuple(
        _resolve_data_dir(_build(PeerSpec, t, where, f"peer[{i}]"), base)
        for i, t in enumerate(raw_peers)
    )
    _check_unique(peers, where)

    extract = parse_extract(doc.get("extract", {}), where)
    cfg = ClusterConfig(path=p, peers=peers, **sections, extract=extract)
    _check_cross(cfg, where)
    # Blocks are checked over a global config known to be valid; then TLS paths and proxies, of both.
    cfg = dataclasses.replace(cfg, sites=parse_sites(doc.get("site", []), cfg.crawl, cfg.politeness, where))
    from peer.core.proxyconf import check_proxies
    from peer.core.tlsconfig import resolve_tls_paths

    return check_proxies(resolve_tls_paths(cfg, base, where), where, base)


def _build(cls: type, table: Mapping[str, Any], where: str, prefix: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    _reject_unknown(table, list(fields), where, prefix)
    values: dict[str, Any] = {}
    for name, f in fields.items():
        keypath = f"{prefix}.{name}"
        if name not in table:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(where, keypath, f"is required ({f.metadata['doc']})")
            continue
        values[name] = _convert(table[name], f.metadata["kind"], where, keypath)
        check = f.metadata["check"]
        if check is not None and (expected := check(values[name])) is not None:
            raise ConfigError(where, keypath, f"expected {expected}, got {table[name]!r}")
    try:
        return cls(**values)
    except ValueError as exc:  # keys checked against each other (a section's __post_init__)
        raise ConfigError(where, prefix, str(exc)) from None


def _convert(value: Any, kind: type, where: str, keypath: str) -> Any:
    # bool is an int in Python; in a config file `true` where a number is
    # expected is a mistake, not 1.
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(where, keypath, f"expected true or false, got {_tname(value)} {value!r}")
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(where, keypath, f"expected an integer, got {_tname(value)} {value!r}")
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise ConfigError(where, keypath, f"expected a number, got {_tname(value)} {value!r}")
    if kind is str:
        if isinstance(value, str):
            return value
        raise ConfigError(where, keypath, f"expected a string, got {_tname(value)} {value!r}")
    if kind is list:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(where, keypath, f"expected a list of strings, got {_tname(value)} {value!r}")
    if kind is dict:
        if isinstance(value, dict):
            out: dict[str, str | tuple[str, ...]] = {}
            for k, v in value.items():
                if isinstance(v, str):
                    out[k] = v
                elif isinstance(v, list) and v and all(isinstance(x, str) for x in v):
                    out[k] = tuple(v)
                else:
                    raise ConfigError(where, f"{keypath}.{k}", f"expected an IP address string or a list of them, got {v!r}")
            return out
        raise ConfigError(where, keypath, f"expected a table of host = IP, got {_tname(value)} {value!r}")
    raise AssertionError(f"unknown config kind {kind!r}")  # pragma: no cover - our bug


#: Keys other crawlers have (Scrapy's settings, Crawlee's options) that a
#: newcomer writes here, and where ringcrawl says the same.
ELSEWHERE = {
    **dict.fromkeys(("allow_paths", "deny_paths", "allow", "deny", "include", "exclude", "allowed_urls"),
                    'scope by URL is crawl.rules, e.g. ["include:*/library/*", "exclude:re:[?&]q="]'),
    **dict.fromkeys(("rate_limit", "download_delay", "delay", "requests_per_second"),
                    "the pace of a host is politeness.rate, in pages per minute"),
    **dict.fromkeys(("robotstxt_obey", "respect_robots", "robots"), "robots.txt is crawl.obey_robots"),
    **dict.fromkeys(("depth", "depth_limit"), "link depth is crawl.max_depth"),
    **dict.fromkeys(("max_requests", "closespider_pagecount"), "the page limit is crawl.max_pages"),
    **dict.fromkeys(("sitemap", "sitemap_urls"), "sitemaps to start from are [sitemaps] seeds"),
}


def _reject_unknown(table: Mapping[str, Any], known: list[str], where: str, prefix: str) -> None:
    for key in table:
        if key not in known:
            keypath = f"{prefix}.{key}" if prefix else key
            # 0.8: typos score 0.88-0.97 (concurency, alow_hosts, dead_afer);
            # at difflib's 0.6, allow_paths suggested allow_private (0.75) and
            # rate_limit integral_limit (0.67), keys that do something else.
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            if key.lower() in ELSEWHERE:
                hint = f"; {ELSEWHERE[key.lower()]}"
            raise ConfigError(where, keypath, f"unknown key{hint}")


def _tname(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def _resolve_data_dir(spec: PeerSpec, base: Path) -> PeerSpec:
    d = Path(spec.data_dir or f"data/{spec.id}").expanduser()
    return dataclasses.replace(spec, data_dir=str(d if d.is_absolute() else base / d))


def _check_unique(peers: tuple[PeerSpec, ...], where: str) -> None:
    for attr in ("id", "address", "data_dir"):
        seen: dict[str, int] = {}
        for i, spec in enumerate(peers):
            value = getattr(spec, attr)
            if value == "" and attr == "address":
                continue  # missing, not duplicate: _check_cross says so
            if value in seen:
                raise ConfigError(
                    where, f"peer[{i}].{attr}",
                    f"duplicate {attr} {value!r}, already used by peer[{seen[value]}]; each peer needs its own",
                )
            seen[value] = i


def _check_cross(cfg: ClusterConfig, where: str) -> None:
    """Checks that involve more than one key."""
    if len(cfg.peers) > 1:
        for i, spec in enumerate(cfg.peers):
            if not spec.address:
                raise ConfigError(where, f"peer[{i}].address", f"is required when cluster.toml lists several peers ({len(cfg.peers)}); expected tcp://host:port")
    if cfg.ring.dead_after <= cfg.ring.suspect_after:
        raise ConfigError(where, "ring.dead_after", f"expected more than ring.suspect_after ({cfg.ring.suspect_after}), got {cfg.ring.dead_after}")
    if cfg.ring.lease and not 2 * cfg.ring.gossip_interval <= cfg.ring.lease < cfg.ring.dead_after:
        raise ConfigError(where, "ring.lease", f"expected 0, or at least 2 x ring.gossip_interval ({2 * cfg.ring.gossip_interval:g}) and less than ring.dead_after ({cfg.ring.dead_after:g}), got {cfg.ring.lease}")
    if cfg.ring.tombstone_ttl < 2 * cfg.ring.dead_after:
        # Shorter, a stale peer's record could bring a dead member back (ring/membership.py).
        raise ConfigError(where, "ring.tombstone_ttl", f"expected at least 2 x ring.dead_after ({2 * cfg.ring.dead_after:g}), got {cfg.ring.tombstone_ttl}")
    if cfg.ring.suspect_after < cfg.ring.gossip_interval:
        raise ConfigError(where, "ring.suspect_after", f"expected at least ring.gossip_interval ({cfg.ring.gossip_interval}), got {cfg.ring.suspect_after}")
    if cfg.ring.max_batch_age < cfg.ring.batch_age:
        raise ConfigError(where, "ring.max_batch_age", f"expected at least ring.batch_age ({cfg.ring.batch_age}), got {cfg.ring.max_batch_age}")
    pol = cfg.politeness
    if pol.max_delay < pol.min_delay:
        raise ConfigError(where, "politeness.max_delay", f"expected at least politeness.min_delay ({pol.min_delay}), got {pol.max_delay}")
    if pol.initial_delay and not pol.min_delay <= pol.initial_delay <= pol.max_delay:
        raise ConfigError(where, "politeness.initial_delay", f"expected 0 (the nominal 60/rate) or between min_delay ({pol.min_delay}) and max_delay ({pol.max_delay}), got {pol.initial_delay}")
    if pol.rate > 0 and pol.max_delay < pol.nominal_delay:
        raise ConfigError(where, "politeness.max_delay", f"expected at least 60/rate = {pol.nominal_delay:g} s (the delay that keeps a host at politeness.rate), got {pol.max_delay}")
    if cfg.dns.max_ttl < cfg.dns.min_ttl:
        raise ConfigError(where, "dns.max_ttl", f"expected at least dns.min_ttl ({cfg.dns.min_ttl}), got {cfg.dns.max_ttl}")
    if cfg.bloom.max_capacity < cfg.bloom.capacity:
        raise ConfigError(where, "bloom.max_capacity", f"expected at least bloom.capacity ({cfg.bloom.capacity}; equal for a filter that never grows), got {cfg.bloom.max_capacity}")
    for i, seed in enumerate(cfg.crawl.seeds):
        try:
            normalize(seed)
        except URLError as exc:
            raise ConfigError(where, f"crawl.seeds[{i}]", f"expected an http(s) URL, got {seed!r} ({exc})") from None
    for key in ("allow_hosts", "deny_hosts"):
        for i, pattern in enumerate(getattr(cfg.crawl, key)):
            try:
                Scope((pattern,))
            except URLError as exc:
                raise ConfigError(where, f"crawl.{key}[{i}]", f"expected a host glob such as '*.example.com', got {pattern!r} ({exc})") from None
    parse_url_rules(cfg.crawl, where)  # rules, skip_extensions, strip_params: ConfigError names the entry
    for i, ns in enumerate(cfg.dns.nameservers):
        if not _is_ip_port(ns):
            raise ConfigError(where, f"dns.nameservers[{i}]", f"expected an IP address, optionally with :port, got {ns!r}")
    for pattern, answer in cfg.dns.resolve.items():
        for ip in (answer,) if isinstance(answer, str) else answer:
            if not _is_ip(ip):
                raise ConfigError(where, f"dns.resolve.{pattern}", f"expected an IP address, got {ip!r}")


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_ip_port(text: str) -> bool:
    if _is_ip(text):
        return True
    m = re.fullmatch(r"\[?(?P<ip>[^\]]+?)\]?:(?P<port>[0-9]{1,5})", text)
    return m is not None and _is_ip(m["ip"]) and 1 <= int(m["port"]) <= 65535


def reference() -> list[tuple[str, str, str, str]]:
    """(key, type, default, doc) for every key, in file order: docs/configuration.md's table."""
    names = {float: "number", int: "integer", str: "string", bool: "boolean",
             list: "list of strings", dict: "table"}
    rows = []
    for section, cls in [("ring", RingConfig), ("peer", PeerSpec), *[(n, c) for n, c in SECTIONS.items() if n != "ring"]]:
        for f in dataclasses.fields(cls):
            if cls is PeerSpec and f.name == "data_dir":
                default = "data/<id>"
            elif f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                default = "(required)"
            if isinstance(default, bool):
                shown = "true" if default else "false"
            elif isinstance(default, tuple):
                shown = "[]" if not default else repr(list(default))
            elif isinstance(default, dict):
                shown = "{}"
            elif isinstance(default, str) and default != "(required)":
                shown = f'"{default}"'
            else:
                shown = str(default)
            rows.append((f"{section}.{f.name}", names[f.metadata["kind"]], shown, f.metadata["doc"]))
    from peer.core.sites import site_reference

    rows += [(key, names[kind], shown, doc) for key, kind, shown, doc in site_reference()]
    return rows
