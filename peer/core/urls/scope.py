"""The crawl's scope by host and depth: ``allow_hosts``, ``deny_hosts`` and ``max_depth`` as globs,
and ``allow_domains`` as registered domains.

Patterns are matched against the host *name* (``peer.core.urls.normalize.hostname``),
so one rule covers every port of a host; a bounded memo keeps the check a
dict hit, as links repeat their hosts.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from peer.core.urls.domains import in_domains, is_address, registered_domain
from peer.core.urls.normalize import host_key, hostname, idna_label
from peer.errors import URLError

__all__ = ["Scope", "domain_name"]

_MEMO_SIZE = 65536


def _compile(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(fnmatch.translate(p) for p in patterns))


def _pattern(pattern: str) -> str:
    if not isinstance(pattern, str):
        raise URLError(f"host pattern is not a string: {pattern!r}")
    p = pattern.strip().lower()
    if p.endswith(".") and len(p) > 1:
        p = p[:-1]
    if not p:
        raise URLError("empty host pattern")
    if re.search(r"[/\s@]", p):
        raise URLError(f"host pattern {pattern!r} is not a host name glob (it looks like a URL)")
    if not p.startswith("[") and re.fullmatch(r"[^:]+:[0-9]+", p):
        raise URLError(f"host pattern {pattern!r} has a port; patterns match host names")
    if not p.isascii():
        labels = []
        for label in p.split("."):
            if not label.isascii() and not any(c in label for c in "*?["):
                try:
                    label = idna_label(label)
                except (UnicodeError, ValueError):
                    raise URLError(f"host pattern {pattern!r} is not a valid name") from None
            labels.append(label)
        p = ".".join(labels)
    return p


def domain_name(value: object) -> str:
    """An ``allow_domains`` entry, checked and normalised (lower case, IDNA, no final dot).

    A domain covers every name below it, so a public suffix (``com``,
    ``co.uk``, ``github.io``: the Public Suffix List's, peer/core/urls/domains.py)
    would let in whole swathes of the web: refused, as are globs, URLs, ports
    and addresses (``allow_hosts`` takes those).
    """
    if not isinstance(value, str):
        raise URLError(f"a domain is a string, not {type(value).__name__}")
    name = value.strip().lower()
    if name.endswith(".") and len(name) > 1:
        name = name[:-1]
    if not name:
        raise URLError("empty domain")
    if any(c in name for c in "*?[]"):
        raise URLError("a domain, not a glob: allow_hosts takes globs")
    if re.search(r"[/\s@:]", name):
        raise URLError("a domain name, not a URL or host:port")
    if is_address(name):
        raise URLError("an IP address has no domain: allow_hosts takes addresses")
    if not name.isascii():
        try:
            name = ".".join(idna_label(label) for label in name.split("."))
        except (UnicodeError, ValueError):
            raise URLError("not a valid domain name") from None
    if any(not label for label in name.split(".")):
        raise URLError("an empty label")
    if registered_domain("x." + name) == "x." + name:
        raise URLError("a public suffix: it would let in every site under it")
    return name


@dataclass(frozen=True, slots=True)
class Scope:
    """Which hosts and depths are crawled.

    Patterns are shell globs (:mod:`fnmatch`) matched case-insensitively
    against the host *name*, without port; IPv6 literals without brackets
    (``::1``). ``*`` matches any run of characters including dots, and matches
    nothing-at-all, so ``*.web.test`` matches ``s001.web.test`` and
    ``a.b.web.test`` but **not** ``web.test`` itself (as with TLS wildcard
    names); list ``web.test`` too to include the apex. Unicode patterns are
    IDNA-encoded label by label. Deny wins over allow. An empty ``allow_hosts``
    allows nothing: use :meth:`from_seeds` for "the seeds' hosts", or ``["*"]``
    for the whole web. ``max_depth`` 0 means no depth limit; seeds are depth 0.
    """

    allow_hosts: tuple[str, ...]
    deny_hosts: tuple[str, ...] = ()
    max_depth: int = 0
    # Registered domains (or any names) covering themselves and every name
    # below them (peer/core/urls/domains.py in_domains), allowed beside allow_hosts.
    allow_domains: tuple[str, ...] = ()
    _allow: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _deny: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _domains: frozenset[str] = field(init=False, repr=False, compare=False)
    # Links repeat their hosts, and a glob alternation costs a µs or more; a
    # bounded memo of host -> verdict makes the check a dict hit.
    _memo: dict[str, bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.allow_hosts, str) or isinstance(self.deny_hosts, str):
            raise URLError("host patterns must be a list of strings, not one string")
        allow = tuple(_pattern(p) for p in self.allow_hosts)
        deny = tuple(_pattern(p) for p in self.deny_hosts)
        if type(self.max_depth) is not int or self.max_depth < 0:
            raise URLError(f"max_depth must be an integer >= 0, not {self.max_depth!r}")
        if isinstance(self.allow_domains, str):
            raise URLError("allow_domains must be a list of strings, not one string")
        domains = tuple(dict.fromkeys(domain_name(d) for d in self.allow_domains))
        object.__setattr__(self, "allow_domains", domains)
        object.__setattr__(self, "_domains", frozenset(domains))
        object.__setattr__(self, "allow_hosts", allow)
        object.__setattr__(self, "deny_hosts", deny)
        object.__setattr__(self, "_allow", _compile(allow))
        object.__setattr__(self, "_deny", _compile(deny))
        object.__setattr__(self, "_memo", {})

    @classmethod
    def from_seeds(
        cls,
        seeds: Iterable[str],
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        max_depth: int = 0,
        domains: Sequence[str] = (),
    ) -> Scope:
        """A scope whose allow list, when it and ``domains`` are empty, is the seeds' host names."""
        if not allow and not domains:
            names = dict.fromkeys(hostname(host_key(s)) for s in seeds)
            # glob-escape: a seed's host is an exact name, not a pattern.
            allow = tuple(re.sub(r"([*?\[])", r"[\1]", n) for n in names)
        return cls(tuple(allow), tuple(deny), max_depth, tuple(domains))

    def allows_host(self, host: str) -> bool:
        """Is this host (a name or a ``host[:port]`` key) in scope?"""
        verdict = self._memo.get(host)
        if verdict is None:
            name = hostname(host)
            if self._deny is not None and self._deny.match(name):
                verdict = False
            else:
                verdict = ((self._allow is not None and self._allow.match(name) is not None)
                           or self.in_allowed_domain(name))
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[host] = verdict
        return verdict

    def in_allowed_domain(self, host: str) -> bool:
        """Does ``allow_domains`` cover this host? (Never an address: its digits are no domain.)"""
        if not self._domains:
            return False
        name = hostname(host)
        return not is_address(name) and in_domains(name, self._domains)

    def covering_domain(self, host: str) -> str | None:
        """The ``allow_domains`` entry that covers this host, the longest if several (for ``try``)."""
        if not self.in_allowed_domain(host):
            return None
        name = hostname(host)
        return max((d for d in self.allow_domains if in_domains(name, frozenset((d,)))), key=len)

    def denies_host(self, host: str) -> bool:
        """Does ``deny_hosts`` name this host? (A page requisite on another host is refused by it alone.)"""
        return self._deny is not None and self._deny.match(hostname(host)) is not None

    def allows(self, url: str, depth: int = 0, *, host: str | None = None) -> bool:
        """Is this URL, found at ``depth``, to be crawled? False for non-crawlable URLs.

        ``host``: its ``host_key``, when the caller has it already (one
        computation per URL per peer).
        """
        if self.max_depth and depth > self.max_depth:
            return False
        if host is None:
            try:
                host = host_key(url)
            except URLError:
                return False
        return self.allows_host(host)
