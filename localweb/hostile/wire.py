"""Bytes on the wire: reading a request head, writing any response, on purpose wrong.

Pure: no sockets, no trio. :func:`parse_request` reads the head a client sent
(the server bounds how much it buffers before calling it);
:class:`Reply` is what a route answers: raw head bytes, sent as they are,
and a body that may be a generator, so a response can be malformed in any
way and as large as we like without ever being held in memory whole.

h11 is not used on this side on purpose: it refuses to *send* a bad status
line, a header with a newline in it, two Content-Lengths or a body longer
than its Content-Length, which are the answers the crawler must survive.
"""

from __future__ import annotations

import enum
import email.utils
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = [
    "End", "Reply", "Request", "chunked", "gzip_stream", "html", "parse_request", "reply",
]

#: Reason phrases for the statuses the routes use; anything else gets "Status".
_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 404: "Not Found",
            429: "Too Many Requests", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 503: "Service Unavailable"}


class End(enum.Enum):
    """What the server does with the connection once a reply is sent."""

    KEEP = "keep"      # read the next request (keep-alive), whatever the reply said
    CLOSE = "close"    # close it cleanly (FIN)
    RESET = "reset"    # abort it (RST: SO_LINGER 0)


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed request head: method, target as sent, Host without its port (lower case)."""

    method: str
    target: str
    host: str

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer: ``head`` is sent byte for byte, then every chunk of ``body``.

    ``status`` is only what the request log records (the head may say
    anything). ``drip`` seconds pass before each body chunk after the first.
    A body given as a generator is streamed: it is consumed only as fast as
    the client reads, and dropped unfinished when the client goes away.
    """

    head: bytes
    body: bytes | Iterable[bytes] = b""
    end: End = End.KEEP
    status: int = 0
    drip: float = 0.0

    def chunks(self) -> Iterator[bytes]:
        if isinstance(self.body, (bytes, bytearray)):
            if self.body:
                yield bytes(self.body)
        else:
            yield from self.body


def parse_request(head: bytes) -> Request | None:
    """The request in ``head`` (up to and without the blank line); None if it is not HTTP/1.x."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    host = b""
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"host":
            host = value.strip()
            break
    host = host.rsplit(b":", 1)[0] if host.count(b":") == 1 else host
    return Request(parts[0].decode("latin-1"), parts[1].decode("latin-1"),
                   host.decode("latin-1").lower().rstrip("."))


def reply(status: int, body: bytes | Iterable[bytes] = b"", *,
          headers: Iterable[tuple[str, str]] = (), content_type: str | None = "text/html; charset=utf-8",
          length: bool = True, end: End = End.KEEP, drip: float = 0.0) -> Reply:
    """A well-formed reply; ``length=False`` (or a streamed body) sends no Content-Length and closes.

    A close-delimited body (RFC 9112 §6.3, rule 8) is how a streamed page of
    unknown size ends; the connection cannot be kept alive after it.
    """
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
             f"Date: {email.utils.formatdate(usegmt=True)}"]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    if length and isinstance(body, (bytes, bytearray)):
        lines.append(f"Content-Length: {len(body)}")
    else:
        end = End.CLOSE
    if end is End.CLOSE:
        lines.append("Connection: close")
    lines.extend(f"{k}: {v}" for k, v in headers)
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return Reply(head, body, end, status, drip)


def html(title: str, links: Iterable[str] = (), text: str = "") -> bytes:
    """A small page: its title, a paragraph, and one anchor per link."""
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>\n' for href in links)
    return (f"<!doctype html><html><head><title>{title}</title></head><body>"
            f"<h1>{title}</h1><p>{text}</p><ul>\n{anchors}</ul></body></html>\n").encode()


def chunked(parts: Iterable[bytes]) -> Iterator[bytes]:
    """``parts`` in chunked transfer coding (RFC 9112 §7.1), ending with the last chunk."""
    for part in parts:
        if part:
            yield b"%x\r\n%s\r\n" % (len(part), part)
    yield b"0\r\n\r\n"


def gzip_stream(mib: int) -> Iterator[bytes]:
    """A gzip member of ``mib`` MiB of zeros, streamed (~1 KiB on the wire per MiB inflated).

    One deflate segment repeated: after ``Z_FULL_FLUSH`` the compressor's
    history is empty and its output byte-aligned, so every MiB of zeros
    compresses to the same bytes and copies can be concatenated (the same
    trick as localweb/sitegraph/endpoints.py's ``gzip_bomb``); the CRC is computed only if
    a client reads to the end.
    """
    zeros = bytes(1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    for _ in range(mib):
        yield segment
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    yield comp.flush(zlib.Z_FINISH) + crc.to_bytes(4, "little") + ((mib << 20) & 0xFFFFFFFF).to_bytes(4, "little")
