"""One sitemap document (sitemaps.org protocol 0.9) read from hostile bytes: its URLs or its child sitemaps.

A pure core: :func:`parse` takes the body a server sent, the sitemap's own
URL and the authorities it was found with, and returns a :class:`Sitemap`:
the URLs (``loc``, ``lastmod``, ``changefreq``, ``priority``), the child
sitemaps of an index, and a ``Counter`` of every :class:`Problem` met. It
never raises for any input: remote input is data (fuzzed in
tests/core/test_sitemap.py).

Rules:

1. **XML through defusedxml**, with DTDs forbidden: a sitemap has no use
   for a ``<!DOCTYPE``, and refusing it refuses entity declarations
   (billion laughs, quadratic blow-up) and external references (XXE) before
   expat sees them. Such a document is refused whole (``entities``); one
   whose DOCTYPE says ``html`` is an error page (``not_a_sitemap``).
2. **Streaming with a memory bound set by the caps, not the document.** The
   parser's target keeps no tree: it keeps the text of the four fields it
   reads (each cut at :data:`MAX_FIELD` characters) and the entries found.
   iterparse with ``elem.clear()`` was the first plan, but its tree builder
   still joins all character data between two tags, so 50 MiB of whitespace
   inside ``<urlset>`` became one 50 MiB string (and its chunks). Nesting
   deeper than :data:`MAX_NESTING` (``too_deep``) and more than
   :data:`MAX_NAMES` distinct element or attribute names
   (``too_many_names``: the parser caches each name it meets) end the parse,
   so neither expat's tag stack nor that cache grows with the input.
   Measured (scripts/bench_sitemap.py, docs/benchmarks/cores.md): 50,000
   URLs parse in about 0.66 s, about 10 MiB traced at the peak, most of it
   the URLs kept; 50 MiB of blanks, 0.3 MiB.
3. **Protocol limits as caps** (:class:`SitemapLimits`, the ``[sitemaps]``
   config keys): at most ``max_urls`` entries (50,000) and ``max_bytes``
   (50 MiB) uncompressed per file. A file past either is cut there and what
   came before is kept (``too_many_urls``, ``too_large``): bounded work, and
   a sitemap a little over the limit is still mostly useful.
4. **gzip** is recognised by its magic bytes (a ``.xml.gz`` is served as
   ``application/gzip`` and reaches us still compressed; the fetcher has
   already undone any ``Content-Encoding``) and inflated in 64 KiB steps
   with zlib's ``max_length``, so a bomb costs at most ``max_bytes`` of
   inflation and one step of memory. A corrupt or truncated stream ends the
   parse (``bad_gzip``), keeping what came before.
5. **Scope** (sitemaps.org, "Sitemap file location"): a sitemap at
   ``http://h/dir/sitemap.xml`` may list only URLs under ``http://h/dir/``,
   same scheme, host and port. Cross-submission extends that: a sitemap
   named in the robots.txt of host H may list any URL of H
   (:func:`host_authority`). :func:`parse` is given those extra authorities;
   its own location's authority always holds. A URL covered by none is
   dropped (``wrong_host``). An index may list sitemaps on the hosts it
   has authority over (the protocol's "same site"), at any path.
6. **Each field is checked**: ``loc`` through :func:`peer.core.urls.normalize.normalize`
   (``bad_loc``, also for an entry without one); ``lastmod`` a W3C datetime
   (:func:`w3c_datetime`: epoch seconds, UTC when no zone is given,
   ``bad_lastmod`` else None); ``priority`` 0.0-1.0 (``bad_priority``);
   ``changefreq`` one of :class:`ChangeFreq` (``bad_changefreq``). A bad
   optional field is None; the entry stays.
7. **Namespaces are not checked**, positions are: ``<loc>`` counts only as a
   child of a ``<url>`` or ``<sitemap>`` that is a child of the root.
   Real sitemaps use the 0.9 namespace, Google's old 0.84 one or none, and
   the extensions (``image:loc``, ``video:...``) sit one level deeper.
8. **Plain text** (protocol, "Text file"): a body whose first byte (after a
   BOM and blanks) is not ``<`` is read as one URL per line, UTF-8, under
   the same caps. One whose first line is not an http(s) URL is no sitemap.
   RSS and Atom feeds are ``not_a_sitemap`` for now.
"""

from __future__ import annotations

import enum
import math
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from itertools import chain
from defusedxml import DefusedXmlException, DTDForbidden
# defusedxml's parser is ElementTree's pure-Python one, imported afresh, with
# its own ParseError class: the stdlib's is not the one it raises.
from defusedxml.ElementTree import DefusedXMLParser, ParseError

from peer.core.urls.normalize import MAX_URL_LENGTH, normalize
from peer.errors import URLError

__all__ = [
    "MAX_FIELD", "MAX_NAMES", "MAX_NESTING", "Authority", "ChangeFreq", "Problem", "Sitemap",
    "SitemapKind", "SitemapLimits", "SitemapRef", "SitemapURL", "host_authority",
    "location_authority", "parse", "w3c_datetime",
]

#: Characters kept of one field's text; a longer ``loc`` is no URL we crawl
#: (normalize refuses more than MAX_URL_LENGTH), a longer date no date.
MAX_FIELD = MAX_URL_LENGTH + 64
#: Element depth: urlset/url/loc is 3, an extension's child (image:image/image:loc) 4.
MAX_NESTING = 12
#: Distinct element and attribute names in one document; real ones use under 40.
MAX_NAMES = 256
_STEP = 64 * 1024        # uncompressed bytes fed to expat at a time
_GZ_IN = 16 * 1024       # compressed bytes handed to zlib at a time
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SitemapLimits:
    """The caps on sitemaps (the ``[sitemaps]`` config section): the protocol's limits by default."""

    max_urls: int = 50_000           # entries in one file (URLs, or sitemaps in an index)
    max_bytes: int = 50 * 1024 ** 2  # uncompressed bytes of one file
    max_depth: int = 3               # index levels below a sitemap named in robots.txt or seeded
    max_per_host: int = 1_000        # sitemaps fetched from one host


class Problem(enum.StrEnum):
    """What was dropped, cut or refused: the keys of :attr:`Sitemap.problems`."""

    TOO_MANY_URLS = "too_many_urls"    # the file was cut after max_urls entries
    TOO_LARGE = "too_large"            # the file was cut after max_bytes uncompressed
    BAD_GZIP = "bad_gzip"              # a corrupt or truncated gzip stream ended the parse
    BAD_XML = "bad_xml"                # not well-formed: the parse ended at the error
    ENTITIES = "entities"              # a DTD, entity declaration or external reference: refused whole
    TOO_DEEP = "too_deep"              # nested deeper than MAX_NESTING: the parse ended
    TOO_MANY_NAMES = "too_many_names"  # more than MAX_NAMES element/attribute names: the parse ended
    NOT_A_SITEMAP = "not_a_sitemap"    # an HTML page, a feed, any other root or text
    MISPLACED = "misplaced"            # a <url> in an index or a <sitemap> in a urlset
    WRONG_HOST = "wrong_host"          # a loc outside the sitemap's authority
    BAD_LOC = "bad_loc"                # a loc missing, too long or not an http(s) URL
    BAD_LASTMOD = "bad_lastmod"        # kept, lastmod None
    BAD_PRIORITY = "bad_priority"      # kept, priority None
    BAD_CHANGEFREQ = "bad_changefreq"  # kept, changefreq None


class ChangeFreq(enum.Enum):
    """``<changefreq>``: a hint, not a command (sitemaps.org)."""

    ALWAYS = "always"
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    YEARLY = "yearly"
    NEVER = "never"


class SitemapKind(enum.Enum):
    """What the document turned out to be."""

    URLSET = "urlset"
    INDEX = "sitemapindex"
    TEXT = "text"
    NONE = "none"      # nothing usable: not a sitemap, refused, or empty


@dataclass(frozen=True, slots=True, order=True)
class Authority:
    """URLs a sitemap may list: those of ``origin`` (``scheme://host[:port]``) under path ``prefix``."""

    origin: str
    prefix: str = "/"

    def covers(self, url: str) -> bool:
        """Whether the normalised ``url`` is in this authority."""
        return url.startswith(self.origin) and url.startswith(self.prefix, len(self.origin))


def _origin_path(url: str) -> tuple[str, str]:
    start = url.index("//") + 2
    slash = url.index("/", start)
    return url[:slash], url[slash:].partition("?")[0]


def location_authority(sitemap_url: str) -> Authority | None:
    """The authority a sitemap has by where it is: its own directory; None for an invalid URL."""
    try:
        origin, path = _origin_path(normalize(sitemap_url))
    except URLError:
        return None
    return Authority(origin, path[: path.rfind("/") + 1])


def host_authority(url: str) -> Authority | None:
    """All of ``url``'s origin: what a robots.txt at ``url`` grants the sitemaps it names."""
    try:
        return Authority(_origin_path(normalize(url))[0])
    except URLError:
        return None


@dataclass(frozen=True, slots=True)
class SitemapURL:
    """One ``<url>`` entry (or a text line): its normalised ``loc`` and the hints that came with it."""

    loc: str
    lastmod: float | None = None          # epoch seconds, UTC
    changefreq: ChangeFreq | None = None
    priority: float | None = None


@dataclass(frozen=True, slots=True)
class SitemapRef:
    """One ``<sitemap>`` entry of an index."""

    loc: str
    lastmod: float | None = None


@dataclass(frozen=True, slots=True)
class Sitemap:
    """The parse of one document: every count is in ``problems``, nothing raised."""

    kind: SitemapKind
    urls: tuple[SitemapURL, ...] = ()
    sitemaps: tuple[SitemapRef, ...] = ()
    problems: Counter[str] = field(default_factory=Counter, hash=False)
    size: int = 0          # uncompressed bytes read
    entries: int = 0       # <url>/<sitemap> elements or text lines met, kept or not


# -- W3C datetime -----------------------------------------------------------------------

# https://www.w3.org/TR/NOTE-datetime: YYYY[-MM[-DD[Thh:mm[:ss[.s]]TZD]]].
# Lenient where real sitemaps are: a space for the T, no zone (taken as
# UTC), a zone without its colon.
_W3C = re.compile(
    r"(\d{4})(?:-(\d\d)(?:-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?"
    r"\s?(Z|[+-]\d\d:?\d\d)?)?)?)?", re.ASCII | re.IGNORECASE)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


# Cached: a sitemap's lastmods repeat (a site regenerated on one day), and
# the parse costs about a third of an entry's time without it.
@lru_cache(maxsize=1024)
def w3c_datetime(text: str) -> float | None:
    """A W3C datetime as epoch seconds, or None if it is not one (or not a real date)."""
    m = _W3C.fullmatch(text.strip())
    if m is None:
        return None
    year, month, day, hour, minute, second, frac, zone = m.groups()
    try:
        when = datetime(int(year), int(month or 1), int(day or 1), int(hour or 0),
                        int(minute or 0), int(second or 0), tzinfo=timezone.utc)
    except ValueError:
        return None
    offset = 0
    if zone and zone.upper() != "Z":
        hh, mm = int(zone[1:3]), int(zone[-2:])
        if hh > 23 or mm > 59:
            return None
        offset = (hh * 60 + mm) * (1 if zone[0] == "+" else -1)
    seconds = (when - _EPOCH - timedelta(minutes=offset)).total_seconds()
    return seconds + (float("0." + frac) if frac else 0.0)


# -- the bytes: gzip or not, cut at the cap ---------------------------------------------


class _Source:
    """The document's bytes in steps: inflated if gzip, never more than ``cap`` of them."""

    __slots__ = ("_body", "_pos", "_z", "cap", "size", "over", "broken")

    def __init__(self, body: bytes, cap: int) -> None:
        self._body = body
        self._pos = 0
        # wbits 31 = 16 + 15: a gzip wrapper only; a zlib stream is no .gz file.
        self._z = zlib.decompressobj(31) if body[:2] == _GZIP_MAGIC else None
        self.cap = cap
        self.size = 0
        self.over = False    # there was more than cap
        self.broken = False  # a corrupt or truncated gzip stream

    def steps(self) -> Iterator[bytes]:
        while True:
            room = self.cap - self.size
            if room <= 0:
                self.over = bool(self._read(1))
                return
            step = self._read(min(_STEP, room))
            if not step:
                return
            self.size += len(step)
            yield step

    def _read(self, n: int) -> bytes:
        z, body = self._z, self._body
        if z is None:
            step = body[self._pos:self._pos + n]
            self._pos += len(step)
            return step
        while not z.eof:
            data = z.unconsumed_tail
            if not data:
                if self._pos >= len(body):
                    self.broken = True  # the stream ended before its end marker
                    return b""
                data = body[self._pos:self._pos + _GZ_IN]
                self._pos += len(data)
            try:
                out = z.decompress(data, n)
            except zlib.error:
                self.broken = True
                return b""
            if out:
                return out
        return b""  # bytes after the gzip member are ignored, as by gunzip -q


# -- the XML parser's target ------------------------------------------------------------


class _Stop(Exception):
    """Raised inside the target to end the parse at once; carries why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.value)
        self.problem = problem


_FIELDS = frozenset({"loc", "lastmod", "changefreq", "priority"})
_ROOTS = {"urlset": SitemapKind.URLSET, "sitemapindex": SitemapKind.INDEX}
_ENTRY = {SitemapKind.URLSET: "url", SitemapKind.INDEX: "sitemap"}
_FREQS = {f.value: f for f in ChangeFreq}


class _Entries:
    """What both the XML and the text reader build: the kept entries and the problems."""

    def __init__(self, authorities: tuple[Authority, ...], limits: SitemapLimits) -> None:
        self.authorities = authorities
        self.max_urls = limits.max_urls
        self.urls: list[SitemapURL] = []
        self.sitemaps: list[SitemapRef] = []
        self.problems: Counter[str] = Counter()
        self.entries = 0

    def count(self) -> None:
        self.entries += 1
        if self.entries > self.max_urls:
            raise _Stop(Problem.TOO_MANY_URLS)

    def loc(self, text: str | None, *, index: bool = False) -> str | None:
        if text is None or len(text) > MAX_URL_LENGTH:
            self.problems[Problem.BAD_LOC] += 1
            return None
        try:
            url = normalize(text.strip())
        except URLError:
            self.problems[Problem.BAD_LOC] += 1
            return None
        if index:  # an index may name sitemaps anywhere on its hosts
            ok = any(url.startswith(a.origin + "/") for a in self.authorities)
        else:
            ok = any(a.covers(url) for a in self.authorities)
        if not ok:
            self.problems[Problem.WRONG_HOST] += 1
            return None
        return url

    def lastmod(self, text: str | None) -> float | None:
        if text is None:
            return None
        when = w3c_datetime(text)
        if when is None:
            self.problems[Problem.BAD_LASTMOD] += 1
        return when

    def priority(self, text: str | None) -> float | None:
        if text is None:
            return None
        try:
            value = float(text.strip())
        except ValueError:
            value = math.nan
        if not 0.0 <= value <= 1.0:  # NaN fails too
            self.problems[Problem.BAD_PRIORITY] += 1
            return None
        return value

    def changefreq(self, text: str | None) -> ChangeFreq | None:
        if text is None:
            return None
        freq = _FREQS.get(text.strip().lower())
        if freq is None:
            self.problems[Problem.BAD_CHANGEFREQ] += 1
        return freq


class _Target(_Entries):
    """The parser's callbacks: no tree, only the fields read and the entries made."""

    def __init__(self, authorities: tuple[Authority, ...], limits: SitemapLimits) -> None:
        super().__init__(authorities, limits)
        self.kind = SitemapKind.NONE
        self.depth = 0
        self.names: set[str] = set()
        self.in_entry = False
        self.fields: dict[str, str] = {}
        self.field: str | None = None
        self.text: list[str] = []
        self.length = 0

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _Stop(Problem.TOO_DEEP)
        names = self.names
        if tag not in names:
            names.add(tag)
            names.update(attrib)
            if len(names) > MAX_NAMES:
                raise _Stop(Problem.TOO_MANY_NAMES)
        elif attrib:
            names.update(attrib)
            if len(names) > MAX_NAMES:
                raise _Stop(Problem.TOO_MANY_NAMES)
        local = tag.rpartition("}")[2]
        if self.depth == 1:
            kind = _ROOTS.get(local)
            if kind is None:
                raise _Stop(Problem.NOT_A_SITEMAP)
            self.kind = kind
        elif self.depth == 2:
            if local in ("url", "sitemap"):
                self.count()
                if local == _ENTRY[self.kind]:
                    self.in_entry = True
                    self.fields = {}
                else:
                    self.problems[Problem.MISPLACED] += 1
        elif self.depth == 3 and self.in_entry and local in _FIELDS and local not in self.fields:
            self.field = local
            self.text = []
            self.length = 0

    def data(self, text: str) -> None:
        if self.field is not None and self.length <= MAX_FIELD:
            self.text.append(text)
            self.length += len(text)

    def end(self, tag: str) -> None:
        if self.field is not None and self.depth == 3:
            # Over MAX_FIELD: kept too long, so loc() refuses it and a date fails to parse.
            self.fields[self.field] = "".join(self.text)[: MAX_FIELD + 1]
            self.field = None
            self.text = []
        elif self.depth == 2 and self.in_entry:
            self.in_entry = False
            self._entry()
        self.depth -= 1

    def close(self) -> None:
        return None

    def _entry(self) -> None:
        get = self.fields.get
        if self.kind is SitemapKind.INDEX:
            loc = self.loc(get("loc"), index=True)
            if loc is not None:
                self.sitemaps.append(SitemapRef(loc, self.lastmod(get("lastmod"))))
            return
        loc = self.loc(get("loc"))
        if loc is not None:
            self.urls.append(SitemapURL(loc, self.lastmod(get("lastmod")),
                                        self.changefreq(get("changefreq")), self.priority(get("priority"))))


# -- the two readers ------------------------------------------------------------------


def _xml(steps: Iterator[bytes], source: _Source, target: _Target) -> None:
    parser = DefusedXMLParser(target=target, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    problems = target.problems
    try:
        for step in steps:
            parser.feed(step)
        if source.over:
            problems[Problem.TOO_LARGE] += 1
        elif source.broken:
            problems[Problem.BAD_GZIP] += 1
        else:
            parser.close()
            if target.kind is SitemapKind.NONE:
                problems[Problem.NOT_A_SITEMAP] += 1
    except _Stop as stop:
        problems[stop.problem] += 1
    except DTDForbidden as e:
        # An error page's <!DOCTYPE html> is no attack, only no sitemap.
        html = isinstance(e.name, str) and e.name.lower() == "html"
        problems[Problem.NOT_A_SITEMAP if html else Problem.ENTITIES] += 1
    except DefusedXmlException:
        problems[Problem.ENTITIES] += 1
    except (ParseError, ValueError, LookupError):
        # expat's error; a ValueError or LookupError is an encoding it cannot use.
        if source.broken:
            problems[Problem.BAD_GZIP] += 1
        else:
            problems[Problem.BAD_XML] += 1


def _text(steps: Iterator[bytes], source: _Source, entries: _Entries) -> bool:
    """Read one URL a line; False when the first line is no URL (then nothing is kept)."""
    rest = b""
    first = True
    skipping = False  # inside a line longer than any URL
    for step in chain(steps, [b"\n"]):
        lines = (rest + step).split(b"\n")
        rest = lines.pop()
        for raw in lines:
            if skipping:
                skipping = False
                continue
            line = raw.strip()
            if not line:
                continue
            if first:
                if not line.lower().startswith((b"http://", b"https://")):
                    return False
                first = False
            entries.count()
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                entries.problems[Problem.BAD_LOC] += 1
                continue
            loc = entries.loc(text)
            if loc is not None:
                entries.urls.append(SitemapURL(loc))
        if len(rest) > MAX_FIELD:
            if not skipping:
                if first:
                    return False
                entries.count()
                entries.problems[Problem.BAD_LOC] += 1
            skipping = True
            rest = b""
    if source.over:
        entries.problems[Problem.TOO_LARGE] += 1
    elif source.broken:
        entries.problems[Problem.BAD_GZIP] += 1
    return True


def parse(body: bytes, url: str, granted: Iterable[Authority] = (),
          limits: SitemapLimits = SitemapLimits()) -> Sitemap:
    """Parse the sitemap ``body`` fetched from ``url``; ``granted``: authorities beyond its location's.

    ``url`` is the sitemap's own URL (its directory is its authority);
    ``granted`` holds what cross-submission added (:func:`host_authority`
    of the robots.txt that named it, or of the index that led to it).
    """
    own = location_authority(url)
    authorities = tuple(sorted({*granted, *([own] if own is not None else [])}))
    source = _Source(bytes(body), limits.max_bytes)
    steps = source.steps()
    head = b""
    for step in steps:  # the first bytes that are not blank decide: XML or text
        head = step.removeprefix(_BOM).lstrip()
        if head:
            break
    steps = chain([head], steps)
    if head.startswith(b"<"):
        target = _Target(authorities, limits)
        _xml(steps, source, target)
        entries: _Entries = target
        kind = target.kind
    else:
        entries = _Entries(authorities, limits)
        kind = SitemapKind.TEXT
        try:
            if not head or not _text(steps, source, entries):
                kind = SitemapKind.NONE
                entries.problems[Problem.BAD_GZIP if source.broken else Problem.NOT_A_SITEMAP] += 1
                if source.over:  # max_bytes of blanks
                    entries.problems[Problem.TOO_LARGE] += 1
        except _Stop as stop:
            entries.problems[stop.problem] += 1
    return Sitemap(kind, tuple(entries.urls), tuple(entries.sitemaps), entries.problems,
                   source.size, entries.entries)
