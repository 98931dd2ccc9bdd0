"""peer.core.http.head: what the crawler reads of a response head, every value checked, never raised.

Pure: a status and header fields in, a frozen ``Head`` out (the reasons of
its module docstring's table named). The fetcher's tests
(tests/edges/test_fetcher.py) send the same malformed heads from a server.
"""

from __future__ import annotations

import email.utils
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.http.head import RETRY_AFTER_MAX, parse_content_type, parse_retry_after, read_head

#: The latest date an HTTP-date can name.
NOW_9999 = b"Fri, 31 Dec 9999 23:59:59 GMT"
#: Every reason a head may name (peer/core/http/head.py's table).
REASONS = {"status", "retry_after", "content_length", "content_type", "charset", "location",
           "content_encoding", "excess", "x_robots_tag", "link"}
MEDIA = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]{1,127}/[!#$%&'*+.^_`|~0-9a-z-]{1,127}")


@pytest.mark.parametrize(("value", "expected"), [
    (None, ("", None)),
    ("", ("", None)),
    ("text/html", ("text/html", None)),
    ("Text/HTML; Charset=UTF-8", ("text/html", "utf-8")),
    ('text/html; foo=bar; charset="ISO-8859-1"', ("text/html", "iso-8859-1")),
    ("application/xhtml+xml;charset=", ("application/xhtml+xml", None)),
])
def test_parse_content_type(value, expected):
    assert parse_content_type(value) == expected


def test_parse_retry_after():
    now = 1_700_000_000.0
    assert parse_retry_after("120", now) == 120.0
    assert parse_retry_after(" 0 ", now) == 0.0
    assert parse_retry_after(email.utils.formatdate(now + 90, usegmt=True), now) == 90.0
    assert parse_retry_after(email.utils.formatdate(now - 90, usegmt=True), now) == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == 0.0
    for junk in (None, "", "soon", "-5", "1.5"):
        assert parse_retry_after(junk, now) is None


@pytest.mark.parametrize(("value", "expected"), [
    ("x" * 300, ("", None)),
    ("text/html; charset=utf-8; " + ";" * 10_000, ("text/html", "utf-8")),
    ("text/html; charset=ütf-8", ("text/html", None)),
    ("text/html; charset=klingon", ("text/html", "klingon")),
])
def test_parse_content_type_is_total(value, expected):
    assert parse_content_type(value) == expected


def test_parse_retry_after_is_total():
    now = 1_700_000_000.0
    assert parse_retry_after("²", now) is None
    assert parse_retry_after("٣", now) is None  # an Arabic-Indic digit
    assert parse_retry_after("9" * 400, now) == RETRY_AFTER_MAX
    assert parse_retry_after("9" * 5000, now) == RETRY_AFTER_MAX
    assert parse_retry_after(NOW_9999.decode(), now) == RETRY_AFTER_MAX
    assert parse_retry_after("1, 2", now) is None
    assert parse_retry_after("Fri, 31 Dec 99999 23:59:59 GMT", now) is None
    assert parse_retry_after("0123", now) == 123.0


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.text(max_size=80), st.from_regex(
    r"\A[A-Za-z]{3}, [0-9]{1,3} [A-Za-z]{3} [0-9]{1,6} [0-9]{1,2}:[0-9]{2}:[0-9]{2} [A-Z+0-9-]{1,5}\Z")))
def test_parse_retry_after_never_raises(value):
    seconds = parse_retry_after(value, 1_700_000_000.0)
    assert seconds is None or 0.0 <= seconds <= RETRY_AFTER_MAX


@settings(max_examples=200, deadline=None)
@given(status=st.integers(0, 999), fields=st.lists(st.tuples(
    st.sampled_from(["content-type", "location", "retry-after", "content-length",
                     "content-encoding", "transfer-encoding", "x-other", "x-robots-tag", "link"]),
    st.text(max_size=60)), max_size=8))
def test_read_head_never_raises(status, fields):
    head = read_head(status, fields, 1_700_000_000.0)
    # The code as sent; one outside 100-599 is named, and handled as a 5xx.
    assert head.status == status and ("status" in head.reasons) is not (100 <= status <= 599)
    assert head.length is None or head.length >= 0
    assert set(head.reasons) <= REASONS
    assert head.content_type == "" or MEDIA.fullmatch(head.content_type)
