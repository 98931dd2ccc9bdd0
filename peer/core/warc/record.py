"""WARC/1.1 records (ISO 28500:2017) built from one fetch's bytes, with their CDXJ facts (pure).

The writer (``peer.results.warc``) hands this module what the fetcher saw and
gets back the bytes of each record, each one gzip member, and what the index
needs to know of it. Nothing here reads a clock, a file or a random source:
the record IDs and the date come in.

The rules, with the spec's sections:

1. **A chunked response is stored de-chunked under an adjusted head**
   (§6.3.2 with §5.9): the status line and every header line byte for
   byte as received, except that each ``Transfer-Encoding`` and
   ``Content-Length`` line is kept renamed ``X-Crawler-Transfer-Encoding``
   / ``X-Crawler-Content-Length`` and one ``Content-Length`` of the
   de-chunked body is added; then that body, content-coding (gzip) kept.
   The chunk framing is transport framing (RFC 9112 §7: a transfer coding
   is a property of the message, which any recipient may remove); the
   fetcher does not keep it, and Common Crawl stores chunked answers
   de-chunked too, the header kept as ``X-Crawler-Transfer-Encoding``. Every
   reader then parses the record as it is, and its payload is what §5.9
   defines and what ``warcio check`` digests (rule 2). Any other body
   (plain, gzip with a Content-Length, close-delimited) is stored with its
   head exactly as received. A head no parser accepts is still archived
   byte for byte.
2. **The payload is the entity-body** (§5.9, RFC 2616 §4.3, RFC 9112 §7): the
   body with the transfer-coding removed and the content-coding kept, so the
   same gzip bytes served chunked or with a Content-Length have the same
   ``WARC-Payload-Digest`` (the spec editors' reading, iipc/warc-specifications
   issue 22). With rule 1 the record's HTTP body *is* that payload, so every
   checker computes the same digest. A chunked body that breaks off or is
   malformed (hostile, or cut at ``max_body``) is decoded as far as it
   parses and the rest taken as it is, which is what warcio's reader does
   too; ``WARC-Truncated`` says it is not whole.
3. **Digests are ``sha1:`` in base32** (RFC 4648), as Heritrix, wget, warcio
   and every CDX server write them: deduplication against other archives and
   their indexes compares these strings. SHA-1's collisions (SHAttered, 2017)
   need an attacker who controls both documents; a crawl that wants more can
   choose ``sha256`` (:class:`DigestAlgorithm`), which pywb reads too.
4. **Every field value is one line of visible ASCII.** A hostile URL or a
   config value with a CR or LF would inject header lines: each byte outside
   ``0x21-0x7e`` of a URI is percent-encoded (a WARC/1.1 URI has no angle
   brackets, §5.3), other values have their control characters replaced.
5. **One record, one gzip member** (Annex D.2): a reader can start at any
   record's offset, and a file cut mid-member loses only that record.
6. **A revisit refers to the record that holds the payload** (§6.7, §5.16,
   §5.17): :class:`Refers` names the last ``response`` record of the URL
   that stands for the page, never a revisit and never a 304, with that
   record's own ``WARC-Record-ID``, its ``WARC-Date`` string exactly as
   written, and its payload digest, which a revisit repeats so a replay
   tool finds the original by digest too. :mod:`peer.core.warc.refers` says
   when a fetch is a revisit (a 304, or the same payload digest as that
   record's) and which record a later revisit refers to. With nothing to
   refer to (a 304 to a URL's first request, or after a capture cut at
   ``max_body``) the fetch is a ``response`` record: what the server sent,
   not a revisit pointing at nothing.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from functools import lru_cache

__all__ = [
    "BodyFraming",
    "Capture",
    "CdxFacts",
    "DigestAlgorithm",
    "Refers",
    "RevisitProfile",
    "Truncation",
    "cdx_timestamp",
    "cdxj_line",
    "dechunk",
    "digest",
    "gzip_member",
    "info_json",
    "not_modified_record",
    "payload_digest",
    "request_record",
    "response_record",
    "revisit_record",
    "status_of",
    "truncation",
    "warc_date",
    "warcinfo_record",
]

WARC_VERSION = b"WARC/1.1"
CONFORMS_TO = "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
FORMAT = "WARC File Format 1.1"


class DigestAlgorithm(Enum):
    """The hash of ``WARC-Block-Digest`` and ``WARC-Payload-Digest`` (rule 3)."""

    SHA1 = "sha1"
    SHA256 = "sha256"


class BodyFraming(Enum):
    """How the body handed over is framed: as it came off the wire, or de-chunked (rule 1)."""

    AS_RECEIVED = "as_received"
    TRANSFER_DECODED = "transfer_decoded"


class Truncation(Enum):
    """``WARC-Truncated``'s reasons (§5.13)."""

    LENGTH = "length"          # cut at max_body
    TIME = "time"              # the fetch's deadline
    DISCONNECT = "disconnect"  # the server closed early
    UNSPECIFIED = "unspecified"


class RevisitProfile(Enum):
    """The two revisit profiles of WARC/1.1 (§6.7.2, §6.7.3)."""

    IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


def truncation(complete: bool, cut: bool, error: str | None) -> Truncation | None:
    """Why a fetch's body is not whole (``WARC-Truncated``, §5.13), None if it is.

    ``complete``: the message ended as its framing said; ``cut``: the body was
    cut at ``max_body``; ``error``: the fetch's error kind (the results'
    ``error`` column). A Content-Length over ``max_body`` refused before any
    body byte is a cut at ``length`` too.
    """
    if complete and not cut:
        return None
    if cut or error == "too_large":
        return Truncation.LENGTH
    if error == "timeout":
        return Truncation.TIME
    if error == "reset":
        return Truncation.DISCONNECT
    return Truncation.UNSPECIFIED


@dataclass(frozen=True, slots=True)
class Capture:
    """One fetch as the fetcher hands it over: the bytes as sent and received.

    ``request`` is the request line and headers as sent (with the blank line),
    ``response_head`` the status line and header bytes as received (with the
    blank line), ``body`` the body before any content decoding. ``date`` is
    when the fetch began, in seconds since the epoch (§5.4: "the instant that
    data capture for record creation began"); ``ip_address`` the server's.
    """

    target_uri: str
    date: float
    request: bytes
    response_head: bytes
    body: bytes
    ip_address: str | None = None
    framing: BodyFraming = BodyFraming.AS_RECEIVED
    truncated: Truncation | None = None


@dataclass(frozen=True, slots=True)
class Refers:
    """The ``response`` record a revisit refers to: the one holding the page's payload (rule 6).

    ``record_id`` is its ``WARC-Record-ID`` (§5.16's ``WARC-Refers-To``),
    ``date`` its ``WARC-Date`` as written (§5.17: "the WARC-Date of the
    record it refers to"; a float would come back microseconds off),
    ``payload_digest`` its ``WARC-Payload-Digest``, the same algorithm and
    form. Its target URI is the revisit's own: a URL's revisits refer to
    that URL's captures.
    """

    record_id: str
    date: str
    payload_digest: str

    def pack(self) -> str:
        """One string, as the revisit schedule keeps it opaque (none of the three holds a space)."""
        return f"{self.record_id} {self.date} {self.payload_digest}"

    @classmethod
    def unpack(cls, text: str | None) -> Refers | None:
        """:meth:`pack`'s string back; None for None or anything else (it may have come from disk)."""
        if not text:
            return None
        parts = text.split(" ")
        if len(parts) != 3 or not all(parts):
            return None
        return cls(*parts)


@dataclass(frozen=True, slots=True)
class CdxFacts:
    """What the index needs of a record that the record alone cannot say: its place in the file."""

    url: str
    date: float
    mime: str | None
    status: str | None
    digest: str | None


# ---------------------------------------------------------------- values


@lru_cache(maxsize=64)  # a fetch's records share its date: formatted once, not per record
def warc_date(epoch: float) -> str:
    """``WARC-Date``: W3C-DTF in UTC with microseconds (WARC/1.1 allows fractions, §5.4)."""
    moment = datetime.fromtimestamp(epoch, timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cdx_timestamp(epoch: float) -> str:
    """The CDX 14-digit timestamp, ``YYYYMMDDhhmmss`` in UTC."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y%m%d%H%M%S")


def digest(data: bytes, algorithm: DigestAlgorithm = DigestAlgorithm.SHA1) -> str:
    """``<algorithm>:<base32>`` (rule 3)."""
    return digest_text(hashlib.new(algorithm.value, data).digest(), algorithm)


def digest_text(raw: bytes, algorithm: DigestAlgorithm = DigestAlgorithm.SHA1) -> str:
    """A digest already computed, in the same ``<algorithm>:<base32>`` form."""
    return f"{algorithm.value}:{base64.b32encode(raw).decode('ascii')}"


def gzip_member(record: bytes, level: int = 6) -> bytes:
    """One record as one gzip member (rule 5); ``mtime=0`` so equal records compress equally."""
    return gzip.compress(record, compresslevel=level, mtime=0)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _uri(uri: str) -> str:
    """A URI as one header line of visible ASCII (rule 4)."""
    if uri.isascii() and uri.isprintable() and " " not in uri:
        return uri
    out = []
    for char in uri:
        if "\x21" <= char <= "\x7e":
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    return "".join(out)


def _text(value: str) -> str:
    """A field value on one line (rule 4)."""
    return _CONTROL.sub(" ", value)


@lru_cache(maxsize=1024)  # a crawl talks to few addresses, each many times
def _ip(value: str | None) -> str | None:
    """The server's address if it is one, else nothing: it comes from our resolver, but check."""
    if not value:
        return None
    try:
        return str(ipaddress.ip_address(value.split("%", 1)[0]))
    except ValueError:
        return None


# ---------------------------------------------------------------- HTTP, read as little as needed


def _head_lines(head: bytes) -> list[bytes]:
    """The head's lines, CRLF or bare LF (RFC 9112 §2.2 lets a recipient accept LF)."""
    return head.replace(b"\r\n", b"\n").split(b"\n")


def _header(head: bytes, name: bytes) -> bytes | None:
    """The last value of header ``name`` in a raw head, or None; never raises."""
    found = None
    lowered = name.lower() + b":"
    for line in _head_lines(head)[1:]:
        if line[: len(lowered)].lower() == lowered:
            found = line[len(lowered):].strip()
    return found


def status_of(head: bytes) -> str | None:
    """The status code of a raw head, None if there is none to read."""
    first = _head_lines(head)[0].split()
    if len(first) >= 2 and len(first[1]) == 3 and first[1].isdigit():
        return first[1].decode("ascii")
    return None


_MIME_END = re.compile(rb"[;\s]")


def _mime(head: bytes) -> str | None:
    """Content-Type up to its first ``;`` or space, as cdxj-indexer writes it; None if absent."""
    value = _header(head, b"content-type")
    if not value:
        return None
    return _MIME_END.split(value, 1)[0].decode("latin-1")


def _is_chunked(head: bytes) -> bool:
    """Whether the last transfer-coding is chunked (RFC 9112 §6.1)."""
    value = _header(head, b"transfer-encoding")
    if not value:
        return False
    codings = [c.strip().lower() for c in value.split(b",")]
    return bool(codings) and codings[-1] == b"chunked"


def dechunk(body: bytes) -> bytes:
    """The chunked ``body`` decoded as far as it parses, the rest as it is (rule 2); never raises."""
    out = bytearray()
    pos = 0
    while pos < len(body):
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            break
        size_field = body[pos:eol].split(b";", 1)[0].strip()
        if not size_field or len(size_field) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in size_field):
            break
        size = int(size_field, 16)
        start = eol + 2
        if size == 0:
            return bytes(out)  # the trailer section is not payload
        out += body[start : start + size]
        if start + size > len(body):
            return bytes(out)  # cut inside a chunk: what arrived of it
        pos = start + size + 2
    return bytes(out) + body[pos:]


#: The prefix a header line the de-chunked record no longer obeys is kept under (rule 1).
ORIGINAL_PREFIX = b"X-Crawler-"
_FRAMING = (b"transfer-encoding:", b"content-length:")


def _dechunked_head(head: bytes, length: int) -> bytes:
    """``head`` with its framing lines renamed and ``Content-Length: length`` added (rule 1).

    Every other byte stays as received, line endings included. A transfer
    coding other than ``chunked`` listed before it (``gzip, chunked``, which
    no server we know sends) is kept in a ``Transfer-Encoding`` of its own.
    """
    lines = head.split(b"\n")
    crlf = b"\r" if lines[0].endswith(b"\r") else b""
    out = [lines[0]]
    end = len(lines)
    extra: list[bytes] = []
    for i in range(1, len(lines)):
        line = lines[i]
        if line.rstrip(b"\r") == b"":
            end = i
            break
        lowered = line[:18].lower()
        if lowered.startswith(_FRAMING):
            out.append(ORIGINAL_PREFIX + line)
            if lowered.startswith(b"transfer-encoding:"):
                codings = [c.strip() for c in line.split(b":", 1)[1].rstrip(b"\r").split(b",")]
                rest = [c for c in codings if c and c.lower() != b"chunked"]
                if rest:
                    extra.append(b"Transfer-Encoding: " + b", ".join(rest) + crlf)
        else:
            out.append(line)
    out += extra
    out.append(b"Content-Length: %d" % length + crlf)
    return b"\n".join(out + lines[end:])


def _framed(capture: Capture) -> tuple[bytes, bytes]:
    """(the response block's HTTP head, the payload) by rules 1 and 2: the block is the two
    together, never joined here (a body is copied once, into its record)."""
    if not _is_chunked(capture.response_head):
        return capture.response_head, capture.body
    payload = capture.body if capture.framing is BodyFraming.TRANSFER_DECODED else dechunk(capture.body)
    return _dechunked_head(capture.response_head, len(payload)), payload


def _digest_of(parts: tuple[bytes, ...], algorithm: DigestAlgorithm) -> str:
    """:func:`digest` of the parts' concatenation, without making it."""
    h = hashlib.new(algorithm.value)
    for part in parts:
        h.update(part)
    return digest_text(h.digest(), algorithm)


def payload_digest(capture: Capture, algorithm: DigestAlgorithm = DigestAlgorithm.SHA1) -> str:
    """The ``WARC-Payload-Digest`` a ``response`` record of ``capture`` has (rule 2)."""
    return digest(_framed(capture)[1], algorithm)


# ---------------------------------------------------------------- records


def _record(fields: list[tuple[str, str]], *block: bytes) -> bytes:
    """The record: its header, then the block's parts, joined once (the body is not copied twice)."""
    head = [WARC_VERSION]
    head.extend(f"{name}: {value}".encode("utf-8") for name, value in fields)
    head.append(f"Content-Length: {sum(map(len, block))}\r\n".encode("ascii"))
    return b"".join((b"\r\n".join(head), b"\r\n", *block, b"\r\n\r\n"))


def warcinfo_record(
    record_id: str,
    date: float,
    filename: str,
    info: Mapping[str, str],
    algorithm: DigestAlgorithm = DigestAlgorithm.SHA1,
) -> bytes:
    """The ``warcinfo`` record that opens a file (§6.2): ``info`` as ``application/warc-fields``."""
    lines = [f"{_text(k).replace(':', '_')}: {_text(v)}" for k, v in info.items()]
    lines += [f"format: {FORMAT}", f"conformsTo: {CONFORMS_TO}"]
    block = ("\r\n".join(lines) + "\r\n").encode("utf-8")
    return _record(
        [
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", record_id),
            ("WARC-Date", warc_date(date)),
            ("WARC-Filename", _text(filename)),
            ("Content-Type", "application/warc-fields"),
            ("WARC-Block-Digest", digest(block, algorithm)),
        ],
        block,
    )


def info_json(config: Mapping[str, object]) -> str:
    """A crawl config as one line of JSON, for a warcinfo field (sorted keys: stable files)."""
    return json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))


def _common(kind: str, record_id: str, capture: Capture, warcinfo_id: str | None) -> list[tuple[str, str]]:
    fields = [
        ("WARC-Type", kind),
        ("WARC-Record-ID", record_id),
        ("WARC-Date", warc_date(capture.date)),
        ("WARC-Target-URI", _uri(capture.target_uri)),
    ]
    ip = _ip(capture.ip_address)
    if ip is not None:
        fields.append(("WARC-IP-Address", ip))
    if warcinfo_id is not None:
        fields.append(("WARC-Warcinfo-ID", warcinfo_id))
    return fields


def request_record(
    capture: Capture,
    record_id: str,
    concurrent_to: str,
    warcinfo_id: str | None = None,
    algorithm: DigestAlgorithm = DigestAlgorithm.SHA1,
) -> bytes:
    """The ``request`` record (§6.4): the request as sent, linked to its response by ``WARC-Concurrent-To``."""
    return _concurrent("request", "application/http;msgtype=request", capture.request, capture, record_id,
                       concurrent_to, warcinfo_id, algorithm)


def _concurrent(kind: str, content_type: str, block: bytes, capture: Capture, record_id: str,
                concurrent_to: str, warcinfo_id: str | None, algorithm: DigestAlgorithm) -> bytes:
    """A record beside a response (a request, a 304's metadata): linked by ``WARC-Concurrent-To``."""
    fields = _common(kind, record_id, capture, warcinfo_id)
    fields += [
        ("WARC-Concurrent-To", concurrent_to),
        ("Content-Type", content_type),
        ("WARC-Block-Digest", digest(block, algorithm)),
    ]
    return _record(fields, block)


def response_record(
    capture: Capture,
    record_id: str,
    warcinfo_id: str | None = None,
    algorithm: DigestAlgorithm = DigestAlgorithm.SHA1,
) -> tuple[bytes, CdxFacts]:
    """The ``response`` record (§6.3) and its index facts."""
    http_head, payload = _framed(capture)
    payload_sum = digest(payload, algorithm)
    fields = _common("response", record_id, capture, warcinfo_id)
    fields += [
        ("Content-Type", "application/http;msgtype=response"),
        ("WARC-Block-Digest", _digest_of((http_head, payload), algorithm)),
        ("WARC-Payload-Digest", payload_sum),
    ]
    if capture.truncated is not None:
        fields.append(("WARC-Truncated", capture.truncated.value))
    facts = CdxFacts(
        url=_uri(capture.target_uri),
        date=capture.date,
        mime=_mime(capture.response_head),
        status=status_of(capture.response_head),
        digest=payload_sum,
    )
    return _record(fields, http_head, payload), facts


def revisit_record(
    capture: Capture,
    record_id: str,
    profile: RevisitProfile,
    refers: Refers,
    warcinfo_id: str | None = None,
    algorithm: DigestAlgorithm = DigestAlgorithm.SHA1,
) -> tuple[bytes, CdxFacts]:
    """A ``revisit`` record (§6.7) referring to the record that holds the payload (rule 6).

    Identical payload (§6.7.2): the payload digest is this fetch's, equal to
    the original's; the block is the head its ``response`` record would have
    (rule 1) without the body, so ``WARC-Truncated: length`` ("shall be used
    for any identical-digest truncation"). Server not modified (§6.7.3): no
    block ("may have no content body, in which case a Content-Length of zero
    shall be written"), so a replay takes the status, headers and payload of
    the original (pywb's "empty revisit"); a 304 head as the block would be
    replayed as an empty 304. The 304 as received is kept beside it
    (:func:`not_modified_record`). Its payload digest is the original's.
    """
    fields = _common("revisit", record_id, capture, warcinfo_id)
    if profile is RevisitProfile.IDENTICAL_PAYLOAD:
        block, payload = _framed(capture)
        payload_sum = digest(payload, algorithm)
        fields += [("WARC-Profile", profile.value), ("Content-Type", "application/http;msgtype=response"),
                   ("WARC-Truncated", Truncation.LENGTH.value)]
    else:
        block, payload_sum = b"", _text(refers.payload_digest)
        fields += [("WARC-Profile", profile.value)]
    fields += [
        ("WARC-Block-Digest", digest(block, algorithm)),
        ("WARC-Payload-Digest", payload_sum),
        ("WARC-Refers-To", _text(refers.record_id)),
        ("WARC-Refers-To-Target-URI", _uri(capture.target_uri)),
        ("WARC-Refers-To-Date", _text(refers.date)),
    ]
    facts = CdxFacts(
        url=_uri(capture.target_uri),
        date=capture.date,
        mime="warc/revisit",
        status=status_of(block) if block else None,
        digest=payload_sum,
    )
    return _record(fields, block), facts


def not_modified_record(
    capture: Capture,
    record_id: str,
    concurrent_to: str,
    warcinfo_id: str | None = None,
    algorithm: DigestAlgorithm = DigestAlgorithm.SHA1,
) -> bytes:
    """The 304 a server-not-modified revisit stands for, as received: a ``metadata`` record (§6.6).

    ``application/warc-fields``: an ``http-status-line`` field and one
    ``http-header`` field a header line, in order (control characters
    replaced, rule 4). Replay indexes (cdxj-indexer, pywb's) leave such
    records out, so the replay of that time is the original's.
    """
    lines = _head_lines(capture.response_head)
    named = [("http-status-line", lines[0])] + [("http-header", line) for line in lines[1:] if line.strip()]
    block = "".join(f"{name}: {_text(value.decode('latin-1'))}\r\n" for name, value in named).encode("latin-1")
    return _concurrent("metadata", "application/warc-fields", block, capture, record_id, concurrent_to,
                       warcinfo_id, algorithm)


def cdxj_line(urlkey: str, facts: CdxFacts, length: int, offset: int, filename: str) -> str:
    """One CDXJ line: ``<urlkey> <timestamp> {json}``, the fields and their order cdxj-indexer writes."""
    named = {
        "url": facts.url,
        "mime": facts.mime,
        "status": facts.status,
        "digest": facts.digest,
        "length": str(length),
        "offset": str(offset),
        "filename": filename,
    }
    # cdxj-indexer leaves out a field the record has no value for.
    fields = {name: value for name, value in named.items() if value is not None}
    return f"{urlkey} {cdx_timestamp(facts.date)} {json.dumps(fields)}\n"
