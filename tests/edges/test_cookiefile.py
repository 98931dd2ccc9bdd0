"""peer.state.cookiefile: a peer's cookie jar on disk, read back or reported damaged, never raised.

The jar itself (peer.core.http.cookies) is tested without files in
tests/core/test_cookies.py.
"""

from __future__ import annotations

from peer.core.http.cookies import CookieJar, CookieLimits
from peer.state.cookiefile import COOKIE_FILE, read_cookies, write_cookies

NOW = 1_700_000_000.0
URL = "http://shop.example/cart/view"


def jar(**limits) -> CookieJar:
    return CookieJar(CookieLimits(**limits))


def test_the_jar_file_round_trips_and_a_damaged_one_is_reported_not_raised(tmp_path):
    j = jar()
    j.store(URL, ["a=1", "b=2; Secure"], NOW)  # b refused over http
    write_cookies(tmp_path, "p1", j.records())
    records, problem = read_cookies(tmp_path, "p1")
    assert problem is None and records == [list(r) for r in j.records()]
    assert read_cookies(tmp_path, "p2")[1] is not None  # another peer's jar
    data = (tmp_path / COOKIE_FILE).read_bytes()
    (tmp_path / COOKIE_FILE).write_bytes(data[:-3])
    records, problem = read_cookies(tmp_path, "p1")
    assert records == [] and "damaged" in problem
    assert read_cookies(tmp_path / "none", "p1") == ([], None)
