"""The cookie jar: ``Set-Cookie`` read, kept per host and sent back (RFC 6265), pure and bounded.

Off by default (``crawl.cookies``, a ``[[site]]`` block's ``cookies``): a
site that serves its pages only with a session cookie gets it back, every
other site sees a crawler without state. The engine asks
:meth:`CookieJar.header` before a request and hands each response's
``Set-Cookie`` values to :meth:`CookieJar.store`; ``now`` is wall time
(epoch seconds) in both, because ``Expires`` is a date and the jar outlives
the process (``peer.state.cookiefile``).

Rules:

1. **Host-only, always.** A cookie is kept for the host that set it and sent
   to that host alone (RFC 6265 §5.3 step 6, the host-only flag). A
   ``Domain`` attribute the host domain-matches (``Domain=example.com`` from
   ``www.example.com``) is accepted but does not widen the cookie to the
   parent's other hosts; one the host does not domain-match is refused
   (``cookies.refused.domain``), as a browser refuses it. A crawler must not
   let one site set cookies for another, and with no widening no public
   suffix list is needed: ``Domain=com`` reaches no host but the one that
   sent it. Ports are not part of the key (§8.5: cookies do not isolate by
   port).
2. **Attributes** (§5.2): ``Path`` (the default path of §5.1.4 when absent
   or not starting with ``/``); ``Secure`` (sent only over https; set over
   plain http it is refused, ``cookies.refused.secure``, as RFC 6265bis
   §5.7 step 8 says); ``Max-Age`` wins over ``Expires``; either in the past
   deletes a cookie of that name and path. ``HttpOnly`` and ``SameSite``
   concern scripts and cross-site requests a crawler does not make: ignored.
   A cookie with neither ``Max-Age`` nor ``Expires`` lasts the crawl (a
   resume included: the crawl is the session).
3. **Malformed** ``Set-Cookie`` (no ``=``, an empty name, a control
   character in the name or value) is ignored and counted as refused input,
   ``cookie.malformed`` (a drop, ``ring.vocabulary`` rule 4). An unreadable
   ``Expires`` or ``Max-Age`` is ignored alone, as §5.2.1-2 say.
4. **Caps** (``crawl.cookie_max_bytes``, ``crawl.cookies_per_host``,
   ``crawl.cookies_max_total``; RFC 6265 §6.1 asks for at least 4096 bytes a
   cookie, 50 a domain and 3000 in all): a cookie whose name and value are
   longer is refused (``cookies.refused.size``); a host's cookie past its cap
   evicts the host's oldest (``cookies.evicted``, as §5.3 evicts), so a host
   only ever pushes out its own; a new cookie when the jar is full is
   refused (``cookies.refused.total``), after the expired ones are purged,
   so that one host cannot push out another's session.
5. **Sending** (§5.4): the cookies of the request's host whose path
   path-matches and, if ``Secure``, over https, longest path first, then
   oldest first, as one ``Cookie`` field; expired ones are dropped then.

6. **Moving with the host** (``ring.statebox``): when a host changes
   owner its cookies leave this jar (:meth:`CookieJar.export_host`) and
   join the new owner's (:meth:`CookieJar.import_records`), so its next
   request carries the session the host set. What comes is remote input:
   a record of the wrong shape, a name or value with a control character,
   one over the size cap, or one for a host whose cookies are off there,
   is refused and counted (``cookies.refused.handed``); the caps hold as
   for any new cookie. The hosts whose cookies came so are kept in view
   (:meth:`CookieJar.handed_records`) until the jar's file is written
   after them (:meth:`CookieJar.saved`): the new owner's journal and
   snapshots hold them till then (peer/state/journal.py rule 6).

Every figure is counted in :attr:`CookieJar.counts`, by its name in
stats.json and ``ring status`` (``cookies.`` is a counter prefix).
"""

from __future__ import annotations

import email.utils
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timezone
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Cookie", "CookieJar", "CookieLimits", "cookie_words", "default_path", "parse_set_cookie",
           "path_match"]

# RFC 6265bis §5.7 steps 2-3: a name or value with a control character
# (other than HTAB) is ignored whole.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# An HTTP-date is 29 characters (RFC 9110 §5.6.7); a longer Expires is junk
# (and email.utils would spend time on it).
_DATE_MAX = 64
_DATE_ERRORS = (TypeError, ValueError, IndexError, OverflowError)
# A Max-Age beyond this (about 300 years) is clamped: only so that 400
# digits stay a finite float.
_MAX_AGE_MAX = 10**10


@dataclass(frozen=True, slots=True)
class CookieLimits:
    """The jar's caps (rule 4): ``crawl.cookie_max_bytes``, ``cookies_per_host``, ``cookies_max_total``."""

    max_bytes: int = 4096
    per_host: int = 50
    total: int = 10_000


@dataclass(frozen=True, slots=True)
class Cookie:
    """One stored cookie; ``expires`` is epoch seconds, None for the crawl's length; ``seq`` orders by age."""

    name: str
    value: str
    path: str
    secure: bool
    expires: float | None
    seq: int = 0


def default_path(path: str) -> str:
    """The default cookie path of a request path (RFC 6265 §5.1.4)."""
    if not path.startswith("/"):
        return "/"
    cut = path.rfind("/")
    return "/" if cut == 0 else path[:cut]


def path_match(request_path: str, cookie_path: str) -> bool:
    """Does a request path path-match a cookie path (RFC 6265 §5.1.4)?"""
    if request_path == cookie_path:
        return True
    return request_path.startswith(cookie_path) and (
        cookie_path.endswith("/") or request_path[len(cookie_path)] == "/")


def _expires(value: str) -> float | None:
    if len(value) > _DATE_MAX:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return when.timestamp()
    except _DATE_ERRORS:
        return None


def _max_age(value: str) -> int | None:
    digits = value[1:] if value.startswith("-") else value
    if not (digits.isascii() and digits.isdigit()):
        return None  # §5.2.2: not a number, the attribute is ignored
    if len(digits) > 11:
        return -1 if value.startswith("-") else _MAX_AGE_MAX
    return max(-1, min(int(value), _MAX_AGE_MAX))


def parse_set_cookie(value: str, host: str, path: str, secure: bool, now: float,
                     max_bytes: int) -> Cookie | str:
    """One ``Set-Cookie`` value from ``host`` for ``path``, at wall time ``now``.

    Returns the :class:`Cookie` to store (its ``expires`` at or before
    ``now``: a deletion), or why it is refused: ``malformed``, ``size``,
    ``domain`` or ``secure`` (rules 1-4). Never raises.
    """
    pair, *attributes = value.split(";")
    name, eq, val = pair.partition("=")
    name, val = name.strip(" \t"), val.strip(" \t")
    if not eq or not name or _CONTROL.search(name) or _CONTROL.search(val):
        return "malformed"
    if len((name + val).encode("utf-8", "surrogatepass")) > max_bytes:
        return "size"
    cookie_path, is_secure = "", False
    expires: float | None = None
    max_age: int | None = None
    for attribute in attributes:
        key, _, arg = attribute.partition("=")
        key, arg = key.strip(" \t").lower(), arg.strip(" \t")
        if key == "expires":
            expires = _expires(arg)
        elif key == "max-age":
            got = _max_age(arg)
            if got is not None:
                max_age = got
        elif key == "domain":
            domain = arg.lstrip(".").lower()
            # §5.2.3: an empty Domain is ignored. Rule 1: a matching one is
            # narrowed to the host itself, any other refused.
            if domain and host != domain and not host.endswith("." + domain):
                return "domain"
        elif key == "path":
            cookie_path = arg
        elif key == "secure":
            is_secure = True
    if is_secure and not secure:
        return "secure"
    if not cookie_path.startswith("/"):
        cookie_path = default_path(path)
    if max_age is not None:
        expires = now + max_age if max_age > 0 else now - 1.0
    return Cookie(name, val, cookie_path, is_secure, expires)


def _everywhere(host: str) -> bool:
    return True


class CookieJar:
    """Each host's cookies (module docstring): ``store`` what a response set, ``header`` for a request.

    ``enabled(host)`` says whether a host's cookies are kept and sent at
    all (``crawl.cookies`` and the ``[[site]]`` blocks'); ``changes`` grows
    with every stored or deleted cookie, so the engine writes the jar only
    when it changed.
    """

    __slots__ = ("limits", "enabled", "counts", "changes", "_hosts", "_size", "_seq", "_handed_at")

    def __init__(self, limits: CookieLimits | None = None,
                 enabled: Callable[[str], bool] = _everywhere) -> None:
        self.limits = limits or CookieLimits()
        self.enabled = enabled
        #: Figures by name (module docstring), for stats.json and ring status.
        self.counts: dict[str, int] = {}
        self.changes = 0
        self._hosts: dict[str, dict[tuple[str, str], Cookie]] = {}
        self._size = 0
        self._seq = 0
        #: host -> ``changes`` after cookies of it were handed to us (rule 6), until saved.
        self._handed_at: dict[str, int] = {}

    def __len__(self) -> int:
        return self._size

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def hosts(self) -> list[str]:
        """The hosts holding cookies."""
        return list(self._hosts)

    def cookies(self, host: str) -> list[Cookie]:
        """``host``'s cookies, oldest first (expired ones included until next sent)."""
        return sorted(self._hosts.get(host, {}).values(), key=lambda c: c.seq)

    # -- storing -------------------------------------------------------------

    def store(self, url: str, values: Iterable[str], now: float) -> list[str]:
        """Keep the ``Set-Cookie`` ``values`` of a response to ``url``; the names stored, in order.

        Nothing happens for a host whose cookies are off.
        """
        host, secure, path = _split(url)
        if not host or not self.enabled(host):
            return []
        stored = []
        for value in values:
            got = parse_set_cookie(value, host, path, secure, now, self.limits.max_bytes)
            if isinstance(got, str):
                self._count("cookie.malformed" if got == "malformed" else f"cookies.refused.{got}")
            elif self._keep(host, got, now):
                stored.append(got.name)
        return stored

    def _keep(self, host: str, cookie: Cookie, now: float) -> bool:
        jar = self._hosts.get(host)
        key = (cookie.name, cookie.path)
        old = jar.get(key) if jar is not None else None
        if cookie.expires is not None and cookie.expires <= now:
            if old is not None:  # §5.3 step 11-12: an expired cookie deletes its namesake
                self._drop(host, key)
                self._count("cookies.deleted")
                self.changes += 1
            return False
        if old is None:
            if self._size >= self.limits.total:
                self._purge(now)
                if self._size >= self.limits.total:
                    self._count("cookies.refused.total")
                    return False
            if jar is None:
                jar = self._hosts[host] = {}
            if len(jar) >= self.limits.per_host:
                oldest = min(jar.values(), key=lambda c: c.seq)
                self._drop(host, (oldest.name, oldest.path))
                self._count("cookies.evicted")
            self._size += 1
            self._seq += 1
            seq = self._seq
        else:
            seq = old.seq  # §5.3 step 11.3: the creation time of the old cookie
        assert jar is not None
        jar[key] = Cookie(cookie.name, cookie.value, cookie.path, cookie.secure, cookie.expires, seq)
        self._count("cookies.stored")
        self.changes += 1
        return True

    def _drop(self, host: str, key: tuple[str, str]) -> None:
        jar = self._hosts[host]
        del jar[key]
        self._size -= 1
        if not jar:
            del self._hosts[host]

    def _purge(self, now: float) -> None:
        for host in list(self._hosts):
            for key, c in list(self._hosts[host].items()):
                if c.expires is not None and c.expires <= now:
                    self._drop(host, key)
                    self._count("cookies.expired")
                    self.changes += 1

    # -- sending -------------------------------------------------------------

    def header(self, url: str, now: float) -> str | None:
        """The ``Cookie`` field value for a request of ``url`` at wall time ``now``, or None (rule 5)."""
        if not self._hosts:
            return None
        host, secure, path = _split(url)
        jar = self._hosts.get(host)
        if jar is None or not self.enabled(host):
            return None
        sent = []
        for key, c in list(jar.items()):
            if c.expires is not None and c.expires <= now:
                self._drop(host, key)
                self._count("cookies.expired")
                self.changes += 1
            elif (secure or not c.secure) and path_match(path, c.path):
                sent.append(c)
        if not sent:
            return None
        sent.sort(key=lambda c: (-len(c.path), c.seq))
        self._count("cookies.sent")
        return "; ".join(f"{c.name}={c.value}" for c in sent)

    # -- persistence (peer.state.cookiefile) -----------------------------------

    def records(self) -> list[list[Any]]:
        """Every cookie as ``[host, name, value, path, secure, expires, seq]``, for msgpack."""
        return [[host, c.name, c.value, c.path, c.secure, c.expires, c.seq]
                for host, jar in self._hosts.items() for c in jar.values()]

    def restore(self, records: Iterable[Any], now: float) -> int:
        """Put back :meth:`records` read from disk; returns how many were kept.

        A record of the wrong shape, an expired cookie, or one the caps now
        refuse (lowered since) is skipped: the file is ours, but a changed
        config decides.
        """
        kept, counts = 0, dict(self.counts)
        for r in sorted((r for r in records if _record_ok(r)), key=lambda r: r[6]):
            host, name, value, path, secure, expires, seq = r
            if len((name + value).encode("utf-8", "surrogatepass")) > self.limits.max_bytes:
                continue
            cookie = Cookie(name, value, path, secure, expires)
            if self._keep(host, cookie, now):
                kept += 1
        self.counts.clear()  # a restore is no new cookie (in place: the summary shares it)
        self.counts.update(counts)
        self.changes = 0
        return kept


    # -- moving with the host (rule 6) ----------------------------------------------

    def export_host(self, host: str) -> list[tuple[str, str, str, str, bool, float]]:
        """``host``'s cookies (a host name, no port), removed, as they travel: ``expires`` 0.0 for none."""
        self._handed_at.pop(host, None)
        jar = self._hosts.pop(host, None)
        if not jar:
            return []
        self._size -= len(jar)
        self.changes += 1
        return [(host, c.name, c.value, c.path, c.secure, 0.0 if c.expires is None else c.expires)
                for c in sorted(jar.values(), key=lambda c: c.seq)]

    def import_records(self, records: Iterable[Any], now: float, *, keep_held: bool = False) -> int:
        """Keep the cookies a host's previous owner handed over (rule 6); how many were kept.

        ``keep_held``: a cookie of a name and path the jar holds already is
        not taken (a restart re-imports what its journal kept over the jar's
        file, which is newer when it was written after them).
        """
        kept = 0
        hosts: set[str] = set()
        for r in records:
            ok = (isinstance(r, (list, tuple)) and len(r) == 6 and all(isinstance(x, str) for x in r[:4])
                  and isinstance(r[4], bool) and isinstance(r[5], (int, float)) and r[3].startswith("/"))
            if not ok or not r[0] or not r[1] or any(_CONTROL.search(x) for x in r[:4]) \
                    or len((r[1] + r[2]).encode("utf-8", "surrogatepass")) > self.limits.max_bytes \
                    or not self.enabled(r[0]):
                self._count("cookies.refused.handed")
                continue
            host, name, value, path, secure, expires = r
            if keep_held and (name, path) in self._hosts.get(host, {}):
                continue
            if self._keep(host, Cookie(name, value, path, secure, float(expires) or None), now):
                kept += 1
                hosts.add(host)
        for host in hosts:
            self._handed_at[host] = self.changes
        self._count("cookies.handed_in", kept)
        return kept

    def handed_records(self) -> list[tuple[str, str, str, str, bool, float]]:
        """The cookies now held of the hosts handed to us since the jar's file was last written (rule 6)."""
        return [(host, c.name, c.value, c.path, c.secure, 0.0 if c.expires is None else c.expires)
                for host in self._handed_at for c in self.cookies(host)]

    def saved(self, changes: int) -> None:
        """The jar's file was written as it stood at ``changes``: what was handed before is on disk."""
        self._handed_at = {h: at for h, at in self._handed_at.items() if at > changes}


def _record_ok(r: Any) -> bool:
    return (isinstance(r, (list, tuple)) and len(r) == 7 and all(isinstance(x, str) for x in r[:4])
            and isinstance(r[4], bool) and (r[5] is None or isinstance(r[5], (int, float)))
            and isinstance(r[6], int) and r[3].startswith("/"))


def _split(url: str) -> tuple[str, bool, str]:
    """(host, https?, path) of a URL, the host lower-cased without its port."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return "", False, "/"
    return host, parts.scheme.lower() == "https", parts.path or "/"


def cookie_words(jar: CookieJar | None, url: str, set_cookies: Iterable[str], sent: str | None,
                 now: float) -> str:
    """One line for ``python -m peer try``: the cookies a response set, kept, sent (names only).

    Call it after the jar stored the response's ``set_cookies``; ``sent`` is
    the Cookie value the request carried.

    Values are never shown: a session cookie is a secret, and the line may
    end up in a ticket.
    """
    host = _split(url)[0]
    names = [v.partition("=")[0].partition(";")[0].strip() or "?" for v in set_cookies]
    if jar is None or not jar.enabled(host):
        return ("off for this host (crawl.cookies, a [[site]] block's cookies)"
                + (f": the response set {', '.join(names)}, not kept" if names else ""))
    parts = [f"sent {_names(sent)}"]
    if names:
        held = {c.name for c in jar.cookies(host)}
        kept = [n for n in names if n in held]
        parts.append(f"set {', '.join(names)}, kept {', '.join(kept) or 'none'}")
    parts.append(f"the next request of this URL sends {_names(jar.header(url, now))}")
    return "; ".join(parts) + " (values not shown)"


def _names(header: str | None) -> str:
    if not header:
        return "none"
    return ", ".join(pair.partition("=")[0].strip() for pair in header.split("; "))
