"""What the crawler reads of a response head, every value checked: pure and total.

:func:`read_head` takes a status code and the header fields (as
:mod:`peer.core.http.http1` framed them) and the wall time ``now``, and returns a
frozen :class:`Head`: the status and the fields the crawler uses. A malformed
value is ignored or clamped, never raised, and its reason named, for the
fetcher (``peer.net.fetcher``) to count (``Fetcher.stats()["malformed"]``,
``FetchResult.malformed``). Measured before: ``Retry-After: ²`` (a Unicode
digit, ``str.isdigit()`` but not ``int()``) or 400 digits raised out of
``fetch`` and ended the peer, again on every resume. The reasons:

====================  ================================================
``status``            a code outside 100-599 (RFC 9110 §15): kept as
                      sent, and the response handled as a 5xx
                      (:func:`server_error`). :mod:`peer.core.http.http1`
                      refuses what h11 refuses (a code under 100 or
                      not three digits): error ``protocol``
``retry_after``       not delta-seconds or an HTTP-date (Unicode digits,
                      signs, fractions, several fields), or clamped to
                      :data:`RETRY_AFTER_MAX` (a date in year 9999)
``content_length``    not one run of ASCII digits, or sent with
                      Transfer-Encoding, which wins (RFC 9112 §6.3).
                      :mod:`peer.core.http.http1` already refuses negative,
                      non-digit, conflicting and over-20-digit values
                      (error ``protocol``), as h11 did
``content_type``      not ``type/subtype`` of RFC 9110 tokens, each at
                      most 127 characters (RFC 6838 §4.2), or several
                      fields (the last wins, as in WHATWG Fetch): an
                      invalid one is ``""``, so the body is sniffed
``charset``           empty, or not a label of at most 40 characters of
                      ``[a-z0-9_.:+-]``: None. A well-formed label Python
                      does not know is kept: :mod:`peer.core.page.extract` maps the
                      WHATWG labels Python lacks (``x-user-defined``,
                      ``x-gbk``) and falls back for the rest
``location``          empty, over :data:`MAX_LOCATION` characters, with a
                      control character (h11 lets C0 bytes through), or
                      several different fields: None
``content_encoding``  a coding we cannot decode (its library missing),
                      more than ``peer.core.http.inflate.MAX_CODINGS``
                      stacked, or a garbage list: error ``decode``
``x_robots_tag``,     more than ``peer.core.page.directives.MAX_FIELDS``
``link``              X-Robots-Tag (or Link) fields, or one over
                      ``MAX_FIELD`` characters: the rest is not read
``set_cookie``        more than :data:`MAX_SET_COOKIES` Set-Cookie fields:
                      the rest is not read. The values are handed over
                      unparsed (:mod:`peer.core.http.cookies` reads them, only
                      for a host whose cookies are on)
``excess``            bytes after the end of a response (beyond its
                      Content-Length, or a body on a 204/304): the
                      connection is closed, not reused. Not a field:
                      the fetcher counts it from
                      :attr:`peer.core.http.http1.ResponseReader.trailing`
====================  ================================================
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timezone

from peer.core.page.directives import MAX_FIELD, MAX_FIELDS, link_canonical
from peer.core.http.inflate import AVAILABLE, MAX_CODINGS

__all__ = ["CODINGS", "MAX_LOCATION", "MAX_SET_COOKIES", "RETRY_AFTER_MAX", "Head", "parse_content_type",
           "parse_retry_after", "read_head", "server_error"]

#: The content codings the fetcher can ask for (``Accept-Encoding``) and
#: decode with a bounded output (``peer.core.http.inflate``), up to
#: ``MAX_CODINGS`` stacked.
CODINGS = frozenset({*AVAILABLE, "x-gzip"})
#: The longest Retry-After we return, in seconds (10 years): only so that a
#: date in the year 9999 or a 400-digit delta stays a finite float. The
#: engine applies its own, much lower, ``politeness.max_retry_after``.
RETRY_AFTER_MAX = 10 * 365 * 86400.0
#: The longest Location kept: RFC 9110 §4.1 asks every recipient to support
#: URIs of at least 8000 octets, so a longer one is no link anyone relies on.
MAX_LOCATION = 8000
#: Set-Cookie fields read of one response: twice RFC 6265 §6.1's 50 cookies
#: a domain, so a jar at its cap can still be refreshed whole; more is junk.
MAX_SET_COOKIES = 100

# RFC 9110 §5.6.2 token characters (lower case: values are lowered first).
_TOKEN = r"[!#$%&'*+.^_`|~0-9a-z-]"
# RFC 6838 §4.2: type and subtype names are at most 127 characters.
_MEDIA_TYPE = re.compile(rf"{_TOKEN}{{1,127}}/{_TOKEN}{{1,127}}")
# The characters of IANA charset names, and peer.core.page.extract's 40-character bound.
_CHARSET = re.compile(r"[a-z0-9_.:+\-]{1,40}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# An HTTP-date is 29 characters (RFC 9110 §5.6.7); a longer value is not one.
_DATE_MAX = 64
_DATE_ERRORS = (TypeError, ValueError, IndexError, OverflowError)


def _content_type(value: str) -> tuple[str, str | None, list[str]]:
    """(media type, charset, reasons) of one Content-Type value; never raises."""
    reasons = []
    # split, not a partition loop: 100 KiB of ";" must cost linear time.
    media, *params = value.split(";")
    media = media.strip().lower()
    if not _MEDIA_TYPE.fullmatch(media):
        # WHATWG MIME Sniffing §7.1: an invalid supplied type means "sniff".
        reasons.append("content_type")
        media = ""
    charset = None
    for param in params:
        key, eq, val = param.partition("=")
        if eq and key.strip().lower() == "charset":
            label = val.strip().strip('"\'').strip().lower()
            if _CHARSET.fullmatch(label):
                charset = label
            else:
                reasons.append("charset")
            break
    return media, charset, reasons


def parse_content_type(value: str | None) -> tuple[str, str | None]:
    """``text/HTML; charset="UTF-8"`` -> ``("text/html", "utf-8")``; ``("", None)`` if absent.

    An invalid media type is ``""`` and an invalid charset label None.
    """
    if not value:
        return "", None
    media, charset, _ = _content_type(value)
    return media, charset


def _retry_after(value: str, now: float) -> tuple[float | None, bool]:
    """(seconds or None, whether the value was well-formed and in range)."""
    value = value.strip()
    # isascii(): "²".isdigit() is True, but int("²") raises.
    if value.isascii() and value.isdigit():
        if len(value) > 9:  # 10**9 s is over RETRY_AFTER_MAX: no int() of 400 digits
            return RETRY_AFTER_MAX, False
        seconds = float(value)
        return min(seconds, RETRY_AFTER_MAX), seconds <= RETRY_AFTER_MAX
    if not value or len(value) > _DATE_MAX:
        return None, False
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = when.timestamp() - now
    except _DATE_ERRORS:
        return None, False
    if not math.isfinite(seconds):  # pragma: no cover - a datetime is finite
        return None, False
    if seconds > RETRY_AFTER_MAX:
        return RETRY_AFTER_MAX, False
    return max(0.0, seconds), True


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After value (RFC 9110 §10.2.3) at wall time ``now``.

    Either delta-seconds or an HTTP-date (a date in the past means 0); None
    when absent or unreadable. Always finite: at most :data:`RETRY_AFTER_MAX`.
    """
    if not value:
        return None
    return _retry_after(value, now)[0]


def server_error(status: int) -> bool:
    """Is a response with this status handled as a 5xx (retried as one)?

    RFC 9110 §15: "A client that receives a response with an invalid status
    code [outside 100..599] SHOULD process the response as if it had a 5xx
    (Server Error) status code". A 1xx that is the final answer (101
    Switching Protocols to a GET that asked for no upgrade; other 1xx are
    interim and skipped) is a response this client cannot handle either.
    """
    return status >= 500 or status < 200


@dataclass(frozen=True, slots=True)
class Head:
    """What the fetcher uses of a response head, every value checked.

    ``status`` is the code as sent (one outside 100-599 is named in
    ``reasons`` and handled as a 5xx, :func:`server_error`); ``length`` is the
    Content-Length when it frames the body; ``codings`` the content codings
    other than identity, lower-cased; ``reasons`` what was malformed;
    ``x_robots`` the X-Robots-Tag values, unparsed (``peer.core.page.directives``
    reads them for the crawler's own token); ``canonical`` the first
    ``rel="canonical"`` target of the Link fields, unresolved.
    """

    status: int
    content_type: str
    charset: str | None
    location: str | None
    retry_after: float | None
    length: int | None
    codings: tuple[str, ...]
    reasons: tuple[str, ...]
    x_robots: tuple[str, ...] = ()
    canonical: str | None = None
    #: The Set-Cookie values as sent, at most MAX_SET_COOKIES (peer.core.http.cookies reads them).
    set_cookies: tuple[str, ...] = ()
    #: The ETag and Last-Modified as sent (the first of each), unchecked: a
    #: revisit's validators, which peer.core.revisit.policy checks (its rule 6).
    etag: str | None = None
    last_modified: str | None = None


def read_head(status: int, fields: Iterable[tuple[str, str]], now: float) -> Head:
    """Read a status code and header fields (lower-case names, in order) at wall time ``now``.

    Total: no value makes it raise; each malformed one is ignored or clamped
    and named in ``reasons`` (the module docstring lists them).
    """
    reasons: list[str] = []
    wanted: dict[str, list[str]] = {"content-type": [], "location": [], "retry-after": [],
                                    "content-length": [], "content-encoding": [],
                                    "transfer-encoding": [], "x-robots-tag": [], "link": [],
                                    "set-cookie": [], "etag": [], "last-modified": []}
    for name, value in fields:
        if name in wanted:
            wanted[name].append(value)
    if not 100 <= status <= 599:
        reasons.append("status")

    content_type, charset = "", None
    types = wanted["content-type"]
    if types:
        if len(set(types)) > 1:
            reasons.append("content_type")
        content_type, charset, why = _content_type(types[-1])
        reasons += why

    location = None
    locations = wanted["location"]
    if locations and 300 <= status < 400:
        value = locations[0].strip()
        if len(set(locations)) > 1 or not value or len(value) > MAX_LOCATION or _CONTROL.search(value):
            reasons.append("location")
        else:
            location = value

    retry_after = None
    retry = wanted["retry-after"]
    if retry:
        if len(set(retry)) > 1:
            reasons.append("retry_after")
        else:
            retry_after, ok = _retry_after(retry[0], now)
            if not ok:
                reasons.append("retry_after")

    length = None
    lengths = wanted["content-length"]
    if lengths:
        value = lengths[0].strip()
        if wanted["transfer-encoding"]:
            # RFC 9112 §6.3: Transfer-Encoding overrides Content-Length, and
            # a message with both "ought to be handled as an error";
            # peer.core.http.http1 (as h11) frames it as chunked, so the length is only ignored.
            reasons.append("content_length")
        elif len(set(lengths)) > 1 or not (value.isascii() and value.isdigit()) or len(value) > 20:
            reasons.append("content_length")
        else:
            length = int(value)

    codings: tuple[str, ...] = ()
    encodings = wanted["content-encoding"]
    if encodings:
        listed = [c.strip().lower() for value in encodings for c in value.split(",")]
        codings = tuple(c for c in listed if c and c != "identity")
        if len(codings) > MAX_CODINGS or any(c not in CODINGS for c in codings):
            reasons.append("content_encoding")

    x_robots, links = wanted["x-robots-tag"], wanted["link"]
    for reason, values in (("x_robots_tag", x_robots), ("link", links)):
        if len(values) > MAX_FIELDS or any(len(v) > MAX_FIELD for v in values):
            reasons.append(reason)
    canonical = link_canonical(links) if links else None
    cookies = wanted["set-cookie"]
    if len(cookies) > MAX_SET_COOKIES:
        reasons.append("set_cookie")

    return Head(status=status, content_type=content_type, charset=charset, location=location,
                retry_after=retry_after, length=length, codings=codings, reasons=tuple(reasons),
                x_robots=tuple(v[:MAX_FIELD] for v in x_robots[:MAX_FIELDS]), canonical=canonical,
                set_cookies=tuple(cookies[:MAX_SET_COOKIES]),
                etag=wanted["etag"][0] if wanted["etag"] else None,
                last_modified=wanted["last-modified"][0] if wanted["last-modified"] else None)
