"""WARC files and their CDXJ indexes, judged by other tools: warcio reads them, cdxj-indexer indexes them.

The records are peer.core.warc.record's, the writer and its files peer.results.warc's.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import trio
from warcio.archiveiterator import ArchiveIterator

from peer.core.warc.record import (
    BodyFraming,
    Capture,
    DigestAlgorithm,
    Refers,
    RevisitProfile,
    Truncation,
    dechunk,
)
from peer.errors import StateError
from peer.results.cdxj import merge_cdxj, read_cdxj
from peer.results.warc import Fetched, OverMaxBody, Revisited, WarcConfig, WarcWriter, gzip_member, recover

T0 = 1_764_000_000.0
ORIGINAL = "<urn:uuid:00000000-0000-4000-8000-000000000000>"
REQUEST = b"GET %s HTTP/1.1\r\nHost: example.com\r\nAccept-Encoding: gzip\r\nUser-Agent: ringcrawl\r\n\r\n"
HTML = b"<html><head><title>t</title></head><body>" + b"<p>hello world</p>" * 50 + b"</body></html>"


def _sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def _head(status: str, *fields: str) -> bytes:
    return ("\r\n".join([f"HTTP/1.1 {status}", *fields]) + "\r\n\r\n").encode()


def _chunked(data: bytes, size: int = 100) -> bytes:
    parts = [b"%x\r\n%b\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def _captures() -> list[tuple[str, Fetched | Revisited, bytes]]:
    """(name, item, the payload a reader must get after de-chunking, content-coding kept)."""
    gz = gzip.compress(HTML, mtime=0)
    items: list[tuple[str, Fetched | Revisited, bytes]] = []

    def cap(path: str, head: bytes, body: bytes, **kw: object) -> Capture:
        return Capture(f"http://example.com{path}", T0 + len(items), REQUEST % path.encode(), head, body, "192.0.2.7", **kw)  # type: ignore[arg-type]

    items.append(("gzip", Fetched(cap("/gz", _head("200 OK", "Content-Type: text/html; charset=utf-8", "Content-Encoding: gzip", f"Content-Length: {len(gz)}"), gz)), gz))
    items.append(("chunked", Fetched(cap("/chunked", _head("200 OK", "Content-Type: text/html", "Transfer-Encoding: chunked"), _chunked(HTML))), HTML))
    items.append(("dechunked", Fetched(cap("/dechunked", _head("200 OK", "Content-Type: text/html", "Transfer-Encoding: chunked"), HTML, framing=BodyFraming.TRANSFER_DECODED)), HTML))
    items.append(("truncated", Fetched(cap("/big", _head("200 OK", "Content-Type: application/octet-stream", "Content-Length: 999999"), b"x" * 1000, truncated=Truncation.LENGTH)), b"x" * 1000))
    items.append(("304", Revisited(cap("/gz", _head("304 Not Modified", 'ETag: "abc"'), b""), RevisitProfile.SERVER_NOT_MODIFIED, Refers(ORIGINAL, "2025-11-24T16:00:00.000000Z", _sha1(gz))), b""))
    items.append(("identical", Revisited(cap("/chunked", _head("200 OK", "Content-Type: text/html", "Transfer-Encoding: chunked"), HTML, framing=BodyFraming.TRANSFER_DECODED), RevisitProfile.IDENTICAL_PAYLOAD, Refers(ORIGINAL, "2025-11-24T16:00:01.000000Z", _sha1(HTML))), b""))
    items.append(("hostile", Fetched(cap("/x\r\nWARC-Type: evil é", _head("200 OK", "Content-Type: text/plain", "X-Bad: \xff\x01", "Content-Length: 2"), b"ok")), b"ok"))
    return items


def _write(directory: Path, items: list[Fetched | Revisited], **config: object) -> WarcWriter:
    writer = WarcWriter(WarcConfig(enabled=True, **config), directory, "peer-1:7000", {"hostname": "host.test"})  # type: ignore[arg-type]
    for item in items:
        writer.put_blocking(item)
    writer.close()
    return writer


def _records(path: Path) -> list:
    """Every record of ``path`` read by warcio: (record, its whole block, what follows the HTTP head, problems).

    Read twice: parsed, with warcio checking the digests, and unparsed, for
    the block's bytes as stored.
    """
    with open(path, "rb") as f:
        blocks = [record.raw_stream.read() for record in ArchiveIterator(f, no_record_parse=True)]
    out = []
    with open(path, "rb") as f:
        for record, block in zip(ArchiveIterator(f, check_digests=True), blocks, strict=True):
            rest = record.raw_stream.read()
            out.append((record, block, rest, list(record.digest_checker.problems)))
    return out


def test_records_read_back_by_warcio_with_their_digests(tmp_path: Path) -> None:
    cases = _captures()
    writer = _write(tmp_path, [item for _, item, _ in cases])
    [path] = [Path(p) for p in writer.stats.closed_files]
    records = _records(path)
    kinds = [r.rec_type for r, *_ in records]
    assert kinds == (["warcinfo"] + ["response", "request"] * 4 + ["revisit", "request", "metadata"]
                     + ["revisit", "request"] + ["response", "request"])
    # The 304 as received, beside its revisit: a metadata record replay indexes leave out.
    [(meta, meta_block, _, meta_problems)] = [r for r in records if r[0].rec_type == "metadata"]
    assert meta.rec_headers.get_header("Content-Type") == "application/warc-fields" and meta_problems == []
    assert meta.rec_headers.get_header("WARC-Concurrent-To") == records[9][0].rec_headers.get_header("WARC-Record-ID")
    assert meta_block == b'http-status-line: HTTP/1.1 304 Not Modified\r\nhttp-header: ETag: "abc"\r\n'
    records = [r for r in records if r[0].rec_type != "metadata"]
    info = records[0][1].decode()
    assert "format: WARC File Format 1.1" in info and "hostname: host.test" in info and "peer: peer-1:7000" in info
    mains = records[1::2]
    requests = records[2::2]
    for (name, item, payload), (main, block, raw, problems), (request, request_block, _, request_problems) in zip(cases, mains, requests, strict=True):
        capture = item.capture
        headers = main.rec_headers
        assert headers.get_header("WARC-Date").startswith("2025-11-24T")
        assert headers.get_header("WARC-IP-Address") == "192.0.2.7"
        assert request.rec_headers.get_header("WARC-Concurrent-To") == headers.get_header("WARC-Record-ID")
        assert request.rec_headers.get_header("WARC-Target-URI") == headers.get_header("WARC-Target-URI")
        assert request_block == capture.request and request_problems == []
        assert headers.get_header("WARC-Warcinfo-ID") == records[0][0].rec_headers.get_header("WARC-Record-ID")
        # The block digest covers the whole block: head as received (a chunked answer's
        # framing lines renamed, record.py rule 1), then the body.
        if name in ("chunked", "dechunked", "identical"):
            adjusted = capture.response_head.replace(b"Transfer-Encoding", b"X-Crawler-Transfer-Encoding")
            assert block == adjusted[:-2] + b"Content-Length: %d\r\n\r\n" % len(HTML) + raw, name
        elif name != "304":
            assert block == capture.response_head + raw, name  # the head byte for byte as received
        assert headers.get_header("WARC-Block-Digest") == _sha1(block), name
        if name == "hostile":
            assert headers.get_header("WARC-Target-URI") == "http://example.com/x%0D%0AWARC-Type:%20evil%20%C3%A9"
            assert main.rec_type == "response"
            continue
        assert headers.get_header("WARC-Target-URI") == capture.target_uri
        if name == "304":
            assert headers.get_header("WARC-Profile") == RevisitProfile.SERVER_NOT_MODIFIED.value
            assert block == b""  # no block (§6.7.3): a replay takes the original's status and headers
            assert headers.get_header("WARC-Refers-To-Target-URI") == "http://example.com/gz"
            assert headers.get_header("WARC-Refers-To-Date") == "2025-11-24T16:00:00.000000Z"
            assert headers.get_header("WARC-Refers-To") == ORIGINAL
            assert headers.get_header("WARC-Payload-Digest") == _sha1(gzip.compress(HTML, mtime=0))
            assert main.http_headers is None  # warcio reads it as an empty revisit
            continue
        if name == "identical":
            assert headers.get_header("WARC-Profile") == RevisitProfile.IDENTICAL_PAYLOAD.value
            assert headers.get_header("WARC-Payload-Digest") == _sha1(HTML)
            assert headers.get_header("WARC-Refers-To") == ORIGINAL
            assert headers.get_header("WARC-Refers-To-Date") == "2025-11-24T16:00:01.000000Z"
            assert raw == b""  # the block is the head alone
            continue
        # The payload is the entity-body: transfer-coding removed, content-coding kept.
        assert headers.get_header("WARC-Payload-Digest") == _sha1(payload), name
        assert problems == [], (name, problems)  # warcio recomputes both digests, chunked ones too
        if name in ("chunked", "dechunked"):
            assert raw == HTML  # de-chunked under a Content-Length (record.py rule 1)
        if name == "truncated":
            assert headers.get_header("WARC-Truncated") == "length"
    # What a replay reads: warcio de-chunks and inflates the bodies.
    with open(path, "rb") as f:
        bodies = {r.rec_headers.get_header("WARC-Target-URI"): r.content_stream().read() for r in ArchiveIterator(f) if r.rec_type == "response"}
    assert bodies["http://example.com/gz"] == HTML
    assert bodies["http://example.com/chunked"] == HTML
    assert bodies["http://example.com/dechunked"] == HTML


def test_warcio_check_passes_every_record_chunked_ones_included(tmp_path: Path) -> None:
    """``warcio check``, an archivist's first check, over chunked answers as the fetcher hands
    them over (de-chunked) and as received (still chunked), a cut one, revisits and gzip."""
    cases = _captures()
    cut = Capture("http://example.com/cut", T0, REQUEST % b"/cut", _head("200 OK", "Transfer-Encoding: chunked"),
                  _chunked(HTML)[:700], "192.0.2.7", truncated=Truncation.DISCONNECT)
    writer = _write(tmp_path, [item for _, item, _ in cases] + [Fetched(cut)])
    [path] = [Path(p) for p in writer.stats.closed_files]
    cli = Path(sys.executable).with_name("warcio")
    done = subprocess.run([str(cli), "check", "-v", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("digest pass") >= 2 * len(cases), done.stdout
    assert "fail" not in done.stdout, done.stdout


def test_every_index_line_resolves_to_its_record(tmp_path: Path) -> None:
    cases = _captures()
    writer = _write(tmp_path, [item for _, item, _ in cases])
    [path] = [Path(p) for p in writer.stats.closed_files]
    index = path.with_name(path.name.replace(".warc.gz", ".cdxj"))
    lines = list(read_cdxj(index))
    assert lines == sorted(lines) and len(lines) == len(cases)
    data = path.read_bytes()
    seen = set()
    for line in lines:
        key, stamp, blob = line.split(" ", 2)
        fields = json.loads(blob)
        assert fields["filename"] == path.name and len(stamp) == 14
        member = data[int(fields["offset"]) : int(fields["offset"]) + int(fields["length"])]
        [record] = list(ArchiveIterator(io.BytesIO(member)))
        assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
        assert record.rec_type == ("revisit" if fields["mime"] == "warc/revisit" else "response")
        assert record.rec_headers.get_header("WARC-Payload-Digest") == fields.get("digest")
        seen.add((fields["url"], stamp))
    assert len(seen) == len(cases)
    assert lines[0].startswith("com,example)/big ")


def _reference_index(path: Path) -> list[str]:
    """cdxj-indexer's own index of ``path``: the CDX tool pywb's collections are built with."""
    cli = Path(sys.executable).with_name("cdxj-indexer")
    out = subprocess.run([str(cli), "--sort", str(path)], capture_output=True, text=True, timeout=60, check=True).stdout
    return [line + "\n" for line in out.splitlines() if line and not line.startswith("!")]


def test_index_equals_cdxj_indexers(tmp_path: Path) -> None:
    cases = _captures()
    writer = _write(tmp_path, [item for _, item, _ in cases])
    [path] = [Path(p) for p in writer.stats.closed_files]
    ours = list(read_cdxj(path.with_name(path.name.replace(".warc.gz", ".cdxj"))))
    assert ours == _reference_index(path)


def _random_items(count: int, size: int, seed: int = 1) -> list[Fetched | Revisited]:
    rng = random.Random(seed)
    items: list[Fetched | Revisited] = []
    for i in range(count):
        body = rng.randbytes(size)  # incompressible: sizes on disk are predictable
        head = _head("200 OK", "Content-Type: application/octet-stream", f"Content-Length: {size}")
        url = f"http://h{i % 7}.example/p/{i}"
        items.append(Fetched(Capture(url, T0 + i, REQUEST % f"/p/{i}".encode(), head, body, "192.0.2.1")))
    return items


def test_files_rotate_before_the_size(tmp_path: Path) -> None:
    items = _random_items(60, 1500)
    cap = 16_384
    writer = _write(tmp_path, items, max_file_bytes=cap)
    files = sorted(Path(p) for p in writer.stats.closed_files)
    assert len(files) >= 4 and writer.stats.files == len(files)
    urls = []
    for path in files:
        assert path.stat().st_size <= cap
        assert path.name.startswith("ringcrawl-peer_1_7000-")  # "-" separates the name's parts and path.name.endswith(".warc.gz")
        records = _records(path)
        assert records[0][0].rec_type == "warcinfo"
        assert all(problems == [] for *_, problems in records)
        info_id = records[0][0].rec_headers.get_header("WARC-Record-ID")
        assert {r.rec_headers.get_header("WARC-Warcinfo-ID") for r, *_ in records[1:]} == {info_id}
        urls += [r.rec_headers.get_header("WARC-Target-URI") for r, *_ in records if r.rec_type == "response"]
        assert len(list(read_cdxj(path.with_name(path.name.replace(".warc.gz", ".cdxj"))))) == len(records) // 2
    assert urls == [item.capture.target_uri for item in items]
    assert [p.name.rsplit("-", 1)[1] for p in files] == [f"{i:05d}.warc.gz" for i in range(len(files))]
    assert not list(tmp_path.glob("*.open"))


def test_a_record_bigger_than_a_file_gets_a_file_of_its_own(tmp_path: Path) -> None:
    items = _random_items(3, 10_000)
    writer = _write(tmp_path, items, max_file_bytes=8192)
    assert len(writer.stats.closed_files) == 3


def test_over_max_body_skip_writes_no_cut_body(tmp_path: Path) -> None:
    cases = _captures()
    writer = _write(tmp_path, [item for _, item, _ in cases], over_max_body=OverMaxBody.SKIP)
    [path] = [Path(p) for p in writer.stats.closed_files]
    urls = [r.rec_headers.get_header("WARC-Target-URI") for r, *_ in _records(path)]
    assert "http://example.com/big" not in urls and writer.stats.skipped_truncated == 1


def test_sha256_digests(tmp_path: Path) -> None:
    writer = _write(tmp_path, _random_items(3, 100), digest=DigestAlgorithm.SHA256)
    [path] = [Path(p) for p in writer.stats.closed_files]
    records = _records(path)
    assert all(problems == [] for *_, problems in records)
    assert records[1][0].rec_headers.get_header("WARC-Payload-Digest").startswith("sha256:")


def test_merge_of_peers_indexes_is_sorted_and_whole(tmp_path: Path) -> None:
    indexes = []
    for peer, seed in (("a", 1), ("b", 2)):
        writer = WarcWriter(WarcConfig(enabled=True, max_file_bytes=8192), tmp_path / peer, peer)
        for item in _random_items(20, 800, seed):
            writer.put_blocking(item)
        writer.close()
        indexes += sorted((tmp_path / peer).glob("*.cdxj"))
    assert len(indexes) > 2
    total = sum(len(list(read_cdxj(p))) for p in indexes)
    count = merge_cdxj(indexes + indexes[:1], tmp_path / "all.cdxj")  # one file twice: kept once
    merged = list(read_cdxj(tmp_path / "all.cdxj"))
    assert count == total == len(merged) == 40
    assert merged == sorted(merged)


def _mixed_items(count: int, seed: int = 3) -> list[Fetched | Revisited]:
    """Bodies from 10 bytes to 60 KB, random and repetitive: their compressions take very
    different times, so threads finish them out of order."""
    rng = random.Random(seed)
    items: list[Fetched | Revisited] = []
    for i in range(count):
        size = rng.choice((10, 500, 8_000, 60_000))
        body = rng.randbytes(size) if i % 2 else HTML * (size // len(HTML) + 1)
        head = _head("200 OK", "Content-Type: text/html", f"Content-Length: {len(body)}")
        items.append(Fetched(Capture(f"http://m{i % 5}.example/{i}", T0 + i, REQUEST % f"/{i}".encode(), head, body, "192.0.2.2")))
    return items


def test_compressing_threads_write_every_item_whole_and_in_order(tmp_path: Path) -> None:
    items = _mixed_items(240)
    writer = _write(tmp_path, items, compress_threads=4, queue_items=16, max_file_bytes=200_000)
    files = sorted(Path(p) for p in writer.stats.closed_files)
    assert len(files) >= 3  # rotations while other items were being compressed for the file before
    urls = []
    for path in files:
        records = _records(path)
        assert all(problems == [] for *_, problems in records)
        info_id = records[0][0].rec_headers.get_header("WARC-Record-ID")
        assert {r.rec_headers.get_header("WARC-Warcinfo-ID") for r, *_ in records[1:]} == {info_id}
        kinds = [r.rec_type for r, *_ in records[1:]]
        assert kinds == ["response", "request"] * (len(kinds) // 2)  # each item's pair together
        urls += [r.rec_headers.get_header("WARC-Target-URI") for r, *_ in records if r.rec_type == "response"]
        assert list(read_cdxj(path.with_name(path.name.replace(".warc.gz", ".cdxj")))) == _reference_index(path)
    assert urls == [item.capture.target_uri for item in items]
    assert writer.stats.items == 240


@pytest.mark.parametrize("level", range(10))
def test_every_level_is_one_gzip_member_any_reader_reads(level: int) -> None:
    record = b"WARC/1.1\r\n" + HTML * 40
    member = gzip_member(record, level)
    assert gzip.decompress(member) == record and member[:2] == b"\x1f\x8b"
    assert (len(member) > len(record)) == (level == 0)  # 0 stores; every other level compresses


async def test_put_waits_on_a_full_queue_and_loses_nothing(tmp_path: Path) -> None:
    writer = WarcWriter(WarcConfig(enabled=True, queue_items=1), tmp_path, "p")
    items = _random_items(50, 300)
    for item in items:
        await writer.put(item)
    await writer.aclose()
    assert writer.stats.items == 50
    [path] = [Path(p) for p in writer.stats.closed_files]
    assert sum(1 for r, *_ in _records(path) if r.rec_type == "response") == 50


def test_a_disk_error_reaches_the_crawl_as_state_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import peer.results.warc as warc

    def full(*args: object, **kw: object) -> bytes:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(warc, "gzip_member", full)
    writer = WarcWriter(WarcConfig(enabled=True), tmp_path, "p")
    writer.put_blocking(_random_items(1, 10)[0])
    with pytest.raises(StateError, match="No space left"):
        writer.close()


def test_config_refuses_what_cannot_work() -> None:
    with pytest.raises(ValueError, match="max_file_bytes"):
        WarcConfig(max_file_bytes=10)
    with pytest.raises(ValueError, match="prefix"):
        WarcConfig(prefix="a/b")
    assert WarcConfig().enabled is False and WarcConfig().max_file_bytes == 1_000_000_000
    with pytest.raises(ValueError, match="compress_threads"):
        WarcConfig(compress_threads=0)


# ---------------------------------------------------------------- crashes


def test_recover_cuts_a_torn_record_and_keeps_the_rest(tmp_path: Path) -> None:
    writer = _write(tmp_path, _random_items(10, 700))
    [path] = [Path(p) for p in writer.stats.closed_files]
    index = path.with_name(path.name.replace(".warc.gz", ".cdxj"))
    lines = list(read_cdxj(index))
    last = max(int(json.loads(line.split(" ", 2)[2])["offset"]) for line in lines)
    data = path.read_bytes()
    torn = tmp_path / (path.name + ".open")
    torn.write_bytes(data[: last + 100])  # the last response cut mid-member
    path.unlink()
    index.unlink()
    [done] = recover(tmp_path)
    assert done.path == path and done.records == 1 + 2 * 9 and done.dropped_bytes == 100
    assert path.stat().st_size == last
    records = _records(path)
    assert len(records) == 19 and all(problems == [] for *_, problems in records)
    assert list(read_cdxj(index)) == [line for line in lines if f'"offset": "{last}"' not in line]


def test_recover_removes_a_file_with_no_whole_record(tmp_path: Path) -> None:
    (tmp_path / "x-p-20251124000000000-00000.warc.gz.open").write_bytes(gzip.compress(b"WARC/1.1\r\n")[:10])
    [done] = recover(tmp_path)
    assert done.records == 0 and not list(tmp_path.iterdir())


CHILD = textwrap.dedent(
    """
    import random, sys, time
    from peer.core.warc.record import Capture
    from peer.results.warc import Fetched, WarcConfig, WarcWriter
    writer = WarcWriter(WarcConfig(enabled=True, fsync_records=8), sys.argv[1], "victim")
    rng = random.Random(5)
    head = b"HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n"
    i = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # killed long before
        body = rng.randbytes(rng.randrange(100, 30000))
        chunked = b"%x\\r\\n%b\\r\\n0\\r\\n\\r\\n" % (len(body), body)
        writer.put_blocking(Fetched(Capture(f"http://v.example/{i}", 1.7e9 + i, b"GET / HTTP/1.1\\r\\n\\r\\n", head, chunked)))
        i += 1
    """
)


def test_kill_9_mid_stream_leaves_files_a_reader_reads(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], env=env)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            opened = list(tmp_path.glob("*.open"))
            if opened and opened[0].stat().st_size > 2_000_000:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the writer wrote nothing in 30 s")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    [done] = recover(tmp_path)
    assert done.records > 10 and not list(tmp_path.glob("*.open"))
    records = _records(done.path)
    assert len(records) == done.records
    responses = [r for r, *_ in records if r.rec_type == "response"]
    # Every record whole: block digests pass; payload digests are the de-chunked body's.
    for (record, _, raw, problems) in records:
        assert not [p for p in problems if p.startswith("block")], problems
        if record.rec_type == "response":
            assert record.rec_headers.get_header("WARC-Payload-Digest") == _sha1(dechunk(raw))
    assert [r.rec_headers.get_header("WARC-Target-URI") for r in responses] == [f"http://v.example/{i}" for i in range(len(responses))]
    index = done.path.with_name(done.path.name.replace(".warc.gz", ".cdxj"))
    assert list(read_cdxj(index)) == _reference_index(done.path)


# ---------------------------------------------------------------- the pure builder


@pytest.mark.parametrize(
    ("body", "payload"),
    [
        (b"3\r\nabc\r\n0\r\n\r\n", b"abc"),
        (b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n", b"abcde"),
        (b"3\r\nabc\r\nzz\r\nrest", b"abczz\r\nrest"),  # malformed: the rest as it is
        (b"10\r\nabc", b"abc"),  # cut inside a chunk
        (b"", b""),
        (b"not chunked at all", b"not chunked at all"),
    ],
)
def test_dechunk_never_raises(body: bytes, payload: bytes) -> None:
    assert dechunk(body) == payload


def test_put_after_close_is_refused(tmp_path: Path) -> None:
    writer = _write(tmp_path, _random_items(1, 10))
    with pytest.raises(RuntimeError, match="after close"):
        writer.put_blocking(_random_items(1, 10)[0])
