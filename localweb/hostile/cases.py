"""The hostile hosts: every answer a crawler must survive, chosen by host name and path.

=========================  ==================================================
``ra-<variant>-<where>``   Retry-After ``<variant>`` (:data:`RETRY_AFTER`) on
                           every page (``<where>`` = 429, 503, 200) or on
                           robots.txt only (``robots``: a 429)
``hold.test``              503 with ``Retry-After: 3600`` on every page
``desync.test``            each page is followed, past its Content-Length, by
                           a whole second response (title ``smuggled``, links
                           to ``/smuggled/<k>``), and the connection stays open
``bigrobots.test``         a 3 MiB robots.txt (Content-Length given) whose
                           ``Disallow: /private/`` is in its first line
``robots-huge.test``       a 32 MiB robots.txt, close-delimited, same first rule
``robots-garbage.test``    robots.txt is 64 KiB of random bytes
``robots-5xx.test``        robots.txt answers 500
``robots-slow.test``       robots.txt drips a byte every 0.5 s
``refused.test``           (the config points it at 127.0.0.3, where nothing
                           listens: every connection is refused)
``bad.test``               malformed status lines, headers, chunked coding,
                           gzip bombs, truncated bodies, drips, resets (:data:`BAD`)
``fuzz.test``              ``/fuzz/<seed>``: a random answer drawn from ``seed``
=========================  ==================================================

Every hostile host's ``/`` links its pages, so a crawl seeded at ``/`` finds
them. :data:`CASES` lists one seed set per case for benchmarks and tests.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from localweb.hostile.wire import End, Reply, chunked, gzip_stream, html, reply

__all__ = ["BAD", "CASES", "Case", "RETRY_AFTER", "RA_WHERE", "route"]

#: Retry-After values no crawler may trust: a digit that int() refuses, 400
#: digits (float() overflows), negative, exponent, a date 8000 years away, prose.
RETRY_AFTER: dict[str, str] = {
    "sup2": "\u00b2",
    "digits400": "9" * 400,
    "neg5": "-5",
    "exp1e9": "1e9",
    "big": "1000000000",
    "y9999": "Fri, 31 Dec 9999 23:59:59 GMT",
    "garbage": "soon, maybe tomorrow",
}
RA_WHERE = ("429", "503", "200", "robots")
PAGES_PER_HOST = 3
_RA_HOST = re.compile(r"ra-([a-z0-9]+)-([a-z0-9]+)\.test")


def _crlf(*lines: bytes) -> bytes:
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _index(host: str, paths: list[str] | tuple[str, ...]) -> Reply:
    return reply(200, html(f"{host} index", paths))


def _own_page(host: str, path: str, links: tuple[str, ...] = ()) -> bytes:
    return html(f"{host} {path}", links, "its own answer")


# -- Retry-After ---------------------------------------------------------------


def _retry_after(host: str, path: str) -> Reply | None:
    m = _RA_HOST.fullmatch(host)
    if not m or m[1] not in RETRY_AFTER or m[2] not in RA_WHERE:
        return None
    value, where = RETRY_AFTER[m[1]], m[2]
    # Sent as UTF-8 bytes: the superscript two is two bytes on the wire.
    ra = [("Retry-After", value.encode().decode("latin-1"))]
    if path == "/robots.txt":
        if where == "robots":
            return reply(429, b"slow down", headers=ra, content_type="text/plain")
        return reply(404, b"", content_type="text/plain")
    if path == "/":
        return _index(host, [f"/{i}" for i in range(PAGES_PER_HOST)])
    if where in ("429", "503"):
        return reply(int(where), html("busy"), headers=ra)
    return reply(200, _own_page(host, path), headers=ra if where == "200" else ())


def _hold(path: str) -> Reply:
    if path == "/robots.txt":
        return reply(404, b"", content_type="text/plain")
    return reply(503, html("come back in an hour"), headers=[("Retry-After", "3600")])


# -- keep-alive desync -----------------------------------------------------------


def _desync(host: str, path: str) -> Reply:
    if path == "/robots.txt":
        return reply(404, b"", content_type="text/plain")
    if path == "/":
        body = _own_page(host, path, tuple(f"/d/{i}" for i in range(8)))
    else:
        body = _own_page(host, path)
    k = zlib.crc32(path.encode()) % 1000
    smuggled = html("smuggled", [f"/smuggled/{k}", f"/smuggled/{k + 1}"])
    extra = _crlf(b"HTTP/1.1 200 OK", b"Content-Type: text/html",
                  b"Content-Length: %d" % len(smuggled)) + smuggled
    head = _crlf(b"HTTP/1.1 200 OK", b"Content-Type: text/html; charset=utf-8",
                 b"Content-Length: %d" % len(body))
    # Body and the second response in one write: they reach the client
    # together, before it asks for the next URL.
    return Reply(head, body + extra, End.KEEP, 200)


# -- robots.txt ---------------------------------------------------------------------

_PUBLIC = tuple(f"/public/{i}" for i in range(5))
_PRIVATE = tuple(f"/private/{i}" for i in range(5))
ROBOTS_RULES = b"User-agent: *\nDisallow: /private/\n"


def _padding(total: int, line: bytes) -> Iterator[bytes]:
    block = line * (65536 // len(line))
    sent = 0
    while sent < total:
        part = block[: total - sent]
        sent += len(part)
        yield part


def _robots_host(host: str, path: str) -> Reply:
    if path == "/":
        return _index(host, _PUBLIC + _PRIVATE)
    if path != "/robots.txt":
        return reply(200, _own_page(host, path))
    kind = host.removesuffix(".test")
    if kind == "bigrobots":
        size = 3 * 2**20
        pad = b"# padding: the rules that matter are at the top of this file\n"
        head = _crlf(b"HTTP/1.1 200 OK", b"Content-Type: text/plain",
                     b"Content-Length: %d" % size)
        body = iter([ROBOTS_RULES, *_padding(size - len(ROBOTS_RULES), pad)])
        return Reply(head, body, End.KEEP, 200)
    if kind == "robots-huge":
        body = iter([ROBOTS_RULES, *_padding(32 * 2**20, b"Disallow: /a-long-useless-rule/\n")])
        return reply(200, body, content_type="text/plain")
    if kind == "robots-garbage":
        return reply(200, random.Random(7).randbytes(65536), content_type="text/plain")
    if kind == "robots-5xx":
        return reply(500, b"robots.txt is broken", content_type="text/plain")
    if kind == "robots-slow":
        return Reply(_crlf(b"HTTP/1.1 200 OK", b"Content-Type: text/plain", b"Content-Length: 240"),
                     (ROBOTS_RULES[i:i + 1] for i in range(len(ROBOTS_RULES))), End.CLOSE, 200, drip=0.5)
    return reply(404, html("not found"))


ROBOTS_HOSTS = ("bigrobots.test", "robots-huge.test", "robots-garbage.test",
                "robots-5xx.test", "robots-slow.test")


# -- malformed HTTP ------------------------------------------------------------------

_OK = b"HTTP/1.1 200 OK"
_TEXT = b"Content-Type: text/html"
_SMALL = html("a small page")

#: path -> (head, body, end): each one wrong in one way.
BAD: dict[str, tuple[bytes, bytes | tuple[bytes, ...], End]] = {
    "/status/garbage": (b"HTPT/9.9 two hundred\r\n\r\n", _SMALL, End.CLOSE),
    "/status/no-reason": (b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n", b"ok", End.KEEP),
    "/status/huge-code": (b"HTTP/1.1 99999999999999999999 OK\r\n\r\n", _SMALL, End.CLOSE),
    "/status/code-1000": (b"HTTP/1.1 1000 OK\r\nContent-Length: 2\r\n\r\n", b"ok", End.CLOSE),
    "/status/empty-line": (b"\r\n\r\n", _SMALL, End.CLOSE),
    "/status/http09": (b"", _SMALL, End.CLOSE),
    "/status/long-reason": (b"HTTP/1.1 200 " + b"O" * 100_000 + b"\r\n\r\n", _SMALL, End.CLOSE),
    "/status/nul": (b"HTTP/1.1 200 O\x00K\r\nContent-Length: 2\r\n\r\n", b"ok", End.CLOSE),
    "/header/no-colon": (_crlf(_OK, b"this line is not a header", b"Content-Length: 2"), b"ok", End.KEEP),
    "/header/space-colon": (_crlf(_OK, b"Content-Length : 2"), b"ok", End.CLOSE),
    "/header/obs-fold": (_crlf(_OK, _TEXT, b"X-Folded: a", b"  b", b"Content-Length: 2"), b"ok", End.KEEP),
    "/header/huge": (_crlf(_OK, b"X-Huge: " + b"h" * 200_000, b"Content-Length: 2"), b"ok", End.CLOSE),
    "/header/many": (_crlf(_OK, *(b"X-H%d: v" % i for i in range(20_000)), b"Content-Length: 2"), b"ok", End.CLOSE),
    "/header/nul": (_crlf(_OK, b"X-Nul: a\x00b", b"Content-Length: 2"), b"ok", End.CLOSE),
    "/header/bad-cl": (_crlf(_OK, _TEXT, b"Content-Length: abc"), _SMALL, End.CLOSE),
    "/header/two-cl": (_crlf(_OK, _TEXT, b"Content-Length: 5", b"Content-Length: 7"), b"hello..", End.CLOSE),
    "/header/neg-cl": (_crlf(_OK, _TEXT, b"Content-Length: -1"), _SMALL, End.CLOSE),
    "/header/huge-cl": (_crlf(_OK, _TEXT, b"Content-Length: " + b"9" * 40), _SMALL, End.CLOSE),
    "/header/cl-and-te": (_crlf(_OK, _TEXT, b"Content-Length: 3", b"Transfer-Encoding: chunked"),
                          b"5\r\nhello\r\n0\r\n\r\n", End.CLOSE),
    "/header/latin1-ctype": (_crlf(_OK, b"Content-Type: text/html; charset=\xe9t\xe9", b"Content-Length: 2"),
                             b"ok", End.KEEP),
    "/chunked/bad-size": (_crlf(_OK, _TEXT, b"Transfer-Encoding: chunked"), b"zz\r\nhello\r\n0\r\n\r\n", End.CLOSE),
    "/chunked/huge-size": (_crlf(_OK, _TEXT, b"Transfer-Encoding: chunked"), b"ffffffffffffffffff\r\nhello", End.CLOSE),
    "/chunked/no-end": (_crlf(_OK, _TEXT, b"Transfer-Encoding: chunked"), b"5\r\nhello\r\n", End.CLOSE),
    "/chunked/long-ext": (_crlf(_OK, _TEXT, b"Transfer-Encoding: chunked"),
                          b"5;" + b"e" * 200_000 + b"\r\nhello\r\n0\r\n\r\n", End.CLOSE),
    "/chunked/no-crlf": (_crlf(_OK, _TEXT, b"Transfer-Encoding: chunked"), b"5\r\nhelloXX0\r\n\r\n", End.CLOSE),
    "/gzip/corrupt": (_crlf(_OK, _TEXT, b"Content-Encoding: gzip", b"Content-Length: 20"),
                      b"\x1f\x8b\x08\x00" + b"\xff" * 16, End.KEEP),
    "/gzip/unknown-coding": (_crlf(_OK, _TEXT, b"Content-Encoding: br, zstd, x-own", b"Content-Length: 2"),
                             b"ok", End.KEEP),
    "/truncated": (_crlf(_OK, _TEXT, b"Content-Length: 10000"), _SMALL, End.CLOSE),
    "/reset": (_crlf(_OK, _TEXT, b"Content-Length: 10000"), _SMALL, End.RESET),
    "/empty": (b"", b"", End.CLOSE),
}


def _bad(host: str, path: str) -> Reply:
    if path == "/robots.txt":
        return reply(404, b"", content_type="text/plain")
    if path == "/":
        return _index(host, [*BAD, "/gzip/bomb", "/gzip/bomb-chunked", "/drip", "/hang"])
    if path == "/gzip/bomb":
        return Reply(_crlf(_OK, _TEXT, b"Content-Encoding: gzip", b"Connection: close"),
                     gzip_stream(1024), End.CLOSE, 200)
    if path == "/gzip/bomb-chunked":
        return Reply(_crlf(_OK, _TEXT, b"Content-Encoding: gzip", b"Transfer-Encoding: chunked"),
                     chunked(gzip_stream(1024)), End.KEEP, 200)
    if path == "/drip":
        return Reply(_crlf(_OK, _TEXT, b"Content-Length: 600"), (b"x" for _ in range(600)),
                     End.CLOSE, 200, drip=0.1)
    if path == "/hang":
        # The head, then silence (the server gives up after 60 s).
        return Reply(_crlf(_OK, _TEXT, b"Content-Length: 100"), (b"" for _ in range(60)),
                     End.CLOSE, 200, drip=1.0)
    case = BAD.get(path)
    if case is None:
        return reply(404, html("not found"))
    head, body, end = case
    return Reply(head, body if isinstance(body, bytes) else iter(body), end, 200)


# -- fuzz -----------------------------------------------------------------------------

_FUZZ_STATUS = (b"HTTP/1.1 200 OK", b"HTTP/1.1 404 Not Found", b"HTTP/1.1 301 Moved",
                b"HTTP/1.1 429 Slow", b"HTTP/1.1 503 Busy", b"HTTP/1.0 200 OK", b"HTTP/1.1 999 What",
                b"HTTP/1.1 2x0 OK", b"HTTP/1.1 200", b"ICY 200 OK", b"")
_FUZZ_HEADERS = (
    ("Retry-After", ["5", "\u00b2", "9" * 50, "-1", "Wed, 21 Oct 9999 07:28:00 GMT", "nope", ""]),
    ("Content-Length", ["0", "5", "100000", "-3", "x", "1" * 30, "5, 5"]),
    ("Content-Type", ["text/html", "text/html; charset=utf-8", "text/html; charset=bogus",
                      "text/html; charset=utf-16", "application/pdf", "", ";;;"]),
    ("Location", ["/fuzz/loop", "http://fuzz.test/", "//", "http://[::1", "\u00e9t\u00e9", "javascript:x"]),
    ("Content-Encoding", ["gzip", "deflate", "identity", "br", "gzip, gzip", "x"]),
    ("Transfer-Encoding", ["chunked", "gzip, chunked", "identity"]),
)


def fuzz_reply(seed: int) -> Reply:
    """A random answer, the same for the same seed (for manual runs; tests use hypothesis)."""
    rng = random.Random(seed)
    lines = [rng.choice(_FUZZ_STATUS)]
    for name, values in rng.sample(_FUZZ_HEADERS, rng.randrange(len(_FUZZ_HEADERS) + 1)):
        lines.append(f"{name}: {rng.choice(values)}".encode("utf-8"))
    body = rng.choice([b"", html("fuzz", ["/fuzz/%d" % rng.randrange(10_000)]), rng.randbytes(300)])
    return Reply(_crlf(*lines), body, rng.choice([End.CLOSE, End.CLOSE, End.KEEP]), 0)


def _fuzz(host: str, path: str) -> Reply:
    if path == "/robots.txt":
        return reply(404, b"", content_type="text/plain")
    if path == "/":
        return _index(host, [f"/fuzz/{i}" for i in range(100)])
    m = re.fullmatch(r"/fuzz/([0-9]{1,9})", path)
    return fuzz_reply(int(m[1])) if m else reply(404, html("not found"))


# -- dispatch and catalogue ---------------------------------------------------------------


def route(host: str, path: str) -> Reply | None:
    """The answer of a hostile host, or None if ``host`` is not one of them."""
    if host.startswith("ra-"):
        return _retry_after(host, path)
    if host == "hold.test":
        return _hold(path)
    if host == "desync.test":
        return _desync(host, path)
    if host in ROBOTS_HOSTS:
        return _robots_host(host, path)
    if host == "bad.test":
        return _bad(host, path)
    if host == "fuzz.test":
        return _fuzz(host, path)
    return None


@dataclass(frozen=True, slots=True)
class Case:
    """One hostile case: its name, the URLs (host + path) that start it, what it is."""

    name: str
    seeds: tuple[str, ...]
    note: str


def _ra_case(where: str) -> Case:
    return Case(f"retry-after-{where}", tuple(f"ra-{v}-{where}.test/" for v in RETRY_AFTER),
                f"bad Retry-After values on {'robots.txt (429)' if where == 'robots' else where}")


CASES: tuple[Case, ...] = (
    *(_ra_case(w) for w in RA_WHERE),
    Case("retry-after-3600", ("hold.test/0", "hold.test/1", "hold.test/2"), "503 with Retry-After: 3600"),
    Case("desync", ("desync.test/",), "a second response after Content-Length"),
    Case("robots-3mib", ("bigrobots.test/",), "3 MiB robots.txt, rules first"),
    Case("robots-huge", ("robots-huge.test/",), "32 MiB robots.txt, close-delimited"),
    Case("robots-garbage", ("robots-garbage.test/",), "robots.txt of random bytes"),
    Case("robots-5xx", ("robots-5xx.test/",), "robots.txt answers 500"),
    Case("robots-slow", ("robots-slow.test/",), "robots.txt drips"),
    Case("robots-refused", ("refused.test/", "refused.test/a"), "connection refused"),
    Case("malformed", ("bad.test/",), "bad status lines, headers, chunked, gzip bombs, drips"),
    Case("fuzz", ("fuzz.test/",), "100 seeded random answers"),
    Case("traps", ("trap.test/",), "infinite calendar, /a/a/a/..., /x/y/x/y/..."),
    Case("link-farm", ("farm1.test/",), "1,000,000 new links a page"),
)
