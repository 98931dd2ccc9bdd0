"""URL normalisation, link joining and the host key (RFC 3986, RFC 9110 §4.2.3).

Every URL that enters the frontier, the Bloom filter, the hash ring or the
results table goes through :func:`normalize` or :func:`join` first, so two
spellings of one resource are one URL everywhere in the cluster.

Normalisation is RFC 3986 §6.2.2 (syntax-based) plus §6.2.3 (scheme-based,
for http/https as RFC 9110 §4.2.3 licenses):

- scheme and host lower-cased; a unicode host becomes its IDNA A-labels:
  UTS #46 mapping as browsers do (case, full-width forms, ``。`` dots,
  ignorables deleted), then IDNA2008 per non-ASCII label with the ``idna``
  package (``Bücher.example`` -> ``xn--bcher-kva.example``). Symbol labels
  (``☃.net``) that browsers accept are refused: IDNA2008 is stricter;
- default port removed (80 for http, 443 for https); an empty port too;
- fragment removed: it never reaches the server;
- percent-encoding normalised (§6.2.2.1–2): hex digits upper-cased, octets of
  unreserved characters decoded (``%7e`` -> ``~``), reserved ones kept
  (``%2f`` -> ``%2F``), characters not allowed in the component encoded as
  UTF-8 (space -> ``%20``), a ``%`` not followed by two hex digits -> ``%25``;
- dot-segments removed (§5.2.4), after the percent step so ``%2e%2e`` counts;
- empty path -> ``/``; the query is kept in its order, only its
  percent-encoding is normalised (sorting it would merge URLs that servers may
  treat differently); an empty query (``/?``) is dropped like an empty port.
- then, only when the caller passes them, the crawl's parameter rules
  (``crawl.strip_params``, ``crawl.sort_query``: :class:`peer.core.urls.rules.ParamRules`):
  tracking and session-id parameters removed, the query sorted if asked.

Choices the RFCs leave open, and why:

- **userinfo is dropped**, not rejected: a link ``http://u:pw@host/p`` still
  names ``host/p``, and credentials found on the web must never reach the
  frontier, the results table or a log.
- **A trailing dot on the host is dropped** (``example.com.`` is the same DNS
  name), so politeness and ownership see one host.
- **Shorthand IPv4 forms are rejected** (``127.1``, ``0x7f.0.0.1``,
  ``2130706433``, ``010.0.0.1``): browsers turn them into addresses, and so
  would ``getaddrinfo``, behind the back of the scope check and the SSRF
  guard. A host whose last label is numeric must be a canonical dotted quad.
- **Whitespace and backslashes follow browsers** (WHATWG URL): leading and
  trailing C0 controls and spaces are stripped, tab/CR/LF removed anywhere,
  and ``\\`` before the query counts as ``/``. Spaces inside are encoded.
- Hosts are LDH labels plus ``_`` (common in real names), each 1–63 long,
  at most 253 in all; a ``%`` in the host is refused rather than decoded.
- A normalised URL is at most :data:`MAX_URL_LENGTH` characters (sitemaps cap
  at 2048; we allow twice that). Longer input or output raises. The crawl's
  own, lower cap is ``crawl.max_url_length`` (peer/core/crawl/limits.py).
- **Path repetition** (:func:`path_repeats`): how often the most frequent
  path segment occurs, so the engine can drop the URLs of crawler traps
  that grow a path by relative links (``/a/a/a/...``, ``/x/y/x/y/...``).
  Counted anywhere in the path, not only in consecutive runs (Heritrix's
  PathologicalPathDecideRule counts runs of one repeated sequence): a
  loop of any period, or a repeated pair, repeats each of its segments.

The parser is RFC 3986 Appendix B's regex and §5.2 reference resolution,
written out here instead of yarl. yarl was the plan, but measured on this box
``str(URL(base).join(URL(href)))`` costs ~10 µs (its LRU caches miss on a real
link stream) and changes meaning: ``join`` decodes the base path (``/a%2Fb/c``
+ ``d`` -> ``/a/b/d``), its query requoter turns ``%2F`` into ``/`` and spaces
into ``+``, and ``:+80`` parses as port 80. The regex splits in ~1 µs. The
authority (IDNA included, tens of µs) is cached, as links repeat their hosts.

Everything that is not a crawlable http(s) URL raises :class:`URLError` with a
short reason; no ValueError/UnicodeError from below escapes. The engine's hot
path uses :func:`normalize_link`, which returns ``None`` instead, cheaply for
the common ``mailto:``/``javascript:`` links.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import TYPE_CHECKING

import idna

from peer.errors import URLError

if TYPE_CHECKING:
    from peer.core.urls.rules import ParamRules

__all__ = [
    "MAX_URL_LENGTH",
    "URLError",
    "host_key",
    "hostname",
    "idna_label",
    "join",
    "normalize",
    "normalize_link",
    "path_repeats",
]

MAX_URL_LENGTH = 4096

_DEFAULT_PORTS = {"http": "80", "https": "443"}

# RFC 3986 Appendix B, with the scheme restricted to its §3.1 grammar so a
# path like "1a:b" or "/x:y" is not taken for a scheme. Always matches.
_SPLIT = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?", re.S
)

# WHATWG: strip C0 controls and space at both ends; tab, CR, LF vanish anywhere.
_C0_SPACE = "".join(map(chr, range(0x21)))

# pchar / "/" / "?" (§3.3, §3.4): what may stand unencoded in path and query.
# A path never holds "?" (the split stops there), so one set serves both.
_SAFE = r"A-Za-z0-9\-._~!$&'()*+,;=:@/?"
_NEEDS_WORK = re.compile(f"[^{_SAFE}]")  # "%" included: escapes need a look
_UNSAFE_RUN = re.compile(f"[^{_SAFE}%]+")
_BYTE_PCT = [f"%{b:02X}" for b in range(256)]


def _pct_table() -> dict[str, str]:
    """Two hex digits (any case) -> the normal form of that %-escape."""
    unreserved = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    table = {}
    for b in range(256):
        norm = chr(b) if chr(b) in unreserved else f"%{b:02X}"
        hex2 = f"{b:02x}"
        hi, lo = hex2[0], hex2[1]
        for h in {hi, hi.upper()}:
            for lo_ in {lo, lo.upper()}:
                table[h + lo_] = norm
    return table


_PCT = _pct_table()

_HOST = re.compile(r"[a-z0-9_\-]{1,63}(?:\.[a-z0-9_\-]{1,63})*")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")


def _encode_run(m: re.Match[str]) -> str:
    try:
        data = m.group().encode("utf-8")
    except UnicodeEncodeError:
        raise URLError("lone surrogate in URL") from None
    return "".join([_BYTE_PCT[b] for b in data])


def _pct(component: str) -> str:
    """Percent-encoding normalisation of a path or query (RFC 3986 §6.2.2.1–2)."""
    if _NEEDS_WORK.search(component) is None:
        return component
    if "%" in component:
        # A loop over split() beats re.sub with a callback ~3x per escape.
        parts = component.split("%")
        out = [parts[0]]
        for part in parts[1:]:
            norm = _PCT.get(part[:2])
            if norm is None:
                out.append("%25")
                out.append(part)
            else:
                out.append(norm)
                out.append(part[2:])
        component = "".join(out)
    # Every "%" now starts a valid escape; encode the rest as UTF-8.
    if _UNSAFE_RUN.search(component) is None:
        return component
    return _UNSAFE_RUN.sub(_encode_run, component)


def _remove_dots(path: str) -> str:
    """RFC 3986 §5.2.4 for an absolute path (one starting with "/")."""
    segments = path.split("/")
    out: list[str] = []
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if segments[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


def idna_label(host: str) -> str:
    # UTS #46 mapping as browsers do (case, width, ideographic dots, ignorables),
    # then IDNA2008 per non-ASCII label only, so "a_b.bücher.example" keeps its
    # ASCII label that IDNA2008 would refuse. Symbol labels (☃) stay refused:
    # the idna package is stricter than browsers there.
    mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
    labels = mapped.split(".")
    return ".".join([x if x.isascii() else idna.encode(x).decode("ascii") for x in labels])


def _hostname(host: str) -> str:
    if not host:
        raise URLError("no host")
    if host.isascii():
        host = host.lower()
    else:
        if len(host) > 1024:
            raise URLError("host too long")
        try:
            host = idna_label(host)
        except (UnicodeError, ValueError):
            raise URLError("host is not a valid internationalised name") from None
    if host.endswith("."):
        host = host[:-1]
    if len(host) > 253 or _HOST.fullmatch(host) is None:
        raise URLError("bad host")
    if _NUMERIC_LABEL.fullmatch(host[host.rfind(".") + 1 :]) and _IPV4.fullmatch(host) is None:
        raise URLError("bad IPv4 address (only dotted quads are accepted)")
    return host


def _ipv6(literal: str) -> str:
    # Zone ids (%25eth0) are link-local only; IPvFuture has no users.
    if not literal.isascii() or "%" in literal or literal[:1] in ("v", "V"):
        raise URLError("bad IPv6 address")
    try:
        return f"[{ipaddress.IPv6Address(literal).compressed}]"
    except ValueError:
        raise URLError("bad IPv6 address") from None


# Authorities repeat heavily on a link stream (most links of a page point to a
# few hosts) and IDNA costs tens of µs, so the whole authority is cached. Big
# enough for the hosts of a large crawl at once: a restart re-queues its journal's
# URLs, and 2 M of them over 20,000 hosts missed an 8,192-entry cache every time
# (3 s of the restart); 65,536 entries are about 15 MB.
@lru_cache(maxsize=1 << 16)
def _authority(scheme: str, authority: str) -> str:
    """The canonical ``host[:port]`` of a raw authority; userinfo dropped."""
    hostport = authority.rpartition("@")[2]
    if hostport[:1] == "[":
        end = hostport.find("]")
        if end < 0:
            raise URLError("bad IPv6 address")
        host = _ipv6(hostport[1:end])
        rest = hostport[end + 1 :]
        if rest and rest[0] != ":":
            raise URLError("bad host")
        port = rest[1:]
    else:
        name, _, port = hostport.partition(":")
        host = _hostname(name)
    if not port:
        return host
    # isdigit() alone admits "²" and other unicode digits; int() admits "+80".
    if not (port.isascii() and port.isdigit()) or len(port.lstrip("0")) > 5:
        raise URLError("bad port")
    number = int(port)
    if not 0 < number < 65536:
        raise URLError("bad port")
    port = str(number)
    return host if port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"


def _split(url: str) -> tuple[str | None, str | None, str, str | None]:
    """(scheme, authority, path, query) of a cleaned reference; fragment dropped."""
    url = url.strip(_C0_SPACE)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.replace("\t", "").replace("\n", "").replace("\r", "")
    if "\\" in url:
        end = len(url)
        for c in "?#":
            i = url.find(c, 0, end)
            if i >= 0:
                end = i
        url = url[:end].replace("\\", "/") + url[end:]
    m = _SPLIT.match(url)
    assert m is not None  # every group is optional
    scheme, authority, path, query = m.groups()
    return (scheme.lower() if scheme else None), authority, path, query


def _build(scheme: str, authority: str, path: str, query: str | None,
           params: ParamRules | None = None) -> str:
    host = _authority(scheme, authority)
    path = _pct(path) if path else "/"
    if "/." in path:
        path = _remove_dots(path)
    if query:
        query = _pct(query)
    # Only a query or a path parameter can hold what the rules strip: the
    # common link (neither) skips the call.
    if params is not None and (query or ";" in path):
        path, query = params.apply(path, query)
    url = f"{scheme}://{host}{path}?{query}" if query else f"{scheme}://{host}{path}"
    if len(url) > MAX_URL_LENGTH:
        raise URLError("URL too long")
    return url


def _check_input(url: object) -> str:
    if type(url) is not str:
        if not isinstance(url, str):
            raise URLError(f"not a string: {type(url).__name__}")
        url = str(url)
    if len(url) > MAX_URL_LENGTH:
        raise URLError("URL too long")
    return url


def _scheme_error(scheme: str, path: str = "", authority: str | None = "") -> URLError:
    if authority is None and ("." in scheme or path[:1].isdigit()):
        # "host:8080/x" parses as scheme "host" (RFC 3986 §3.1 allows dots in
        # a scheme): it is a URL written without its scheme.
        return URLError(f"no scheme: {scheme!r} is a host, not a scheme")
    shown = repr(scheme[:32]) + ("..." if len(scheme) > 32 else "")
    return URLError(f"not an http(s) URL: scheme {shown}")


def normalize(url: str, params: ParamRules | None = None) -> str:
    """The normal form of an absolute http(s) URL; :class:`URLError` otherwise.

    ``params``: the crawl's parameter rules (``crawl.strip_params``,
    ``sort_query``), applied last; ``None``: RFC 3986 alone.
    """
    scheme, authority, path, query = _split(_check_input(url))
    if scheme is None:
        raise URLError("relative URL (no scheme)")
    if scheme not in _DEFAULT_PORTS:
        raise _scheme_error(scheme, path, authority)
    if authority is None:
        raise URLError("no host")
    return _build(scheme, authority, path, query, params)


@lru_cache(maxsize=256)
def _base(base: str) -> tuple[str, str, str, str | None]:
    # A page's links are joined against the same base, so its split is cached.
    scheme, authority, path, query = _split(normalize(base))
    assert scheme is not None and authority is not None
    return scheme, authority, path, query


def _resolve(base: str, href: str, params: ParamRules | None = None) -> str | None:
    """RFC 3986 §5.2.2 on a normalised base; None for a non-http(s) scheme."""
    bscheme, bauthority, bpath, bquery = _base(_check_input(base))
    scheme, authority, path, query = _split(_check_input(href))
    # §5.2.2's non-strict rule, which browsers apply to http(s): "http:x" on an
    # http page is the relative reference "x".
    if scheme is not None and (scheme != bscheme or authority is not None):
        if scheme not in _DEFAULT_PORTS:
            return None
        if authority is None:
            raise URLError("no host")
        return _build(scheme, authority, path, query, params)
    if authority is not None:
        return _build(bscheme, authority, path, query, params)
    if not path:
        path = bpath
        if query is None:
            query = bquery
    elif path[0] != "/":
        path = bpath[: bpath.rfind("/") + 1] + path  # §5.2.3 merge
    return _build(bscheme, bauthority, path, query, params)


def join(base: str, href: str, params: ParamRules | None = None) -> str:
    """Resolve link ``href`` found on page ``base`` and normalise the result.

    Relative, ``../``, absolute, protocol-relative (``//host/x``), query-only
    and fragment-only references are resolved as RFC 3986 §5.2 (and browsers)
    do; a fragment-only link gives the base itself. Non-http(s) links
    (``mailto:``, ``javascript:``, ``tel:``, ``data:``...) raise :class:`URLError`.
    ``params`` as in :func:`normalize`; the base is resolved against as it is.
    """
    url = _resolve(base, href, params)
    if url is None:
        raise _scheme_error(_split(href)[0] or "")
    return url


def normalize_link(base: str, href: str, params: ParamRules | None = None) -> str | None:
    """:func:`join`, but ``None`` for anything not crawlable (the hot path)."""
    try:
        return _resolve(base, href, params)
    except URLError:
        return None


def host_key(url: str) -> str:
    """Lower-cased ``host[:port]`` (default port removed): what the ring hashes.

    A normalised URL takes a fast path that slices out the authority and
    checks it is canonical (a cached lookup); on that path only the authority
    is validated. Anything else is normalised first.
    """
    if type(url) is str and len(url) <= MAX_URL_LENGTH:
        if url.startswith("http://"):
            start, scheme = 7, "http"
        elif url.startswith("https://"):
            start, scheme = 8, "https"
        else:
            start = 0
        if start:
            end = url.find("/", start)
            if end > start:
                authority = url[start:end]
                try:
                    if _authority(scheme, authority) == authority:
                        return authority
                except URLError:
                    pass
    url = normalize(url)
    start = url.index("//") + 2
    return url[start : url.index("/", start)]


def path_repeats(url: str) -> int:
    """How many times the most frequent segment occurs in the path of a normalised URL.

    ``/a/a/a/`` -> 3, ``/x/y/x/y/p.html`` -> 2, ``/`` -> 0. The query is not
    part of the path; an empty segment (``//``) is a segment, the empty
    one after a trailing ``/`` is not.
    """
    start = url.find("//")
    start = url.find("/", start + 2) if start >= 0 else -1
    if start < 0:
        return 0
    end = url.find("?", start)
    path = url[start + 1:] if end < 0 else url[start + 1:end]
    if "/" not in path:
        return 1 if path else 0
    segments = path.split("/")
    if not segments[-1]:
        segments.pop()
    counts: dict[str, int] = {}
    best = 0
    for seg in segments:
        n = counts.get(seg, 0) + 1
        counts[seg] = n
        if n > best:
            best = n
    return best


def hostname(key: str) -> str:
    """The host name of a host key or hostname, lower-cased, without port or brackets."""
    key = key.lower()
    if key[:1] == "[":
        return key[1 : key.find("]")] if "]" in key else key[1:]
    if key.count(":") > 1:  # a bare IPv6 address
        return key
    name, _, port = key.rpartition(":")
    return name if name and port.isdigit() else key
