"""cluster.toml: one file, shared by every peer, parsed once into frozen objects.

Every key, its type, its default, its check and its one-line documentation live
in the section dataclasses (``peer.core.config.sections``, and the modules of
features with a section of their own) and nowhere else (httpx's ``Timeout``/``Limits`` habit;
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
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peer.errors import ConfigError, URLError
from peer.core.config import workers
from peer.core.config.dedupe import DedupeConfig
from peer.core.config.keys import build, reject_unknown, type_name
from peer.core.config.proxies import check_proxies
from peer.core.config.sites import SiteBlock, check_headers, parse_sites, site_reference
from peer.core.config.tls import resolve_tls_paths
from peer.core.page.items import ExtractConfig, parse_extract
from peer.core.config.metrics import MetricsConfig, resolve_metrics
from peer.core.config.retry import RetryConfig
from peer.core.config.revisit import RevisitConfig
from peer.core.config.sitemaps import SitemapsConfig
from peer.core.config.warc import WarcConfig
from peer.core.urls.normalize import normalize
from peer.core.urls.scope import Scope, domain_name
from peer.core.dns.guard import is_ip as _is_ip
from peer.core.urls.rules import parse_url_rules
from peer.core.urls.priority import parse_priority_rules
from peer.core.config.sections import (BloomConfig, CrawlConfig, DnsConfig, FrontierConfig, PeerSpec,
                                PolitenessConfig, RingConfig, bind_address, parse_address,
                                       parse_metrics_address)

__all__ = [
    "BloomConfig",
    "ClusterConfig",
    "CrawlConfig",
    "DnsConfig",
    "FrontierConfig",
    "PeerSpec",
    "PolitenessConfig",
    "RingConfig",
    "bind_address",
    "check_politeness",
    "parse_config",
    "parse_address",
    "parse_metrics_address",
]

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
    warc: WarcConfig = WarcConfig()
    dedupe: DedupeConfig = DedupeConfig()
    revisit: RevisitConfig = RevisitConfig()
    retry: RetryConfig = RetryConfig()
    metrics: MetricsConfig = MetricsConfig()
    # [extract] is rule tables, not plain keys: parsed by peer.core.page.items, not SECTIONS.
    extract: ExtractConfig = ExtractConfig()
    # [[site]] is an array of override blocks: parsed by peer.core.config.sites.
    sites: tuple[SiteBlock, ...] = ()
    #: [[peer]] entries of several workers: the entry's id -> its workers' ids (peer.core.config.workers).
    groups: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def peer(self, peer_id: str) -> PeerSpec:
        """The ``[[peer]]`` entry with this id; ConfigError names the known ids."""
        for spec in self.peers:
            if spec.id == peer_id:
                return spec
        known = ", ".join(p.id for p in self.peers)
        if self.groups:  # what `python -m peer --id` also takes: a [[peer]] entry of several workers
            known += "; entries of workers: " + ", ".join(self.groups)
        raise ConfigError(str(self.path), "peer", f"no peer with id {peer_id!r} (known: {known})")

    def workers(self, entry_id: str) -> tuple[PeerSpec, ...]:
        """The peers a ``[[peer]] workers = N`` entry stands for; () for an id that names no such entry."""
        return tuple(self.peer(w) for w in self.groups.get(entry_id, ()))

    def machine(self, peer_id: str) -> str:
        """The machine of a listed peer; a peer not listed (a joiner) is a machine of its own."""
        spec = next((p for p in self.peers if p.id == peer_id), None)
        return spec.machine if spec is not None and spec.machine else peer_id

    def for_peer(self, peer_id: str) -> ClusterConfig:
        """The config as peer ``peer_id`` runs it: ``{machine}`` in a User-Agent replaced by its machine."""
        machine = self.machine(peer_id)
        if workers.MACHINE_PLACEHOLDER not in self.crawl.user_agent and not any(
                b.user_agent and workers.MACHINE_PLACEHOLDER in b.user_agent for b in self.sites):
            return self
        crawl = dataclasses.replace(self.crawl, user_agent=workers.user_agent_for(self.crawl.user_agent, machine))
        sites = tuple(b if b.user_agent is None else dataclasses.replace(b, user_agent=workers.user_agent_for(b.user_agent, machine))
                      for b in self.sites)
        return dataclasses.replace(self, crawl=crawl, sites=sites)

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
    "warc": WarcConfig,
    "dedupe": DedupeConfig,
    "revisit": RevisitConfig,
    "retry": RetryConfig,
    "metrics": MetricsConfig,
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

    reject_unknown(doc, [*SECTIONS, "peer", "extract", "site"], where, "")
    if isinstance(doc.get("crawl"), dict) and "headers" in doc["crawl"]:
        check_headers(doc["crawl"]["headers"], where, "crawl.headers")
    sections: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        table = doc.get(name, {})
        if not isinstance(table, dict):
            raise ConfigError(where, name, f"expected a table [{name}], got {type_name(table)}")
        sections[name] = build(cls, table, where, name)

    raw_peers = doc.get("peer", [])
    if not isinstance(raw_peers, list) or not all(isinstance(t, dict) for t in raw_peers):
        raise ConfigError(where, "peer", "expected [[peer]] tables (an array of tables)")
    if not raw_peers:
        raise ConfigError(where, "peer", "expected at least one [[peer]] entry with an id (and, in a ring of several, an address)")
    if base is None:
        base = p.parent
    entries = [_resolve_data_dir(build(PeerSpec, t, where, f"peer[{i}]"), base) for i, t in enumerate(raw_peers)]
    expanded: list[tuple[str, tuple[PeerSpec, ...]]] = []
    for i, entry in enumerate(entries):
        some, wrong = workers.expand(entry)
        if wrong is not None:
            raise ConfigError(where, f"peer[{i}].{wrong[0]}", f"expected {wrong[1]}, got {getattr(entry, wrong[0])!r}")
        expanded.append((entry.id, some))
    peers = tuple(spec for _, some in expanded for spec in some)
    _check_unique([(spec, f"peer[{i}]", len(some) > 1) for i, (_, some) in enumerate(expanded) for spec in some], where)
    groups = workers.groups(expanded)
    for i, (entry_id, _) in enumerate(expanded):
        if entry_id in groups and any(p.id == entry_id for p in peers):
            raise ConfigError(where, f"peer[{i}].id", f"duplicate id {entry_id!r}: it names this entry's workers and another peer")

    extract = parse_extract(doc.get("extract", {}), where)
    cfg = ClusterConfig(path=p, peers=peers, **sections, extract=extract, groups=groups)
    _check_cross(cfg, where)
    # Blocks are checked over a global config known to be valid; then TLS paths and proxies, of both.
    cfg = dataclasses.replace(cfg, sites=parse_sites(doc.get("site", []), cfg.crawl, cfg.politeness, where))
    crawl, sites = resolve_tls_paths(cfg.crawl, cfg.sites, base, where)
    crawl, sites = check_proxies(crawl, sites, cfg.dns.resolve, where, base)
    if crawl.seeds_file:
        f = Path(crawl.seeds_file).expanduser()
        crawl = dataclasses.replace(crawl, seeds_file=str(f if f.is_absolute() else base / f))
    return dataclasses.replace(cfg, crawl=crawl, sites=sites, metrics=resolve_metrics(cfg.metrics, base, where))


def _resolve_data_dir(spec: PeerSpec, base: Path) -> PeerSpec:
    d = Path(spec.data_dir or f"data/{spec.id}").expanduser()
    return dataclasses.replace(spec, data_dir=str(d if d.is_absolute() else base / d))


def _check_unique(peers: list[tuple[PeerSpec, str, bool]], where: str) -> None:
    """Ids, addresses and data directories of the peers (workers expanded), each named by its entry.

    ``peers``: (spec, its entry's key path, whether it is one of several workers).
    """
    for attr in ("id", "address", "data_dir"):
        seen: dict[str, str] = {}
        for spec, entry, worker in peers:
            value = getattr(spec, attr)
            if value == "" and attr == "address":
                continue  # missing, not duplicate: _check_cross says so
            if value in seen:
                mine = f" (by its worker {spec.id})" if worker else ""
                raise ConfigError(
                    where, f"{entry}.{attr}",
                    f"duplicate {attr} {value!r}{mine}, already used by {seen[value]}; each peer needs its own",
                )
            seen[value] = f"{entry} (its worker {spec.id})" if worker else entry


def _check_cross(cfg: ClusterConfig, where: str) -> None:
    """Checks that involve more than one key."""
    if len(cfg.peers) > 1:
        for i, spec in enumerate(cfg.peers):
            if not spec.address:
                raise ConfigError(where, f"peer[{i}].address", f"is required when cluster.toml lists several peers ({len(cfg.peers)}); expected tcp://host:port")
    for i, spec in enumerate(cfg.peers):
        if spec.bind and not spec.address:
            raise ConfigError(where, f"peer[{i}].bind", "is only for a peer with an address (the one the others reach it at); add address, or drop bind")
    if cfg.ring.dead_after <= cfg.ring.suspect_after:
        raise ConfigError(where, "ring.dead_after", f"expected more than ring.suspect_after ({cfg.ring.suspect_after}), got {cfg.ring.dead_after}")
    if cfg.ring.lease and not 2 * cfg.ring.gossip_interval <= cfg.ring.lease < cfg.ring.dead_after:
        raise ConfigError(where, "ring.lease", f"expected 0, or at least 2 x ring.gossip_interval ({2 * cfg.ring.gossip_interval:g}) and less than ring.dead_after ({cfg.ring.dead_after:g}), got {cfg.ring.lease}")
    if cfg.ring.tombstone_ttl < 2 * cfg.ring.dead_after:
        # Shorter, a stale peer's record could bring a dead member back (ring/membership/protocol.py).
        raise ConfigError(where, "ring.tombstone_ttl", f"expected at least 2 x ring.dead_after ({2 * cfg.ring.dead_after:g}), got {cfg.ring.tombstone_ttl}")
    if cfg.ring.suspect_after < cfg.ring.gossip_interval:
        raise ConfigError(where, "ring.suspect_after", f"expected at least ring.gossip_interval ({cfg.ring.gossip_interval}), got {cfg.ring.suspect_after}")
    if cfg.ring.max_batch_age < cfg.ring.batch_age:
        raise ConfigError(where, "ring.max_batch_age", f"expected at least ring.batch_age ({cfg.ring.batch_age}), got {cfg.ring.max_batch_age}")
    check_politeness(cfg.politeness, where)
    if cfg.dns.max_ttl < cfg.dns.min_ttl:
        raise ConfigError(where, "dns.max_ttl", f"expected at least dns.min_ttl ({cfg.dns.min_ttl}), got {cfg.dns.max_ttl}")
    if cfg.bloom.max_capacity < cfg.bloom.capacity:
        raise ConfigError(where, "bloom.max_capacity", f"expected at least bloom.capacity ({cfg.bloom.capacity}; equal for a filter that never grows), got {cfg.bloom.max_capacity}")
    if cfg.crawl.seeds_file and not cfg.crawl.allow_hosts:
        # The scope "the seeds' hosts" would need the whole file in memory.
        raise ConfigError(where, "crawl.allow_hosts", "expected host globs (\"*\" for every host) with "
                          "crawl.seeds_file: the scope cannot be the hosts of a file of millions of lines")
    for i, seed in enumerate(cfg.crawl.seeds):
        try:
            normalize(seed)
        except URLError as exc:
            hint = f"; write it as 'http://{seed.strip()}'" if "no scheme" in str(exc) else ""
            raise ConfigError(where, f"crawl.seeds[{i}]",
                              f"expected an http(s) URL, got {seed!r} ({exc}{hint})") from None
    for i, name in enumerate(cfg.crawl.allow_domains):
        try:
            domain_name(name)
        except URLError as exc:
            raise ConfigError(where, f"crawl.allow_domains[{i}]", f"expected a domain name such as 'example.com', got {name!r} ({exc})") from None
    for key in ("allow_hosts", "deny_hosts"):
        for i, pattern in enumerate(getattr(cfg.crawl, key)):
            try:
                Scope((pattern,))
            except URLError as exc:
                raise ConfigError(where, f"crawl.{key}[{i}]", f"expected a host glob such as '*.example.com', got {pattern!r} ({exc})") from None
    parse_url_rules(cfg.crawl, where)  # rules, skip_extensions, strip_params: ConfigError names the entry
    parse_priority_rules(cfg.frontier.priority, where)  # frontier rule 11: ConfigError names the entry
    for i, ns in enumerate(cfg.dns.nameservers):
        if not _is_ip_port(ns):
            raise ConfigError(where, f"dns.nameservers[{i}]", f"expected an IP address, optionally with :port, got {ns!r}")
    for pattern, answer in cfg.dns.resolve.items():
        for ip in (answer,) if isinstance(answer, str) else answer:
            if not _is_ip(ip):
                raise ConfigError(where, f"dns.resolve.{pattern}", f"expected an IP address, got {ip!r}")


def check_politeness(pol: PolitenessConfig, where: str) -> None:
    """``[politeness]``'s checks across its keys (also a live change's: peer.core.config.livekeys)."""
    if pol.max_delay < pol.min_delay:
        raise ConfigError(where, "politeness.max_delay", f"expected at least politeness.min_delay ({pol.min_delay}), got {pol.max_delay}")
    if pol.initial_delay and not pol.min_delay <= pol.initial_delay <= pol.max_delay:
        raise ConfigError(where, "politeness.initial_delay", f"expected 0 (the nominal 60/rate) or between min_delay ({pol.min_delay}) and max_delay ({pol.max_delay}), got {pol.initial_delay}")
    if pol.by_domain and (pol.ip_rate > 0 or pol.ip_concurrency > 0):
        # One host in two groups (its IP's and its domain's) would need a
        # third level in the scheduler's heaps; not built (docs/politeness.md).
        key = "politeness.ip_rate" if pol.ip_rate > 0 else "politeness.ip_concurrency"
        raise ConfigError(where, "politeness.group", f'expected "host" with {key} set: a host paced by both its IP address and its registered domain is not supported; drop one of them, got "domain"')
    if pol.rate > 0 and pol.max_delay < pol.nominal_delay:
        raise ConfigError(where, "politeness.max_delay", f"expected at least 60/rate = {pol.nominal_delay:g} s (the delay that keeps a host at politeness.rate), got {pol.max_delay}")


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
    rows += [(key, names[kind], shown, doc) for key, kind, shown, doc in site_reference()]
    return rows
