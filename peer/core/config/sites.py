"""Per-site settings: ``[[site]]`` blocks that override the global config for their hosts.

cluster.toml may hold any number of ``[[site]]`` tables at its top level.
Each names its hosts and overrides some of ``[politeness]`` and ``[crawl]``
for them; docs/configuration.md ("Per-site settings") is the user's page.

Rules:

1. **Hosts.** ``hosts`` is a list of host globs matched exactly as
   ``crawl.allow_hosts`` is (:class:`peer.core.urls.scope.Scope`: case-insensitive,
   against the host name without its port, ``*`` crosses dots and
   ``*.example`` does not match ``example`` itself).
2. **Precedence: the first block wins.** Blocks are checked in file order;
   the first whose ``hosts`` match a host applies to it, and every key that
   block does not set falls back to the global config, never to a later
   block. Heritrix's sheets overlay each other key by key; one block per host
   is easier to predict: the settings of a host are those of one block read
   top to bottom, so the specific blocks go first. ``--check --host HOST``
   shows which block set each value.
3. **Keys** sit directly in the block (``rate = 6``, not a
   ``[site.politeness]`` sub-table): in TOML a sub-table of an array element
   is written ``[site.politeness]`` *after* its ``[[site]]`` line and binds
   to the last block above it, which reads like a new section, not a part of
   the block. The politeness keys (:data:`POLITENESS_KEYS`) replace the
   ``[politeness]`` ones, and the result is checked as ``[politeness]`` is
   (``max_delay`` at least 60/rate, ...), naming the block's key.
4. **Headers.** ``crawl.headers`` and a block's ``headers`` are tables of
   extra request headers. A block's headers extend the global ones, and
   replace one of the same name, compared case-insensitively. The fetcher
   frames the request itself, so the framing and hop-by-hop headers
   (:data:`REFUSED_HEADERS`, RFC 9110 §7.6.1, RFC 9112 §6-7) are a config
   error naming the key, as is ``User-Agent`` (``user_agent`` sets it, and
   robots.txt's group follows it) and a name or value an HTTP/1.1 head cannot
   carry (RFC 9110 §5.1, §5.5: a token; no CR, LF or NUL in a value). So is
   a ``Cookie`` header for hosts whose ``cookies`` are on: the jar
   (peer/core/http/cookies.py) writes that one.
5. **Resolution** (:meth:`SiteSettings.for_host`) is on the hot path: a new
   host of the frontier, every request's headers, every row's store options.
   The blocks' globs are one regex of named groups, tried in order, so a
   host costs one match whatever the number of blocks; its answer is kept in
   a bounded memo (cleared when full, like ``Scope``'s).

``priority`` replaces ``[frontier] priority`` (peer/core/urls/priority.py) for
the block's hosts, whole, as ``rules`` does ``crawl.rules``.

``rules`` replaces ``crawl.rules`` (peer/core/urls/rules.py) for the block's
hosts, whole: the block's list is checked in its own order, and the global
rules do not apply to those hosts. ``skip_extensions`` and the parameter
rules stay global: they make a URL's identity, which cannot depend on the
block a host falls in once the config changes.

``proxy`` (with ``proxy_auth_env``, ``proxy_auth_file``) is checked and
resolved by :mod:`peer.core.config.proxies` (its rule 4): a URL, or ``"direct"``.
``verify = false`` turns the certificate and host-name checks off for the
block's hosts only (a self-signed intranet or test server); there is no
global switch, and each such block is a warning at start. ``ca_file``
replaces ``crawl.ca_file`` for them (peer/net/tls.py builds one context per
distinct pair). ``retry_times`` and ``retry_statuses`` replace ``[retry]``'s
``times`` and ``statuses`` for a URL of the block's hosts (a fragile site
retried less, an API whose 404 is transient retried on it); what makes a
host down and how long it is waited for stay ``[retry]``'s
(peer/core/config/retry.py). ``max_pages`` and ``max_bytes`` are a budget
of the block's hosts together (peer/core/crawl/budgets.py), not a
replacement of a global key.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from peer.core.config.keys import REQUIRED, at_least_one, build, key as _key, non_empty, non_negative, type_name
from peer.core.config.retry import RetryConfig, check_statuses
from peer.core.config.sections import CrawlConfig, PolitenessConfig
from peer.core.crawl.robots import product_token
from peer.core.urls.priority import PriorityRules, parse_priority_rules
from peer.core.urls.rules import UrlRules, parse_rules, parse_url_rules
from peer.core.urls.domains import registered_domain
from peer.core.urls.normalize import hostname
from peer.core.urls.scope import Scope
from peer.errors import ConfigError, URLError

__all__ = [
    "POLITENESS_KEYS", "REFUSED_HEADERS", "STORE_KEYS", "Settings", "SiteBlock", "SiteSettings",
    "check_headers", "parse_sites", "site_reference",
]

#: Keys of a block that replace ``[politeness]``'s.
POLITENESS_KEYS = ("rate", "host_concurrency", "min_delay", "max_delay", "initial_delay")
#: Keys of a block that replace ``[crawl]``'s store options.
STORE_KEYS = ("store_body", "store_links")

#: Header names the fetcher writes or that frame the message (lower case).
#: Host, Content-Length and Transfer-Encoding frame it (RFC 9112 §3.2, §6);
#: Connection and the hop-by-hop names it lists by custom are the
#: connection's (RFC 9110 §7.6.1); Accept-Encoding is what the fetcher can
#: decode (gzip, deflate); User-Agent is ``user_agent``'s.
REFUSED_HEADERS = frozenset({
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
    "te", "trailer", "upgrade", "expect", "accept-encoding", "user-agent",
})

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 §5.6.2
_BAD_VALUE = re.compile(r"[\r\n\x00]")

#: Hosts whose resolution is memoised before the memo is cleared.
MEMO_SIZE = 65536


def _some_hosts(v: Any) -> str | None:
    return None if v else "a non-empty list of host globs such as ['*.example.com']"


@dataclass(frozen=True, slots=True)
class SiteBlock:
    """One ``[[site]]``: its hosts and the keys it sets (``None``: not set, the global value applies)."""

    hosts: tuple[str, ...] = _key(list, REQUIRED, "host globs this block applies to, matched like crawl.allow_hosts (required)", _some_hosts)
    rate: float | None = _key(float, None, "politeness.rate for these hosts: pages per minute per host; 0 = no rate limit", non_negative)
    host_concurrency: int | None = _key(int, None, "politeness.host_concurrency for these hosts: fetches in flight per host", at_least_one)
    min_delay: float | None = _key(float, None, "politeness.min_delay for these hosts, seconds", non_negative)
    max_delay: float | None = _key(float, None, "politeness.max_delay for these hosts, seconds; at least 60/rate", non_negative)
    initial_delay: float | None = _key(float, None, "politeness.initial_delay for these hosts, seconds", non_negative)
    user_agent: str | None = _key(str, None, "crawl.user_agent for these hosts: their User-Agent header, and the agent their robots.txt group is chosen for", non_empty)
    headers: Mapping[str, str] | None = _key(dict, None, "extra request headers for these hosts, name = value; they extend crawl.headers and replace one of the same name (case-insensitive)")
    store_body: bool | None = _key(bool, None, "crawl.store_body for these hosts")
    store_links: bool | None = _key(bool, None, "crawl.store_links for these hosts")
    rules: tuple[str, ...] | None = _key(list, None, "crawl.rules for these hosts, replacing the global list: include/exclude rules checked in order")
    proxy: str | None = _key(str, None, "crawl.proxy for these hosts: a proxy URL, or \"direct\" for none (docs/configuration.md, Proxies)")
    proxy_auth_env: str | None = _key(str, None, "the environment variable holding this block's proxy's user:password (crawl.proxy_auth_env's credentials go only to crawl.proxy)")
    proxy_auth_file: str | None = _key(str, None, "a file holding this block's proxy's user:password, relative to cluster.toml")
    verify: bool | None = _key(bool, None, "false: these hosts' certificates and host names are not checked (a self-signed test server; warned at start); there is no global switch")
    ca_file: str | None = _key(str, None, "crawl.ca_file for these hosts: the PEM bundle of CAs trusted, relative to cluster.toml")
    cookies: bool | None = _key(bool, None, "crawl.cookies for these hosts: keep the cookies they set and send them back (a site that serves pages only with a session cookie)")
    # A URL's retries by site (peer/core/config/retry.py); a host's outage policy (down_*) stays [retry]'s.
    retry_times: int | None = _key(int, None, "retry.times for these hosts: retries of a URL after a transient failure", non_negative)
    retry_statuses: tuple[str, ...] | None = _key(list, None, "retry.statuses for these hosts: the statuses retried, \"503\" or a class \"5xx\"", check_statuses)
    max_pages: int | None = _key(int, None, "page requests made to all the hosts of this block together (a budget: peer/core/crawl/budgets.py); in a ring split evenly among the members; 0 = no budget", non_negative)
    max_bytes: int | None = _key(int, None, "bytes on the wire received from all the hosts of this block together, split among a ring's members as max_pages; 0 = no budget", non_negative)
    # The order of these hosts' queues (peer/core/frontier/order.py).
    priority: tuple[str, ...] | None = _key(list, None, "frontier.priority for these hosts, replacing the global list: '<boost>:<pattern>' rules, the first match deciding")

    def sets(self, key: str) -> bool:
        """Whether this block sets ``key`` (else the global value applies)."""
        return getattr(self, key) is not None

    @property
    def label(self) -> str:
        """How ``--check`` and ``try`` name the block's hosts."""
        return ", ".join(self.hosts)


@dataclass(frozen=True, slots=True)
class Settings:
    """The settings in force for a host: one block's keys over the global config."""

    politeness: PolitenessConfig
    user_agent: str
    #: Extra request headers, (name as written, value), the global ones first.
    headers: tuple[tuple[str, str], ...]
    store_body: bool
    store_links: bool
    #: The index of the block that applies, or -1 for none (the global config).
    block: int = -1
    #: The robots.txt product token of ``user_agent`` (peer.core.crawl.robots).
    token: str = ""
    #: The URL rules in force for the host (``crawl.rules``, or the block's).
    urlrules: UrlRules | None = None
    #: TLS (peer/net/tls.py): whether the certificate is checked, and the CA bundle ("": the default store).
    verify: bool = True
    ca_file: str = ""
    #: Whether the host's cookies are kept and sent (peer/core/http/cookies.py).
    cookies: bool = False
    #: The retry policy of the host's URLs (``[retry]``, its times and statuses replaced by the block's).
    retry: RetryConfig = RetryConfig()
    #: The priority rules of the host's queue (``[frontier] priority``, or the block's).
    priority: PriorityRules = PriorityRules()


class SiteSettings:
    """Each host's :class:`Settings`, resolved from the blocks in order (rules 2, 5)."""

    __slots__ = ("blocks", "crawl", "politeness", "retry", "default", "_settings", "_groups", "_match", "_memo")

    def __init__(self, blocks: tuple[SiteBlock, ...], crawl: CrawlConfig, politeness: PolitenessConfig,
                 retry: RetryConfig | None = None, priority: PriorityRules | None = None) -> None:
        self.blocks = blocks
        self.crawl = crawl
        self.politeness = politeness
        self.retry = retry = retry if retry is not None else RetryConfig()
        urlrules = parse_url_rules(crawl, "")
        self.default = Settings(politeness, crawl.user_agent, tuple(crawl.headers.items()),
                                crawl.store_body, crawl.store_links, -1, product_token(crawl.user_agent),
                                urlrules, True, crawl.ca_file, crawl.cookies, retry,
                                priority if priority is not None else PriorityRules())
        self._settings = tuple(_resolve(i, b, crawl, politeness, urlrules, retry, self.default.priority)
                               for i, b in enumerate(blocks))
        self._groups = {f"b{i}": s for i, s in enumerate(self._settings)}
        # One alternation of named groups, block by block in order: the regex
        # engine tries them in that order, so the group that matched is the
        # first block (rule 2) and a host costs one match, not one per block.
        # fnmatch's own groups are atomic, not capturing: lastgroup is ours.
        parts = []
        for i, b in enumerate(blocks):
            globs = Scope(b.hosts).allow_hosts  # validated and normalised as allow_hosts are
            parts.append(f"(?P<b{i}>" + "|".join(fnmatch.translate(g) for g in globs) + ")")
        self._match = re.compile("|".join(parts)).match if parts else None
        self._memo: dict[str, Settings] = {}

    def __bool__(self) -> bool:
        """Whether any block exists (without one every host has :attr:`default`)."""
        return bool(self.blocks)

    def for_host(self, host: str) -> Settings:
        """The settings in force for ``host`` (a name or a ``host[:port]`` key)."""
        match = self._match
        if match is None:
            return self.default
        s = self._memo.get(host)
        if s is None:
            m = match(hostname(host))
            s = self.default if m is None else self._groups[m.lastgroup or ""]
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self._memo[host] = s
        return s

    def any(self, key: str) -> bool:
        """Whether ``key`` (``store_body``, ``store_links``, ``cookies``) is true for some host."""
        return bool(getattr(self.default, key)) or any(getattr(s, key) for s in self._settings)

    def label(self, host: str) -> str:
        """One line naming the block that applies to ``host``, for ``python -m peer try``."""
        i = self.for_host(host).block
        if i < 0:
            return "no [[site]] block: the global settings" if self.blocks else "no [[site]] blocks"
        return f"site[{i}]: {self.blocks[i].label}"

    def describe(self, host: str) -> list[str]:
        """The settings in force for ``host``, each with where it came from (``--check --host``)."""
        s = self.for_host(host)
        block = self.blocks[s.block] if s.block >= 0 else None
        pol, crawl = self.politeness, self.crawl
        default_pol, default_crawl = PolitenessConfig(), CrawlConfig()

        def origin(key: str, section: str, glob: Any, default: Any) -> str:
            if block is not None and block.sets(key):
                return f"site[{s.block}]: {block.label}"
            return "default" if getattr(glob, key) == getattr(default, key) else f"{section}.{key}"

        p = s.politeness
        shown = {
            "rate": f"{p.rate:g} pages/min" if p.rate else "0 (no rate limit)",
            "host_concurrency": str(p.host_concurrency),
            "min_delay": f"{p.floor_delay:.3g} s" + ("" if p.min_delay else ", nominal/1.1"),
            "max_delay": f"{p.max_delay:g} s",
            "initial_delay": f"{p.start_delay:.3g} s" + ("" if p.initial_delay else ", nominal 60/rate"),
        }
        lines = [f"{host}: " + (f"site[{s.block}] ({block.label})" if block else "no [[site]] block matches")]
        for key in POLITENESS_KEYS:
            lines.append(f"  {key} {shown[key]} ({origin(key, 'politeness', pol, default_pol)})")
        lines.append(f"  user_agent {s.user_agent!r}, robots.txt token {s.token!r} "
                     f"({origin('user_agent', 'crawl', crawl, default_crawl)})")
        for key in STORE_KEYS:
            lines.append(f"  {key} {'true' if getattr(s, key) else 'false'} ({origin(key, 'crawl', crawl, default_crawl)})")
        rules = s.urlrules.rules if s.urlrules is not None else ()
        shown_rules = ", ".join(f"{'include' if r.include else 'exclude'} {r.pattern!r}" for r in rules)
        lines.append(f"  rules {shown_rules or 'none'} ({origin('rules', 'crawl', crawl, default_crawl)})")
        tls_from = origin("verify", "crawl", crawl, default_crawl) if block is not None and block.sets("verify") \
            else origin("ca_file", "crawl", crawl, default_crawl)
        lines.append("  tls " + ("verify false: certificate and host name NOT checked" if not s.verify else
                                 f"verified against {s.ca_file or 'the default CA store'}") + f" ({tls_from})")
        lines.append(f"  cookies {'on: kept and sent back' if s.cookies else 'off'} "
                     f"({origin('cookies', 'crawl', crawl, default_crawl)})")
        r = s.retry
        where = (f"site[{s.block}]: {block.label}" if block is not None and (block.sets("retry_times") or block.sets("retry_statuses"))
                 else "default" if (r.times, r.statuses) == (RetryConfig().times, RetryConfig().statuses) else "[retry]")
        lines.append(f"  retry {r.times} times on statuses {', '.join(r.statuses) or 'none'} ({where})")
        lines += _budget_lines(host, block, s.block, crawl)
        shown_prio = ", ".join(f"{p.boost:+d} {p.pattern!r}" for p in s.priority.rules)
        where = (f"site[{s.block}]: {block.label}" if block is not None and block.sets("priority")
                 else "frontier.priority" if s.priority else "default")
        lines.append(f"  priority {shown_prio or 'by depth alone'} ({where})")
        if not s.headers:
            lines.append("  headers: none")
        own = {n.lower() for n in (block.headers or {})} if block is not None else set()
        for name, value in s.headers:
            where = f"site[{s.block}]: {block.label}" if block is not None and name.lower() in own else "crawl.headers"
            lines.append(f"  header {name}: {value} ({where})")
        return lines


def _budget_lines(host: str, block: SiteBlock | None, i: int, crawl: CrawlConfig) -> list[str]:
    """``--check --host``'s budget line (peer/core/crawl/budgets.py), only when a budget applies to ``host``."""
    def pages_bytes(pages: int | None, nbytes: int | None) -> str:
        return ", ".join(x for x in (f"{pages:,} pages" if pages else "", f"{nbytes:,} bytes" if nbytes else "") if x)

    parts = []
    if crawl.max_pages_per_host or crawl.max_bytes_per_host:
        parts.append(f"host {pages_bytes(crawl.max_pages_per_host, crawl.max_bytes_per_host)} "
                     "(crawl.max_pages_per_host, max_bytes_per_host)")
    if block is not None and (block.max_pages or block.max_bytes):
        parts.append(f"site {pages_bytes(block.max_pages, block.max_bytes)} for its hosts together (site[{i}])")
    if crawl.max_pages_per_domain or crawl.max_bytes_per_domain:
        parts.append(f"domain {registered_domain(hostname(host))}: "
                     f"{pages_bytes(crawl.max_pages_per_domain, crawl.max_bytes_per_domain)} for its hosts together "
                     "(crawl.max_pages_per_domain, max_bytes_per_domain)")
    if not parts:
        return []
    split = " (a site's and a domain's split evenly among a ring's members)" if len(parts) > 1 or not parts[0].startswith("host") else ""
    return ["  budgets " + "; ".join(parts) + split]


def _resolve(i: int, b: SiteBlock, crawl: CrawlConfig, pol: PolitenessConfig, urlrules: UrlRules,
             retry: RetryConfig, priority: PriorityRules) -> Settings:
    politeness = dataclasses.replace(pol, **{k: getattr(b, k) for k in POLITENESS_KEYS if b.sets(k)})
    headers = dict(crawl.headers)
    for name, value in (b.headers or {}).items():
        for old in [n for n in headers if n.lower() == name.lower()]:
            del headers[old]  # rule 4: by name, case-insensitively
        headers[name] = value
    agent = b.user_agent if b.user_agent is not None else crawl.user_agent
    if b.rules is not None:
        urlrules = dataclasses.replace(urlrules, rules=parse_rules(b.rules, "", f"site[{i}].rules"))
    return Settings(
        politeness, agent, tuple(headers.items()),
        crawl.store_body if b.store_body is None else b.store_body,
        crawl.store_links if b.store_links is None else b.store_links,
        i, product_token(agent), urlrules,
        b.verify is not False, crawl.ca_file if b.ca_file is None else b.ca_file,
        crawl.cookies if b.cookies is None else b.cookies,
        dataclasses.replace(retry, **{k: getattr(b, f"retry_{k}") for k in ("times", "statuses")
                                      if b.sets(f"retry_{k}")}),
        priority if b.priority is None else parse_priority_rules(b.priority, "", f"site[{i}].priority"),
    )


# ---------------------------------------------------------------------------
# Parsing (called by peer.core.config.cluster.parse_config)
# ---------------------------------------------------------------------------


def check_headers(table: Any, where: str, keypath: str) -> None:
    """A table of request headers, checked (rule 4); ConfigError names the key."""
    if not isinstance(table, dict):
        raise ConfigError(where, keypath, f"expected a table of header name = value, got {type_name(table)} {table!r}")
    for name, value in table.items():
        key = f"{keypath}.{name}"
        if not _TOKEN.fullmatch(name):
            raise ConfigError(where, key, "expected a header name (letters, digits and !#$%&'*+-.^_`|~)")
        if name.lower() in REFUSED_HEADERS:
            why = ("user_agent sets it" if name.lower() == "user-agent" else
                   "the fetcher asks for the encodings it can decode" if name.lower() == "accept-encoding" else
                   "the fetcher frames each request itself (RFC 9110 §7.6.1, RFC 9112)")
            raise ConfigError(where, key, f"{name} cannot be set: {why}")
        if not isinstance(value, str):
            raise ConfigError(where, key, f"expected a string, got {type_name(value)} {value!r}")
        if _BAD_VALUE.search(value):
            raise ConfigError(where, key, "expected a header value without CR, LF or NUL")


def parse_sites(raw: Any, crawl: CrawlConfig, politeness: PolitenessConfig, where: str) -> tuple[SiteBlock, ...]:
    """The ``[[site]]`` array of tables, validated against the global config (rules 1, 3, 4)."""
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise ConfigError(where, "site", "expected [[site]] tables (an array of tables)")
    _check_cookie_header(crawl.cookies, crawl.headers, "crawl.headers", "crawl.cookies", where)
    blocks = []
    for i, table in enumerate(raw):
        prefix = f"site[{i}]"
        if "headers" in table:
            check_headers(table["headers"], where, f"{prefix}.headers")
        block: SiteBlock = build(SiteBlock, table, where, prefix)
        if block.rules is not None:
            parse_rules(block.rules, where, f"{prefix}.rules")
        if block.priority is not None:
            parse_priority_rules(block.priority, where, f"{prefix}.priority")
        for j, pattern in enumerate(block.hosts):
            try:
                Scope((pattern,))
            except URLError as exc:
                raise ConfigError(where, f"{prefix}.hosts[{j}]", f"expected a host glob such as '*.example.com', got {pattern!r} ({exc})") from None
        if block.cookies is not False:
            on = crawl.cookies if block.cookies is None else True
            key = "crawl.cookies" if block.cookies is None else f"{prefix}.cookies"
            _check_cookie_header(on, block.headers or {}, f"{prefix}.headers", key, where)
            if block.cookies:
                _check_cookie_header(True, crawl.headers, "crawl.headers", key, where)
        _check_politeness(dataclasses.replace(politeness, **{k: getattr(block, k) for k in POLITENESS_KEYS if block.sets(k)}),
                          block, prefix, where)
        blocks.append(block)
    return tuple(blocks)


def _check_cookie_header(on: bool, headers: Mapping[str, str], keypath: str, switch: str, where: str) -> None:
    """A static Cookie header where the jar writes one is a config error (rule 4).

    RFC 6265 §5.4: a user agent "MUST NOT attach more than one Cookie
    header field"; merging a fixed value into the jar's would be a second
    source of cookies the jar neither expires nor scopes.
    """
    if not on:
        return
    for name in headers:
        if name.lower() == "cookie":
            raise ConfigError(where, f"{keypath}.{name}", f"a Cookie header cannot be set where {switch} is on: "
                              "the cookie jar writes it (RFC 6265 §5.4: one Cookie field); set one or the other")


def _check_politeness(pol: PolitenessConfig, block: SiteBlock, prefix: str, where: str) -> None:
    """``[politeness]``'s own checks on the merged values, naming the block's key where it set one."""

    def name(*keys: str) -> str:
        return f"{prefix}." + next((k for k in keys if block.sets(k)), keys[0])

    if pol.max_delay < pol.min_delay:
        raise ConfigError(where, name("max_delay", "min_delay"), f"expected max_delay ({pol.max_delay:g}) at least min_delay ({pol.min_delay:g})")
    if pol.initial_delay and not pol.min_delay <= pol.initial_delay <= pol.max_delay:
        raise ConfigError(where, name("initial_delay", "min_delay", "max_delay"), f"expected initial_delay 0 (the nominal 60/rate) or between min_delay ({pol.min_delay:g}) and max_delay ({pol.max_delay:g}), got {pol.initial_delay:g}")
    if pol.rate > 0 and pol.max_delay < pol.nominal_delay:
        raise ConfigError(where, name("max_delay", "rate"), f"expected max_delay at least 60/rate = {pol.nominal_delay:g} s (the delay that keeps a host at rate {pol.rate:g}), got {pol.max_delay:g}")


def site_reference() -> list[tuple[str, type, str, str]]:
    """(key, kind, shown default, doc) of a block's keys, for the config reference."""
    rows = []
    for f in dataclasses.fields(SiteBlock):
        shown = "(required)" if f.default is dataclasses.MISSING else "(global)"
        rows.append((f"site.{f.name}", f.metadata["kind"], shown, f.metadata["doc"]))
    return rows
