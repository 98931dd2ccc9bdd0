"""The sans-IO HTTP/1.1 response reader (peer/core/http/http1.py), driven synchronously.

The fetcher's tests (tests/edges/test_fetcher.py) check the same refusals against
real sockets; here every framing rule is fed byte by byte and in one piece,
and each case is checked against h11, whose rules the reader keeps.
"""

from __future__ import annotations

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.errors import FetchError
from peer.core.http.http1 import MAX_HEAD, Framing, ResponseReader, request_bytes


def read_all(data: bytes, *, step: int | None = None, eof: bool = True):
    """(head, body, reader) of ``data`` fed whole or ``step`` bytes at a time."""
    r = ResponseReader()
    pieces = [data] if step is None else [data[i:i + step] for i in range(0, len(data), step)]
    pieces = [*pieces, b""] if eof else pieces
    body = []
    head = None
    for piece in pieces:
        r.feed(piece)
        if head is None:
            head = r.head()
            if head is None:
                continue
        while (chunk := r.read()) is not None:
            if not chunk:
                break
            body.append(chunk)
        if r.done:
            break
    return head, b"".join(body), r


def h11_reads(data: bytes) -> tuple[int, bytes] | str:
    """What h11 makes of a response to a GET: (status, body), or "error"."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "h")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    conn.receive_data(b"")
    status, body = None, []
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                body.append(event.data)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)) or event is h11.NEED_DATA:
                break
    except h11.RemoteProtocolError:
        return "error"
    return status, b"".join(body)


def ours(data: bytes) -> tuple[int, bytes] | str:
    try:
        head, body, _ = read_all(data)
    except FetchError:
        return "error"
    return head.status, body


RESPONSES = {
    "length": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n",
    "trailer": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
    "close": b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
    "bare_lf": b"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",
    "fold": b"HTTP/1.1 200 OK\r\nX-A: one\r\n  two\r\nContent-Length: 1\r\n\r\n!",
    "interim": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Hints\r\nLink: </s>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
    "204": b"HTTP/1.1 204 No Content\r\nContent-Length: 99\r\n\r\n",
    "repeat_cl": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3, 3\r\n\r\nabc",
    "te_wins": b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n",
    "c0_value": b"HTTP/1.1 302 Found\r\nLocation: /a\x01b\r\nContent-Length: 0\r\n\r\n",
    "latin1": b"HTTP/1.1 200 \xff\xfe\r\nX: \xe9\r\nContent-Length: 0\r\n\r\n",
    # refused
    "bad_status": b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
    "low_status": b"HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n",
    "not_http": b"ICY 200 OK\r\nContent-Length: 0\r\n\r\n",
    "control_first": b"\x00\xff garbage\r\n\r\n",
    "bad_name": b"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n",
    "nul_value": b"HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 0\r\n\r\n",
    "fold_first": b"HTTP/1.1 200 OK\r\n x: y\r\nContent-Length: 0\r\n\r\n",
    "cl_conflict": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
    "cl_list": b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello",
    "cl_sign": b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
    "cl_long": b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 21 + b"\r\n\r\n",
    "te_gzip": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
    "te_twice": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "chunk_size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "chunk_footer": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
    "chunk_huge": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 21 + b"\r\n",
    "bad_trailer": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n",
}
REFUSED = {"bad_status", "low_status", "not_http", "control_first", "bad_name", "nul_value",
           "fold_first", "cl_conflict", "cl_list", "cl_sign", "cl_long", "te_gzip", "te_twice",
           "chunk_size", "chunk_footer", "chunk_huge", "bad_trailer"}


@pytest.mark.parametrize("name", sorted(RESPONSES))
def test_reads_what_h11_reads_and_refuses_what_it_refuses(name):
    data = RESPONSES[name]
    assert ours(data) == h11_reads(data)
    assert (ours(data) == "error") == (name in REFUSED)


@pytest.mark.parametrize("name", sorted(set(RESPONSES) - REFUSED))
def test_byte_by_byte_is_the_same_as_whole(name):
    data = RESPONSES[name]
    whole = read_all(data)
    drip = read_all(data, step=1)
    assert (whole[0], whole[1]) == (drip[0], drip[1])


def test_the_head_fields():
    head, body, r = read_all(RESPONSES["fold"])
    assert head.fields == [("x-a", "one two"), ("content-length", "1")]
    assert (head.framing, head.length, head.keep_alive, body) == (Framing.LENGTH, 1, True, b"!")
    head, _, _ = read_all(RESPONSES["repeat_cl"])
    assert head.fields == [("content-length", "3")]  # agreeing repeats kept once, as by h11
    head, _, _ = read_all(RESPONSES["latin1"])
    assert head.fields[0] == ("x", "é")  # not UTF-8: the head is Latin-1 (httpx's rule)


@pytest.mark.parametrize(("data", "keep_alive"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", True),
    (b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.1 200 OK\r\n\r\n", False),  # read to the close
])
def test_keep_alive(data, keep_alive):
    r = ResponseReader()
    r.feed(data)
    head = r.head()
    assert head.keep_alive is keep_alive
    while r.read():
        pass
    assert r.reusable is (keep_alive and r.done)


@pytest.mark.parametrize("data", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    b"HTTP/1.1 200 OK\r\nContent-",
    b"",
])
def test_a_close_before_the_end_is_reset(data):
    with pytest.raises(FetchError) as err:
        read_all(data)
    assert err.value.kind == "reset"


def test_a_close_before_the_end_is_not_an_error_when_eof_frames_the_body():
    head, body, r = read_all(RESPONSES["close"])
    assert (head.framing, body, r.done, r.reusable) == (Framing.CLOSE, b"until the end", True, False)


@pytest.mark.parametrize("extra", [b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil", b"x"])
def test_bytes_after_the_end_are_trailing_and_not_reusable(extra):
    head, body, r = read_all(RESPONSES["length"] + extra, eof=False)
    assert (body, r.done, r.trailing, r.reusable) == (b"hello", True, True, False)
    head, body, r = read_all(RESPONSES["204"] + extra, eof=False)
    assert (head.status, body, r.trailing, r.reusable) == (204, b"", True, False)


def test_clean_end_is_reusable():
    _, _, r = read_all(RESPONSES["chunked"], eof=False)
    assert (r.done, r.trailing, r.reusable) == (True, False, True)


def test_head_over_the_cap_is_refused_before_its_end():
    r = ResponseReader(max_head=1000)
    r.feed(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 900)
    assert r.head() is None
    r.feed(b"a" * 200)  # no end of head yet, and over the cap: no waiting for more
    with pytest.raises(FetchError) as err:
        r.head()
    assert err.value.kind == "protocol"


def test_interim_heads_count_toward_the_cap():
    interim = b"HTTP/1.1 100 Continue\r\nX: " + b"a" * 400 + b"\r\n\r\n"
    r = ResponseReader(max_head=1000)
    r.feed(interim * 3 + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    with pytest.raises(FetchError) as err:
        r.head()
    assert err.value.kind == "protocol"


def test_a_chunk_header_over_the_cap_is_refused():
    r = ResponseReader(max_head=1000)
    r.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    r.head()
    r.feed(b"5;" + b"e" * 2000)
    with pytest.raises(FetchError) as err:
        r.read()
    assert err.value.kind == "protocol"


def test_a_whole_body_read_is_not_copied():
    r = ResponseReader()
    r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"a" * 10)
    r.head()
    assert r.read() == b"a" * 10
    piece = b"b" * 65536
    r.feed(piece)
    assert r.read() is piece  # a read of nothing but body is handed on as it is


def test_request_bytes():
    assert request_bytes("/a?b", "h.test:8080", b"User-Agent: x\r\n") == (
        b"GET /a?b HTTP/1.1\r\nHost: h.test:8080\r\nUser-Agent: x\r\n\r\n")
    for target, host in (("/a b", "h"), ("/a\r\nX: y", "h"), ("/", "h\r\nX: y"), ("/", "")):
        with pytest.raises(FetchError) as err:
            request_bytes(target, host, b"")
        assert err.value.kind == "protocol"


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(
    st.binary(max_size=300),
    st.builds(lambda head, body: b"HTTP/1.1 200 OK\r\n" + head + b"\r\n\r\n" + body,
              st.binary(max_size=80), st.binary(max_size=80)),
    st.builds(lambda sizes, tail: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              + b"".join(b"%x\r\n" % n + b"x" * n + b"\r\n" for n in sizes) + tail,
              st.lists(st.integers(0, 20), max_size=4), st.binary(max_size=20)),
), step=st.sampled_from([None, 1, 7]))
def test_any_bytes_give_a_response_or_a_fetch_error(data, step):
    try:
        head, body, r = read_all(data, step=step)
    except FetchError as err:
        assert err.kind in ("protocol", "reset")
        return
    assert head is not None and 100 <= head.status <= 999
    assert not (r.reusable and r.trailing)
