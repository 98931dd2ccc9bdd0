"""Which record a WARC revisit refers to, and the digests of a chunked answer (peer/core/warc/record.py rules 1, 2, 6; peer/core/warc/refers.py).

An archivist's questions, asked of the records themselves: does every
revisit of a page name the ``response`` record that holds its body, with
that record's own ID and ``WARC-Date`` string, and the payload digest that
record has, so a replay tool finds the body by either? And does a chunked
answer's record carry a payload digest a checker recomputes from the record?
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import random

from peer.core.config.revisit import RevisitConfig
from peer.core.frontier.spillqueue import MemorySpill
from peer.core.revisit.duequeue import DueQueue
from peer.core.revisit.policy import RevisitState
from peer.core.revisit.recrawl import Recrawl
from peer.core.warc.record import (
    BodyFraming,
    Capture,
    DigestAlgorithm,
    Refers,
    RevisitProfile,
    Truncation,
    payload_digest,
    response_record,
    revisit_record,
)
from peer.core.warc.refers import refers_after, revisit_profile

URL = "http://example.com/page"
PAGE = b"<html><body>" + b"<p>the page</p>" * 80 + b"</body></html>"
GZ = gzip.compress(PAGE, mtime=0)
REQUEST = b"GET /page HTTP/1.1\r\nHost: example.com\r\n\r\n"
#: A float epoch whose microseconds do not survive a round trip through a float sum.
T0 = 1_764_000_000.123457


def _head(status: str, *fields: str) -> bytes:
    return ("\r\n".join([f"HTTP/1.1 {status}", *fields]) + "\r\n\r\n").encode()


def _capture(head: bytes, body: bytes = b"", at: float = T0, **kw: object) -> Capture:
    return Capture(URL, at, REQUEST, head, body, "192.0.2.1", **kw)  # type: ignore[arg-type]


def _fields(record: bytes) -> dict[str, str]:
    """A record's WARC header fields (its first lines up to the blank line)."""
    head = record.split(b"\r\n\r\n", 1)[0].decode()
    return dict(line.split(": ", 1) for line in head.split("\r\n")[1:])


def _archive(capture: Capture, earlier: Refers | None, record_id: str,
             algorithm: DigestAlgorithm = DigestAlgorithm.SHA1) -> tuple[dict[str, str], Refers | None]:
    """What the crawl does with one fetch (peer/engine/revisits.py): the record's fields, and what
    the next revisit refers to."""
    payload = payload_digest(capture, algorithm)
    profile = revisit_profile(capture, earlier, payload)
    if profile is None:
        record, _ = response_record(capture, record_id, None, algorithm)
    else:
        assert earlier is not None
        record, _ = revisit_record(capture, record_id, profile, earlier, None, algorithm)
    return _fields(record), refers_after(earlier, capture, profile, record_id, payload)


OK = _head("200 OK", "Content-Type: text/html", f"Content-Length: {len(PAGE)}", 'ETag: "v1"')
NOT_MODIFIED = _head("304 Not Modified", 'ETag: "v1"')


def test_every_revisit_refers_to_the_response_that_holds_the_page_never_to_a_revisit() -> None:
    """A page visited six times: 200, 304, 304, the same 200, a changed 200, 304."""
    visits = [(OK, PAGE), (NOT_MODIFIED, b""), (NOT_MODIFIED, b""), (OK, PAGE),
              (OK, PAGE + b"<!-- v2 -->"), (NOT_MODIFIED, b"")]
    earlier = None
    records = []
    for i, (head, body) in enumerate(visits):
        fields, earlier = _archive(_capture(head, body, T0 + 60.0 * i), earlier, f"<urn:uuid:{i}>")
        records.append(fields)
    kinds = [(r["WARC-Type"], r.get("WARC-Profile", "").rsplit("/", 1)[-1]) for r in records]
    assert kinds == [("response", ""), ("revisit", "server-not-modified"), ("revisit", "server-not-modified"),
                     ("revisit", "identical-payload-digest"), ("response", ""), ("revisit", "server-not-modified")]
    original, changed = records[0], records[4]
    for revisit in records[1:4]:
        assert revisit["WARC-Refers-To"] == original["WARC-Record-ID"] == "<urn:uuid:0>"
        assert revisit["WARC-Refers-To-Date"] == original["WARC-Date"]      # the exact string
        assert revisit["WARC-Payload-Digest"] == original["WARC-Payload-Digest"]
        assert revisit["WARC-Refers-To-Target-URI"] == original["WARC-Target-URI"] == URL
    assert records[5]["WARC-Refers-To"] == changed["WARC-Record-ID"] == "<urn:uuid:4>"
    assert records[5]["WARC-Refers-To-Date"] == changed["WARC-Date"]
    assert records[5]["WARC-Payload-Digest"] == changed["WARC-Payload-Digest"]


def test_the_refers_to_date_is_the_original_s_warc_date_to_the_microsecond() -> None:
    fields, refers = _archive(_capture(OK, PAGE, T0), None, "<urn:uuid:a>")
    assert refers is not None and refers.date == fields["WARC-Date"] == "2025-11-24T16:00:00.123457Z"
    revisit, _ = _archive(_capture(NOT_MODIFIED, at=T0 + 0.5), refers, "<urn:uuid:b>")
    assert revisit["WARC-Refers-To-Date"] == "2025-11-24T16:00:00.123457Z"
    assert revisit["WARC-Date"] != revisit["WARC-Refers-To-Date"]


def test_a_revisit_carries_the_original_s_payload_digest_of_the_same_kind() -> None:
    """Content-coded and chunked: the digest is the entity-body's as the original record has it,
    not the decoded page's; with sha256 it stays sha256."""
    chunked_gz = _head("200 OK", "Content-Type: text/html", "Content-Encoding: gzip", "Transfer-Encoding: chunked")
    for algorithm in DigestAlgorithm:
        original, refers = _archive(_capture(chunked_gz, GZ, framing=BodyFraming.TRANSFER_DECODED),
                                    None, "<urn:uuid:o>", algorithm)
        raw = hashlib.new(algorithm.value, GZ).digest()
        assert original["WARC-Payload-Digest"] == f"{algorithm.value}:{base64.b32encode(raw).decode()}"
        same, _ = _archive(_capture(chunked_gz, GZ, T0 + 1, framing=BodyFraming.TRANSFER_DECODED),
                           refers, "<urn:uuid:s>", algorithm)
        not_modified, _ = _archive(_capture(NOT_MODIFIED, at=T0 + 2), refers, "<urn:uuid:n>", algorithm)
        for revisit in (same, not_modified):
            assert revisit["WARC-Type"] == "revisit"
            assert revisit["WARC-Payload-Digest"] == original["WARC-Payload-Digest"]


def test_nothing_to_refer_to_is_a_response_and_never_becomes_an_original() -> None:
    """A 304 to a first request is the response it is; a capture cut short or a 304 is never referred to."""
    fields, refers = _archive(_capture(NOT_MODIFIED), None, "<urn:uuid:first>")
    assert fields["WARC-Type"] == "response" and refers is None
    _, refers = _archive(_capture(OK, PAGE), None, "<urn:uuid:o>")
    cut, after_cut = _archive(_capture(OK, PAGE[:100], T0 + 1, truncated=Truncation.LENGTH), refers, "<urn:uuid:c>")
    assert cut["WARC-Type"] == "response" and after_cut is None
    failed, after_failure = _archive(_capture(_head("503 Service Unavailable"), b"busy", T0 + 2), refers, "<urn:uuid:f>")
    assert failed["WARC-Type"] == "response" and after_failure == refers   # the page's capture is still the 200's
    assert revisit_profile(_capture(_head("503 Service Unavailable"), b"busy"), refers, refers.payload_digest if refers else None) is None


def test_a_chunked_response_is_stored_dechunked_under_a_head_that_says_so() -> None:
    """Rule 1: the record's HTTP message has a Content-Length over the entity-body, so the payload
    digest a checker recomputes from the record is the one the record states."""
    head = _head("200 OK", "Content-Type: text/html", "Content-Encoding: gzip", "Transfer-Encoding: chunked",
                 "X-Odd:  spaced ")
    record, _ = response_record(_capture(head, GZ, framing=BodyFraming.TRANSFER_DECODED), "<urn:uuid:c>")
    block = record.split(b"\r\n\r\n", 1)[1][: -len(b"\r\n\r\n")]
    http_head, body = block.split(b"\r\n\r\n", 1)
    assert body == GZ                                                     # de-chunked, gzip as sent
    assert http_head.split(b"\r\n") == [
        b"HTTP/1.1 200 OK", b"Content-Type: text/html", b"Content-Encoding: gzip",
        b"X-Crawler-Transfer-Encoding: chunked", b"X-Odd:  spaced ", b"Content-Length: %d" % len(GZ)]
    fields = _fields(record)
    assert fields["WARC-Payload-Digest"] == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    assert fields["WARC-Block-Digest"] == "sha1:" + base64.b32encode(hashlib.sha1(block).digest()).decode()


def test_refers_packs_into_one_opaque_string_and_garbage_unpacks_to_none() -> None:
    r = Refers("<urn:uuid:1>", "2025-11-24T16:00:00.123457Z", "sha1:ABC")
    assert Refers.unpack(r.pack()) == r
    assert Refers.unpack(None) is None and Refers.unpack("") is None and Refers.unpack("a b") is None


def test_the_revisit_schedule_keeps_the_record_a_revisit_refers_to() -> None:
    """Through a visit, the due queue's far tier on disk, and a restart's rows."""
    cfg = RevisitConfig(enabled=True, min_interval=10.0, max_interval=1000.0, initial_interval=10.0, jitter=0.0)
    rc = Recrawl(cfg, random.Random(1))
    packed = Refers("<urn:uuid:1>", "2025-11-24T16:00:00.123457Z", "sha1:ABC").pack()
    rc.visited(URL, "example.com", 0, 0.0, 200, "sha1:X", None, None, capture=packed)
    assert rc.feed(10.0) == [(URL, "example.com", 0)]
    assert rc.capture(URL) == packed
    rc.visited(URL, "example.com", 0, 10.0, 304, None, None, None, capture=packed)
    # The far tier writes records to its store and reads them back.
    q = DueQueue(now=0.0)
    q.attach_far(MemorySpill(), 10.0, 0.0, block=8)
    for i in range(20):
        q.schedule(RevisitState(url=f"{URL}/{i}", host="example.com", due=500.0 + i, interval=10.0,
                                capture=packed if i % 2 else None))
    assert q.far >= 16                       # on disk, but for a tail of less than a block
    q.advance(1000.0)
    back = []
    while (s := q.pop("example.com")) is not None:
        back.append(s)
    assert len(back) == 20 and all(s.capture == (packed if int(s.url.rsplit("/", 1)[1]) % 2 else None) for s in back)
    # A restart: the fetches table's last row of a URL, with the packed record as its last column.
    again = Recrawl(cfg, random.Random(1))
    assert again.restore([(URL, "example.com", 1000.0, 1010.0, 10.0, "sha1:X", None, None, 2, 0, packed)],
                         0.0, 1000.0) == 1
    assert again.queue.get(URL, "example.com").capture == packed


def test_with_warc_on_a_revisit_is_conditional_only_while_the_archive_holds_the_page() -> None:
    """recrawl rule 9: a record handed over by the host's previous owner (without the capture) asks
    for the page whole, so this archive gets a capture a later 304 refers to."""
    cfg = RevisitConfig(enabled=True, min_interval=10.0, max_interval=1000.0, initial_interval=10.0, jitter=0.0)
    packed = Refers("<urn:uuid:1>", "2025-11-24T16:00:00.123457Z", "sha1:ABC").pack()
    wire = (URL, "example.com", 1000.0, 10.0, 990.0, "sha1:X", '"e1"', "", 1, 0, 0)
    for archived, expected in ((False, (("If-None-Match", '"e1"'),)), (True, ())):
        rc = Recrawl(cfg, random.Random(1), archived=archived)
        assert rc.import_records([wire], 1000.0) == 1
        assert rc.feed(0.0) == [(URL, "example.com", 0)]
        assert rc.conditional(URL) == expected
        visit = rc.visited(URL, "example.com", 0, 1.0, 200, "sha1:X", '"e1"', None, capture=packed)
        assert visit.conditional is bool(expected)   # the fetches row says what was sent
        rc.feed(visit.next_due)
        assert rc.conditional(URL) == (("If-None-Match", '"e1"'),)   # the archive has it now
