"""HTTP/1.1 responses, sans-IO: bytes in, a head and body bytes out (RFC 9112).

The request side is two functions: :func:`request_target` splits a URL
into the origin, the request target and the Host field (RFC 9110 §7.2), and
:func:`request_bytes` writes the GET head.

The fetcher's wire format, without the I/O (h11's shape: ``feed(bytes)``,
then ask what is there). It replaced httpcore + h11 on the crawl's hot
path: the pair cost 0.6-0.7 ms of CPU a fetch (py-spy, the 49-host crawl of
``scripts/bench_polite.py``: 27% of the peer's loop), most of it in
per-event objects, per-header validation passes, lock and cancel-scope
context managers and the pool's scan of its connections. This reader parses
a head in one decode and one regular expression a line, and hands out body
bytes without copying when a read holds only body.

It accepts and refuses what h11 0.16 does, so the hostile web's tests still
hold byte for byte (the regular expressions are h11's ``_abnf``, on text):

- the status line ``HTTP/d.d SP 3DIGIT [SP reason]`` (RFC 9112 §4); a code
  under 100 is refused (h11 reads 100-999); interim 1xx heads but 101 are
  skipped, as httpcore does;
- header lines ``token ":" OWS value OWS`` (RFC 9112 §5), lines ending in
  CRLF or a bare LF, obs-fold joined with one space (§5.2); NUL, CR and
  other whitespace controls are refused, other C0 bytes pass (``peer.core.http.head.read_head``
  judges values);
- Content-Length: one run of at most 20 ASCII digits, repeats that agree
  kept once, a conflict refused (RFC 9110 §8.6, RFC 9112 §6.3);
- Transfer-Encoding: exactly ``chunked``, once (h11 supports no other);
  with a Content-Length too, chunked wins (RFC 9112 §6.3);
- chunks: ``1*20HEXDIG [; ext] OWS CRLF``, data, CRLF; trailer lines read
  as header lines and dropped (RFC 9112 §7.1);
- no body after 204 and 304 (RFC 9110 §6.4.1); a body without framing runs
  to the close (RFC 9112 §6.3 rule 8);
- keep-alive unless HTTP/1.0 or ``Connection: close`` (RFC 9112 §9.3).

Caps: the head, interim heads included, and any chunk or trailer line are
at most ``max_head`` bytes (httpcore's 100 KiB). Trouble is a
:class:`~peer.errors.FetchError`: ``protocol`` for malformed bytes, ``reset``
for a close before the message's end. Bytes after the end of a message are
:attr:`ResponseReader.trailing` (the connection must not be reused: the
next request would read them as its response).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from peer.core.http.inflate import accept_encoding
from peer.errors import ErrorKind, FetchError

__all__ = ["ACCEPT", "ACCEPT_ENCODING", "MAX_HEAD", "Framing", "Head1", "ResponseReader", "head_lines", "request_bytes",
           "request_target"]

#: httpcore's ``MAX_INCOMPLETE_EVENT_SIZE``, kept: a head over it is no page.
MAX_HEAD = 100 * 1024

# h11's _abnf on text. A bytes regex's \s is [ \t\n\r\f\v]; written out, so
# that decoded non-ASCII (obs-text, RFC 9110 §5.5) is a value character.
_VCHAR_OBS = r"[^\x00 \t\n\r\x0b\x0c]"
_STATUS = re.compile(r"HTTP/([0-9]\.[0-9]) ([0-9]{3})(?: [^\x00\n\r\x0b\x0c]*)?")
_FIELD = re.compile(rf"([-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*((?:{_VCHAR_OBS}+(?:[ \t]+{_VCHAR_OBS}+)*)?)[ \t]*")
_CHUNK = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*\r\n")
_DIGITS = re.compile(r"[0-9]{1,20}")
_BLANK = re.compile(rb"\n\r?\n")
# What h11 would send as a request target and a Host value (visible ASCII).
_TARGET = re.compile(r"[\x21-\x7e]+")
_HOST = _TARGET


class Framing(Enum):
    """How a response body ends (RFC 9112 §6.3)."""

    NONE = "none"  # no body: 204, 304, 101
    LENGTH = "length"
    CHUNKED = "chunked"
    CLOSE = "close"  # read until the server closes


@dataclass(frozen=True, slots=True)
class Head1:
    """A final response head: lower-case names with text values, in order."""

    status: int
    version: str
    fields: list[tuple[str, str]]
    framing: Framing
    length: int | None
    keep_alive: bool


def _protocol(message: str) -> FetchError:
    return FetchError(ErrorKind.PROTOCOL, message)


ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"
# Only what peer.core.http.inflate decodes with a bounded output, and whose library
# is installed: "gzip, deflate, br, zstd".
ACCEPT_ENCODING = accept_encoding()


def head_lines(user_agent: str, headers: tuple[tuple[str, str], ...] = (),
               encodings: str = ACCEPT_ENCODING) -> bytes:
    """The constant header lines of a request: User-Agent, Accept, Accept-Encoding, then ``headers``.

    ``headers`` come checked from cluster.toml (peer/core/config/sites.py: no framing
    header, no CR/LF/NUL); an Accept among them replaces ours. ``encodings``
    is Accept-Encoding's value (:func:`peer.core.http.inflate.accept_encoding`).
    """
    agent = "".join(" " if c in "\r\n\x00" else c for c in user_agent)  # no header injection
    out = b"User-Agent: " + agent.encode("latin-1", "replace") + b"\r\n"
    if not any(name.lower() == "accept" for name, _ in headers):
        out += b"Accept: " + ACCEPT.encode() + b"\r\n"
    out += b"Accept-Encoding: " + encodings.encode() + b"\r\n"
    for name, value in headers:
        out += name.encode("ascii") + b": " + value.encode("latin-1", "replace") + b"\r\n"
    return out


def request_bytes(target: str, host: str, extra: bytes) -> bytes:
    """A GET request head; ``extra`` is the constant ``Name: value\\r\\n`` lines.

    The target and Host come from :func:`request_target`: ASCII without
    spaces or controls, else ``protocol`` (h11 refused them too).
    """
    if not _TARGET.fullmatch(target) or not _HOST.fullmatch(host):
        raise _protocol(f"a request target or host h11 would not send: {target[:100]!r}")
    return b"GET " + target.encode() + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n" + extra + b"\r\n"


def request_target(url: str) -> tuple[str, str, int, str, str]:
    """(scheme, host, port, target, Host field of RFC 9110 §7.2) of an absolute http(s) URL.

    peer.core.urls.normalize hands us normalised ASCII URLs (punycode hosts, percent-encoded
    paths); anything else is no URL this fetcher can send: error ``scope``,
    as httpx's own parser would have said.
    """
    if not url.isascii():
        raise FetchError(ErrorKind.SCOPE, f"not an ASCII URL: {url[:100]!r}")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise FetchError(ErrorKind.SCOPE, f"not an http(s) URL: {url[:100]!r}")
    cut = len(rest)
    for mark in "/?#":
        i = rest.find(mark)
        if 0 <= i < cut:
            cut = i
    authority, target = rest[:cut], rest[cut:].partition("#")[0]
    if "@" in authority:
        raise FetchError(ErrorKind.SCOPE, "a URL with user info is not fetched")
    host, port = authority, None
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise FetchError(ErrorKind.SCOPE, f"bad IPv6 literal in {url[:100]!r}")
        host, tail = authority[1:end], authority[end + 1:]
        if tail:
            if not tail.startswith(":"):
                raise FetchError(ErrorKind.SCOPE, f"bad authority in {url[:100]!r}")
            port = tail[1:]
    elif ":" in authority:
        host, _, port = authority.rpartition(":")
    if not host:
        raise FetchError(ErrorKind.SCOPE, f"no host in {url[:100]!r}")
    default = 443 if scheme == "https" else 80
    number = default
    if port:
        if not (port.isdigit() and len(port) <= 5 and int(port) <= 65535):
            raise FetchError(ErrorKind.SCOPE, f"bad port in {url[:100]!r}")
        number = int(port)
    if not target.startswith("/"):
        target = "/" + target
    host = host.lower()
    shown = f"[{host}]" if ":" in host else host
    field = shown if number == default else f"{shown}:{number}"
    return scheme, host, number, target, field


def _decode(block: bytes) -> str:
    # httpx's rule for a head: ASCII, else UTF-8, else Latin-1 (never an error).
    try:
        return block.decode("ascii")
    except UnicodeDecodeError:
        pass
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError:
        return block.decode("latin-1")


def parse_fields(lines: list[str]) -> list[tuple[str, str]]:
    """Header lines (no line ends) to (lower-case name, value); obs-fold joined."""
    if any(line[:1] in (" ", "\t") for line in lines):
        folded: list[str] = []
        for line in lines:
            if line[:1] in (" ", "\t"):
                if not folded:
                    raise _protocol("continuation line at start of headers")
                folded[-1] += " " + line.lstrip(" \t")
            else:
                folded.append(line)
        lines = folded
    fields = []
    match = _FIELD.fullmatch
    for line in lines:
        m = match(line)
        if m is None:
            raise _protocol(f"illegal header line: {line[:100]!r}")
        name, value = m.groups()
        fields.append((name.lower(), value))
    return fields


def _head(status_line: str, lines: list[str]) -> Head1 | None:
    """The head of these lines; None for an interim 1xx response (to be skipped)."""
    m = _STATUS.fullmatch(status_line)
    if m is None:
        raise _protocol(f"illegal status line: {status_line[:100]!r}")
    version, code_text = m.groups()
    code = int(code_text)
    if code < 100:
        raise _protocol(f"status code {code_text} (h11 reads 100-999)")
    raw = parse_fields(lines)
    if 100 <= code < 200 and code != 101:
        return None
    fields = []
    length_text: str | None = None
    chunked = False
    keep_alive = version >= "1.1"
    for name, value in raw:
        if name == "content-length":
            values = {v.strip(" \t") for v in value.split(",")}
            if len(values) != 1:
                raise _protocol("conflicting Content-Length values")
            value = values.pop()
            if not _DIGITS.fullmatch(value):
                raise _protocol(f"bad Content-Length {value[:40]!r}")
            if length_text is None:
                length_text = value
            elif length_text != value:
                raise _protocol("conflicting Content-Length headers")
            else:
                continue  # an agreeing repeat: kept once, as h11 does
        elif name == "transfer-encoding":
            if chunked:
                raise _protocol("several Transfer-Encoding fields")
            if not (value.isascii() and value.lower() == "chunked"):
                raise _protocol(f"Transfer-Encoding {value[:40]!r}: only chunked is supported")
            chunked = True
        elif name == "connection" and keep_alive:
            if "close" in (t.strip(" \t") for t in value.lower().split(",")):
                keep_alive = False
        fields.append((name, value))
    length = None
    if code == 101 or code in (204, 304):
        framing = Framing.NONE
        keep_alive = keep_alive and code != 101
    elif chunked:
        framing = Framing.CHUNKED
    elif length_text is not None:
        framing = Framing.LENGTH
        length = int(length_text)
    else:
        framing = Framing.CLOSE
        keep_alive = False
    return Head1(code, version, fields, framing, length, keep_alive)


class ResponseReader:
    """Reads one response: :meth:`feed` bytes, then :meth:`head`, then :meth:`read`.

    ``head()`` is None until the head is complete; ``read()`` returns body
    bytes, ``b""`` when it needs more, and None at the end of the body.
    """

    __slots__ = ("_buf", "_pos", "_eof", "_max", "_head_bytes", "head_", "_left", "_chunk_state",
                 "done", "head_start")

    def __init__(self, max_head: int = MAX_HEAD) -> None:
        self._buf = b""
        self._pos = 0
        self._eof = False
        self._max = max_head
        self._head_bytes = 0  # head bytes consumed so far (interim heads included)
        self.head_start = 0  # where the last head read starts in the bytes fed (after 1xx heads)
        self.head_: Head1 | None = None
        self._left = 0  # body bytes still due: of the Content-Length, or of this chunk
        # Chunked: 0 = a chunk header is next, 1 = chunk data, 2 = its CRLF, 3 = trailer.
        self._chunk_state = 0
        self.done = False

    def feed(self, data: bytes | bytearray) -> None:
        """Bytes read from the connection; ``b""`` is the server's close."""
        if isinstance(data, bytearray):  # trio's SSLStream reads into one
            data = bytes(data)
        if not data:
            self._eof = True
        elif self._pos >= len(self._buf):
            self._buf, self._pos = data, 0
        else:
            self._buf = self._buf[self._pos:] + data
            self._pos = 0

    @property
    def trailing(self) -> bool:
        """Bytes past the end of the message were received (a desync if reused)."""
        return self.done and self._pos < len(self._buf)

    @property
    def reusable(self) -> bool:
        """The message ended cleanly on a keep-alive connection with nothing after it."""
        head = self.head_
        return (self.done and head is not None and head.keep_alive and not self._eof
                and self._pos >= len(self._buf))

    @property
    def head_span(self) -> tuple[int, int]:
        """(start, end) of the final head in the bytes fed: its raw bytes, for an archive."""
        return self.head_start, self._head_bytes

    def head(self) -> Head1 | None:
        """The final response head once it is complete; FetchError if malformed."""
        while self.head_ is None:
            buf, pos = self._buf, self._pos
            if pos < len(buf) and buf[pos] < 0x21:
                raise _protocol("the response does not start with a status line")
            m = _BLANK.search(buf, pos)
            if m is None or m.end() - pos + self._head_bytes > self._max:
                if len(buf) - pos + self._head_bytes > self._max:
                    raise _protocol(f"response head over {self._max} bytes")
                if self._eof:
                    raise FetchError(ErrorKind.RESET, "server disconnected without sending a response")
                return None
            end = m.start()
            first = buf.find(b"\n", pos, end + 1)
            line = buf[pos:first]
            status_line = (line[:-1] if line.endswith(b"\r") else line).decode("latin-1")
            block = buf[first + 1:end]
            lines = _decode(block).replace("\r\n", "\n").split("\n") if block else []
            if lines and lines[-1].endswith("\r"):  # the CR of the last line's CRLF
                lines[-1] = lines[-1][:-1]
            self.head_start = self._head_bytes
            self._head_bytes += m.end() - pos
            self._pos = m.end()
            head = _head(status_line, lines)
            if head is not None:
                self.head_ = head
                if head.framing is Framing.NONE:
                    self.done = True
                elif head.framing is Framing.LENGTH:
                    self._left = head.length or 0
                    self.done = not self._left
        return self.head_

    def read(self) -> bytes | None:
        """Body bytes; ``b""`` when more must be read first, None at the end."""
        if self.done:
            return None
        head = self.head_
        assert head is not None, "read() before head()"
        framing = head.framing
        buf, pos = self._buf, self._pos
        have = len(buf) - pos
        if framing is Framing.LENGTH:
            if have == 0:
                if self._eof:
                    raise FetchError(ErrorKind.RESET, "peer closed connection without sending "
                                     f"complete message body ({self._left} bytes missing)")
                return b""
            n = min(have, self._left)
            out = buf if pos == 0 and n == len(buf) else buf[pos:pos + n]
            self._pos = pos + n
            self._left -= n
            if not self._left:
                self.done = True
            return out
        if framing is Framing.CLOSE:
            if have == 0:
                if self._eof:
                    self.done = True
                    return None
                return b""
            out = buf if pos == 0 else buf[pos:]
            self._buf, self._pos = b"", 0
            return out
        return self._read_chunked()

    def _read_chunked(self) -> bytes | None:
        while True:
            buf, pos = self._buf, self._pos
            have = len(buf) - pos
            state = self._chunk_state
            if state == 1:
                if have == 0:
                    break
                n = min(have, self._left)
                self._pos = pos + n
                self._left -= n
                if not self._left:
                    self._chunk_state = 2
                return buf[pos:pos + n]
            if state == 2:
                if have < 2:
                    if have and buf[pos:pos + 1] != b"\r":
                        raise _protocol("malformed chunk footer")
                    break
                if buf[pos:pos + 2] != b"\r\n":
                    raise _protocol("malformed chunk footer")
                self._pos = pos + 2
                self._chunk_state = 0
                continue
            if state == 0:
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    if have > self._max:
                        raise _protocol(f"chunk header over {self._max} bytes")
                    break
                m = _CHUNK.fullmatch(buf, pos, end + 2)
                if m is None:
                    raise _protocol(f"illegal chunk header: {bytes(buf[pos:min(end, pos + 40)])!r}")
                self._pos = end + 2
                self._left = int(m.group(1), 16)
                self._chunk_state = 1 if self._left else 3
                continue
            # state 3, the trailer section: an empty line, or header lines and one.
            if buf[pos:pos + 2] == b"\r\n" or buf[pos:pos + 1] == b"\n":
                self._pos = pos + (2 if buf[pos:pos + 1] == b"\r" else 1)
                self.done = True
                return None
            m = _BLANK.search(buf, pos)
            if m is None:
                if have > self._max:
                    raise _protocol(f"chunked trailer over {self._max} bytes")
                break
            lines = _decode(buf[pos:m.start()]).replace("\r\n", "\n").split("\n")
            if lines and lines[-1].endswith("\r"):
                lines[-1] = lines[-1][:-1]
            parse_fields(lines)  # validated as h11 does, then dropped
            self._pos = m.end()
            self.done = True
            return None
        if self._eof:
            raise FetchError(ErrorKind.RESET, "peer closed connection without sending complete "
                             "message body (incomplete chunked read)")
        return b""
