"""Proxies in cluster.toml: ``crawl.proxy`` and a ``[[site]]`` block's, parsed and checked (pure).

docs/configuration.md ("Proxies") is the user's page. Rules:

1. **Schemes.** ``http://host:port`` is an HTTP proxy, and every request
   goes through a ``CONNECT host:port`` tunnel (RFC 9110 §9.3.6), for http
   and https targets alike: one rule, so a connection through a proxy is
   the same as a direct one once open (the same request bytes, the same
   keep-alive pool by origin, TLS end to end), the proxy never sees a
   request, a path or a response to cache or rewrite, and credentials cross
   once a connection, not in each request (absolute-form requests would
   carry ``Proxy-Authorization`` every time). The price: a proxy that only
   tunnels to 443 (Squid's default ``http_access deny CONNECT !SSL_ports``)
   refuses plain-http targets, rows ``proxy_refused``; its operator must
   allow port 80. ``socks5h://`` is SOCKS5 (RFC 1928) with **remote DNS**:
   the proxy resolves the target's name. ``socks5://`` resolves the name
   here, through the crawl's resolver (``[dns]``, its cache and the SSRF
   guard), and hands the proxy an address, as curl does. An HTTP proxy
   resolves the name itself, like ``socks5h``; with both, a name ``[dns]
   resolve`` pins goes as its pinned address (``peer.net.proxy``), since
   no proxy can know a name only this machine maps.
2. **A port is required** (no scheme has one default every proxy uses), and
   nothing after it: no path, query or fragment.
3. **No credentials in cluster.toml.** A URL with ``user:password@`` is a
   config error saying where they go: ``proxy_auth_env`` names an
   environment variable, ``proxy_auth_file`` a file (relative to
   cluster.toml), holding ``user:password``; one of the two, never both.
   They are read at start by ``peer.net.proxy`` and never shown: ``--check``
   and ``try`` name their source, not their value.
4. **Per site.** A ``[[site]]`` block may set ``proxy`` (and its own auth
   keys) for its hosts: a URL, or ``"direct"`` for no proxy. ``""`` in a
   block is refused: it reads as "unset" to some and as "none" to others;
   ``"direct"`` says which. A block that does not set ``proxy`` uses
   ``crawl.proxy`` with ``crawl``'s credentials; one that sets it uses only
   its own auth keys, so one proxy's credentials are never sent to another.
5. **The proxy's own address** is checked by the SSRF guard
   (:mod:`peer.core.dns.guard`) unless ``crawl.proxy_allow_private``: a
   proxy spelt as a private, loopback or link-local IP, ``localhost``, or a
   name ``[dns] resolve`` maps to one, is a config error naming that key; a
   name DNS answers privately is refused at connect time (rows ``proxy``).
   ``crawl.allow_private`` is the targets' switch and does not cover it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Protocol

from peer.core.dns.guard import is_ip as _is_ip, is_public_address
from peer.errors import ConfigError

if TYPE_CHECKING:
    from peer.core.config.sections import CrawlConfig
    from peer.core.config.sites import SiteBlock, SiteSettings

__all__ = ["DIRECT", "Credentials", "Proxied", "Proxy", "ProxyRoutes", "ProxyScheme", "ProxySpec",
           "check_proxies", "host_proxy", "parse_credentials", "parse_proxy", "proxy_lines"]

#: What a ``[[site]]`` block's ``proxy`` says for "no proxy for these hosts".
DIRECT = "direct"


class ProxyScheme(Enum):
    """How a proxy is spoken to (rule 1)."""

    HTTP = "http"        # CONNECT tunnels; the proxy resolves the target
    SOCKS5 = "socks5"    # the target resolved here, an address sent
    SOCKS5H = "socks5h"  # the target's name sent: the proxy resolves it

    @property
    def remote_dns(self) -> bool:
        """Whether the proxy resolves the target's name (the guard sees only literals and [dns] resolve)."""
        return self is not ProxyScheme.SOCKS5


@dataclass(frozen=True, slots=True)
class ProxySpec:
    """One proxy as cluster.toml names it: no secret, so safe to show anywhere."""

    scheme: ProxyScheme
    host: str
    port: int
    #: Where its credentials come from: an environment variable's name, or a file; "" = none.
    auth_env: str = ""
    auth_file: str = ""

    @property
    def url(self) -> str:
        """``scheme://host:port``, the key of its connections in the idle pool."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme.value}://{host}:{self.port}"

    @property
    def auth_source(self) -> str:
        """Where the credentials come from, for a person: ``$NAME``, a path, or ""."""
        return f"${self.auth_env}" if self.auth_env else self.auth_file

    @property
    def label(self) -> str:
        """``socks5h://proxy:1080 (credentials from $X)``: what --check and try print."""
        source = self.auth_source
        return f"{self.url} (credentials from {source})" if source else f"{self.url} (no credentials)"


@dataclass(frozen=True, slots=True)
class Credentials:
    """A proxy's user name and password; the password never in a repr."""

    username: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Proxy:
    """A proxy to dial: its spec and, if it takes them, its credentials."""

    spec: ProxySpec
    credentials: Credentials | None = None

    @property
    def url(self) -> str:
        return self.spec.url


def parse_proxy(text: str, where: str, keypath: str, *, auth_env: str = "", auth_file: str = "",
                block: bool = False) -> ProxySpec | None:
    """``crawl.proxy`` or a block's ``proxy`` -> a spec, or None for no proxy (rules 1-4)."""
    if block and text == DIRECT:
        return None
    if not text:
        if block:
            raise ConfigError(where, keypath, f'expected a proxy URL or "{DIRECT}" (no proxy for these '
                              "hosts); leave the key out to use crawl.proxy")
        return None
    expected = "a proxy URL such as 'http://proxy.example:3128' or 'socks5h://proxy.example:1080'"
    scheme_text, sep, rest = text.partition("://")
    try:
        scheme = ProxyScheme(scheme_text.lower())
    except ValueError:
        scheme = None
    if not sep or scheme is None:
        raise ConfigError(where, keypath, f"expected {expected} (schemes: http, socks5, socks5h), got {text!r}")
    if "@" in rest:
        # The value is not repeated: it holds a secret.
        raise ConfigError(where, keypath, "credentials do not go in cluster.toml: put user:password in an "
                          "environment variable named by proxy_auth_env, or in a file named by proxy_auth_file")
    rest = rest[:-1] if rest.endswith("/") else rest
    if any(c in rest for c in "/?#"):
        raise ConfigError(where, keypath, f"expected {expected}, nothing after the port, got {text!r}")
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
        if not _is_ip(host):
            host = ""
    else:
        host, _, port = rest.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535 or not _host_ok(host):
        raise ConfigError(where, keypath, f"expected {expected}, with a host and a port 1-65535, got {text!r}")
    return ProxySpec(scheme, host.lower(), int(port), auth_env, auth_file)


def _host_ok(host: str) -> bool:
    return _is_ip(host) or all(c.isalnum() or c in "-._" for c in host) and host.isascii()


def parse_credentials(text: str, source: str) -> Credentials:
    """``user:password`` (the first line of a file, or an environment variable's value).

    ConfigError names ``source`` and never repeats the text. SOCKS5's
    username/password method (RFC 1929) carries each in at most 255 bytes.
    """
    line = text.splitlines()[0] if text.strip() else ""
    user, sep, password = line.partition(":")
    if not sep or not user:
        raise ConfigError(source, "", "expected proxy credentials as user:password on one line")
    if len(user.encode()) > 255 or len(password.encode()) > 255:
        raise ConfigError(source, "", "expected a user and a password of at most 255 bytes each (RFC 1929)")
    return Credentials(user, password)


# ---------------------------------------------------------------------------
# Checking (called by peer.core.config.cluster.parse_config)
# ---------------------------------------------------------------------------


def check_proxies(crawl: CrawlConfig, blocks: tuple[SiteBlock, ...], resolve: Mapping[str, Any],
                  where: str, base: PurePath) -> tuple[CrawlConfig, tuple[SiteBlock, ...]]:
    """Every proxy of ``[crawl]`` and the blocks checked (rules 2-5), the addresses against
    ``[dns] resolve``; both returned with their auth files made absolute against ``base``."""
    crawl = dataclasses.replace(crawl, proxy_auth_file=_absolute(crawl.proxy_auth_file, base))
    spec = _check_one(crawl.proxy, crawl.proxy_auth_env, crawl.proxy_auth_file, where, "crawl", False)
    if spec is not None:
        _check_address(spec, crawl, resolve, where, "crawl.proxy")
    sites = []
    for i, b in enumerate(blocks):
        prefix = f"site[{i}]"
        text = b.proxy
        if text is None:
            if b.proxy_auth_env is not None or b.proxy_auth_file is not None:
                raise ConfigError(where, f"{prefix}.proxy_auth_env" if b.proxy_auth_env is not None
                                  else f"{prefix}.proxy_auth_file",
                                  "only with the block's own proxy (without one, crawl.proxy and its credentials apply)")
            sites.append(b)
            continue
        if b.proxy_auth_file:
            b = dataclasses.replace(b, proxy_auth_file=_absolute(b.proxy_auth_file, base))
        spec = _check_one(text, b.proxy_auth_env or "", b.proxy_auth_file or "", where, prefix, True)
        if spec is not None:
            _check_address(spec, crawl, resolve, where, f"{prefix}.proxy")
        sites.append(b)
    return crawl, tuple(sites)


def _absolute(path: str, base: PurePath) -> str:
    return str(base / path) if path and not PurePath(path).is_absolute() and not path.startswith("~") else path


def _check_one(text: str, env: str, file: str, where: str, prefix: str, block: bool) -> ProxySpec | None:
    spec = parse_proxy(text, where, f"{prefix}.proxy", auth_env=env, auth_file=file, block=block)
    if env and file:
        raise ConfigError(where, f"{prefix}.proxy_auth_file", "set proxy_auth_env or proxy_auth_file, not both")
    if spec is None and (env or file):
        raise ConfigError(where, f"{prefix}.proxy_auth_env" if env else f"{prefix}.proxy_auth_file",
                          "credentials for no proxy: set proxy too, or remove this key")
    if env and not all(c.isalnum() or c == "_" for c in env):
        raise ConfigError(where, f"{prefix}.proxy_auth_env", f"expected an environment variable's name "
                          f"(letters, digits, _), got {env!r}")
    return spec


def _check_address(spec: ProxySpec, crawl: CrawlConfig, resolve: Mapping[str, Any], where: str,
                   keypath: str) -> None:
    """Rule 5: a proxy spelt as a private address is refused unless crawl.proxy_allow_private."""
    if crawl.proxy_allow_private:
        return
    addresses = static_addresses(spec.host, resolve)
    private = [a for a in addresses if not is_public_address(a)]
    if private:
        at = spec.host if private == [spec.host] else f"{spec.host} ({', '.join(private)})"
        raise ConfigError(where, keypath, f"the proxy's address {at} is not public: set "
                          "crawl.proxy_allow_private = true to use a proxy there")


def static_addresses(host: str, resolve: Mapping[str, Any]) -> tuple[str, ...]:
    """The addresses ``host`` has without a query: an IP literal, localhost, a [dns] resolve entry."""
    if _is_ip(host):
        return (host,)
    if host == "localhost" or host.endswith(".localhost"):
        return ("127.0.0.1",)  # RFC 6761 §6.3: always loopback
    for pattern, answer in resolve.items():
        if fnmatch.fnmatchcase(host, pattern.lower()):
            return (answer,) if isinstance(answer, str) else tuple(answer)
    return ()


# ---------------------------------------------------------------------------
# Routes: which proxy a host goes through
# ---------------------------------------------------------------------------


class ProxyRoutes:
    """Each host's proxy (rule 4): a block's, else ``crawl.proxy``'s; None = direct.

    Built only when some proxy is configured, so a crawl without one pays a
    single ``is None`` check a fetch.
    """

    __slots__ = ("default", "_by_block", "_sites")

    def __init__(self, default: Proxy | None, by_block: Mapping[int, Proxy | None],
                 sites: SiteSettings | None) -> None:
        self.default = default
        self._by_block = dict(by_block) if by_block and sites is not None else None
        self._sites = sites

    def for_host(self, host: str) -> Proxy | None:
        """The proxy ``host``'s connections go through, or None for a direct connection."""
        if self._by_block is None or self._sites is None:
            return self.default
        return self._by_block.get(self._sites.for_host(host).block, self.default)

    def proxies(self) -> tuple[Proxy, ...]:
        """Every proxy some host goes through, each once, ``crawl.proxy``'s first."""
        out = [] if self.default is None else [self.default]
        for p in (self._by_block or {}).values():
            if p is not None and p not in out:
                out.append(p)
        return tuple(out)


class Proxied(Protocol):
    """What ``--check``'s proxy lines read of a config (``ClusterConfig`` is one)."""

    @property
    def path(self) -> PurePath: ...
    @property
    def crawl(self) -> CrawlConfig: ...
    @property
    def sites(self) -> tuple[SiteBlock, ...]: ...


def proxy_lines(cfg: Proxied) -> list[str]:
    """``--check``'s lines on proxies: none without one; the source of credentials, never them."""
    lines = []
    crawl = cfg.crawl
    spec = parse_proxy(crawl.proxy, str(cfg.path), "crawl.proxy", auth_env=crawl.proxy_auth_env,
                       auth_file=crawl.proxy_auth_file)
    if spec is not None:
        remote = ("the proxy resolves names ([dns] resolve's given as their address)"
                  if spec.scheme.remote_dns else "names resolved here")
        lines.append(f"proxy: {spec.label}; {remote}; its own address "
                     + ("may be private (crawl.proxy_allow_private)" if crawl.proxy_allow_private else "must be public"))
    for i, b in enumerate(cfg.sites):
        if b.proxy is not None:
            own = parse_proxy(b.proxy, str(cfg.path), f"site[{i}].proxy", auth_env=b.proxy_auth_env or "",
                              auth_file=b.proxy_auth_file or "", block=True)
            lines.append(f"proxy for site[{i}] ({b.label}): " + (own.label if own is not None else "direct"))
    return lines


def host_proxy(cfg: Proxied, block: int) -> str | None:
    """``--check --host``'s proxy line for a host in ``block`` (-1: none), where it came from;
    None when no proxy is configured at all."""
    b = cfg.sites[block] if block >= 0 else None
    if b is not None and b.proxy is not None:
        own = parse_proxy(b.proxy, str(cfg.path), f"site[{block}].proxy", auth_env=b.proxy_auth_env or "",
                          auth_file=b.proxy_auth_file or "", block=True)
        return f"{own.label if own is not None else 'none, direct'} (site[{block}]: {b.label})"
    crawl = cfg.crawl
    if not crawl.proxy:
        return "none, direct (default)" if any(s.proxy for s in cfg.sites) else None
    spec = parse_proxy(crawl.proxy, str(cfg.path), "crawl.proxy", auth_env=crawl.proxy_auth_env,
                       auth_file=crawl.proxy_auth_file)
    return f"{spec.label if spec is not None else 'none'} (crawl.proxy)"
