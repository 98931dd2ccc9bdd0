"""peer.core.http.inflate: each content coding decoded with a bounded output (its module docstring's rules).

An interpreter without brotli or zstd is tested in tests/edges/test_codings.py.
"""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import brotli
import pytest

from peer.core.http import inflate
from peer.core.http.inflate import MAX_WINDOW, accept_encoding, decoder
from peer.errors import FetchError

try:
    from compression import zstd  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    from backports import zstd  # type: ignore[no-redef, unused-ignore]

HTML = b"".join(b"<li><a href='/page/%d'>page %d</a></li>\n" % (i, i) for i in range(3000))
MiB = 1 << 20


def _zstd(data: bytes, window_log: int | None = None) -> bytes:
    """A zstd frame without a content size (as a streaming server sends one)."""
    options = {zstd.CompressionParameter.window_log: window_log} if window_log else None
    c = zstd.ZstdCompressor(options=options)
    return c.compress(data) + c.flush()


ENCODE = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": _zstd,
}


def bomb(coding: str, size: int) -> bytes:
    """``size`` zero bytes, encoded a MiB at a time (never held whole)."""
    zeros = bytes(MiB)
    if coding == "gzip":
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(z.compress(zeros) for _ in range(size // MiB)) + z.flush()
    if coding == "br":
        b = brotli.Compressor(quality=5)
        return b"".join(b.process(zeros) for _ in range(size // MiB)) + b.finish()
    c = zstd.ZstdCompressor(level=3)
    return b"".join(c.compress(zeros) for _ in range(size // MiB)) + c.flush()


def drain(d, data: bytes, limit: int, step: int = 64 * 1024) -> tuple[bytes, bool]:
    """What the fetcher does: feed ``step`` bytes at a time asking for room + 1; (body, over)."""
    parts: list[bytes] = []
    size = 0
    for i in range(0, len(data), step):
        out = d.feed(data[i:i + step], limit - size + 1)
        assert len(out) <= limit - size + 1
        parts.append(out)
        size += len(out)
        if size > limit:
            return b"".join(parts), True
    return b"".join(parts), False


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_round_trip_whole_and_a_byte_at_a_time(coding):
    data = ENCODE[coding](HTML)
    assert decoder((coding,)).feed(data, len(HTML) + 1) == HTML
    d = decoder((coding,))
    assert b"".join(d.feed(data[i:i + 1], len(HTML) + 1) for i in range(len(data))) == HTML


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_output_bound_is_exact(coding):
    data = ENCODE[coding](HTML)
    for limit in (len(HTML) - 1, len(HTML), len(HTML) + 1, 1, 1000):
        body, over = drain(decoder((coding,)), data, limit)
        assert over == (len(HTML) > limit)
        assert body == HTML[:limit + 1]
    # What is not asked for stays inside: asked again, it comes out.
    d = decoder((coding,))
    parts = [d.feed(data, 1000)]
    while out := d.feed(b"", 1000):
        assert len(out) <= 1000
        parts.append(out)
    assert b"".join(parts) == HTML


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
def test_a_bomb_stays_bounded_in_output_and_memory(coding):
    # 32 MiB of zeros is 16 times the limit, and the whole bomb fits in one
    # 64 KiB feed: a decoder that inflated a feed unbounded would hold all 32
    # MiB at once, four times the peak allowed below. A 256 MiB bomb failed
    # the same decoders and took 1.4 s of compression to build.
    data = bomb(coding, 32 * MiB)
    assert len(data) < 64 * 1024
    limit = 2 * MiB
    tracemalloc.start()
    try:
        body, over = drain(decoder((coding,)), data, limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert over and len(body) == limit + 1
    # The body itself plus a few of its parts: never the 256 MiB.
    assert peak < 3 * limit + MiB, peak


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_corrupt_stream_is_decode(coding):
    data = ENCODE[coding](HTML)
    bad = data[:8] + bytes(b ^ 0x5A for b in data[8:])
    with pytest.raises(FetchError) as caught:
        drain(decoder((coding,)), bad, 10 * len(HTML))
    assert caught.value.kind == "decode"


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_trailing_bytes_after_a_zlib_stream_are_ignored(coding):
    d = decoder((coding,))
    assert d.feed(ENCODE[coding](HTML) + b"\x00junk", len(HTML) + 1) == HTML


@pytest.mark.parametrize("coding", ["br", "zstd"])
def test_trailing_junk_after_a_br_or_zstd_stream_is_decode(coding):
    with pytest.raises(FetchError) as caught:
        drain(decoder((coding,)), ENCODE[coding](HTML) + b"\x00junk", 10 * len(HTML))
    assert caught.value.kind == "decode"


def test_zstd_frames_are_read_one_after_another():
    data = _zstd(HTML[:1000]) + _zstd(HTML[1000:])
    body, over = drain(decoder(("zstd",)), data, len(HTML), step=100)
    assert (body, over) == (HTML, False)


def test_a_zstd_window_over_the_cap_is_refused():
    # 16 MiB of text a 64 MiB window apart: a frame that asks for 64 MiB.
    data = _zstd(HTML * 10, window_log=26)
    with pytest.raises(FetchError) as caught:
        decoder(("zstd",)).feed(data, 10 * len(HTML))
    assert caught.value.kind == "decode"
    assert "zstd frame's window is over 8,388,608 bytes" in str(caught.value)
    # The same frame decodes under a cap that allows it, and 8 MiB is the default.
    assert decoder(("zstd",), max_window=64 * MiB).feed(data, 10 * len(HTML) + 1) == HTML * 10
    assert MAX_WINDOW == 8 * MiB
    assert decoder(("zstd",)).feed(_zstd(HTML, window_log=23), len(HTML) + 1) == HTML


@pytest.mark.parametrize("codings", [("br", "gzip"), ("gzip", "zstd"), ("zstd", "br"),
                                     ("gzip", "gzip"), ("deflate", "br", "gzip")])
def test_stacked_codings_are_decoded_last_first(codings):
    data = HTML
    for c in codings:  # RFC 9110 §8.4: listed in the order applied
        data = ENCODE[c](data)
    body, over = drain(decoder(codings), data, len(HTML), step=7)
    assert (body, over) == (HTML, False)
    body, over = drain(decoder(codings), data, 1000, step=7)
    assert over and body == HTML[:1001]


def test_a_stacked_bomb_stays_bounded():
    # br's 64 MiB bomb, gzipped: 16 times the peak allowed below if either
    # stage inflated unbounded (1 GiB failed the same decoders in 1.2 s more).
    data = gzip.compress(bomb("br", 64 * MiB))
    tracemalloc.start()
    try:
        body, over = drain(decoder(("br", "gzip")), data, MiB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert over and len(body) == MiB + 1
    assert peak < 4 * MiB, peak


def test_an_inner_stream_over_max_stream_is_too_large():
    # A gzip stream of empty stored blocks decodes to nothing, at any length:
    # gzipped again, a few KiB on the wire are MiBs of work for the inner stage.
    empty_blocks = b"\x00\x00\x00\xff\xff" * (1 << 20)
    inner = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + empty_blocks
    data = gzip.compress(inner)
    with pytest.raises(FetchError) as caught:
        drain(decoder(("gzip", "gzip"), max_stream=MiB), data, MiB)
    assert caught.value.kind == "too_large"


@pytest.mark.parametrize("codings", [("compress",), ("gzip",) * 4, ("br", "x-garbage")])
def test_codings_we_cannot_decode_are_decode(codings):
    with pytest.raises(FetchError) as caught:
        decoder(codings)
    assert caught.value.kind == "decode"


def test_identity_is_no_decoder_and_x_gzip_is_gzip():
    assert decoder(()) is None
    assert decoder(("x-gzip",)).feed(gzip.compress(HTML), len(HTML) + 1) == HTML


def test_accept_encoding_lists_what_can_be_decoded(monkeypatch):
    assert accept_encoding() == "gzip, deflate, br, zstd"
    assert accept_encoding(("zstd", "gzip")) == "gzip, zstd"
    # A library missing at run time: its coding is not asked for, nor decoded.
    monkeypatch.setattr(inflate, "AVAILABLE", ("gzip", "deflate", "zstd"))
    assert accept_encoding() == "gzip, deflate, zstd"
    with pytest.raises(FetchError):
        decoder(("br",))
