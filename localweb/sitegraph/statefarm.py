"""State a site keeps of its visitors, on the site graph's pages: validators and a cookie (pure).

Off unless asked (``WebFarm(validators=True, cookies=True)``; ``webfarm.py
--validators --cookies``), so every other test's web is as it was.

- **Validators** (RFC 9110 §8.8.3, §13.1.2): every 200 page gets an
  ``ETag``, a digest of its body, and a GET whose ``If-None-Match`` names it
  is answered ``304 Not Modified`` with no body. The site graph's pages
  never change, so a revisit that sends its validator always gets a 304;
  one that fetches the page as new sends none.
- **A cookie per host** (RFC 6265): a 200 page asked without the host's
  cookie sets it (``farm=<host>``, ``Path=/``). A crawler that keeps
  cookies sends it on every later request of the host, and the request
  log records the ``Cookie`` field it sent, so a test judges by it (a new
  owner of the host that sends it on its first request was handed it).
"""

from __future__ import annotations

import hashlib

from localweb.sitegraph.endpoints import Answer

__all__ = ["COOKIE_NAME", "cookie_of", "etag_of", "keep_state"]

COOKIE_NAME = "farm"


def etag_of(body: bytes) -> str:
    """A strong entity-tag for ``body`` (its SHA-1, cut)."""
    return '"' + hashlib.sha1(body).hexdigest()[:16] + '"'


def cookie_of(host: str) -> str:
    """The ``name=value`` pair ``host`` sets."""
    return f"{COOKIE_NAME}={host}"


def keep_state(answer: Answer, host: str, *, if_none_match: str | None, cookie: str | None,
               validators: bool, cookies: bool) -> Answer:
    """``answer`` (a page of ``host``) with its validator and cookie, or the 304 a match earns."""
    if answer.status != 200 or answer.stream is not None or answer.reset_after >= 0:
        return answer
    headers = answer.headers
    if validators:
        tag = etag_of(answer.body)
        headers += ((b"etag", tag.encode()),)
        if if_none_match is not None and tag in [t.strip() for t in if_none_match.split(",")]:
            return Answer(304, tuple(h for h in headers if h[0] != b"content-type"))
    if cookies and cookie_of(host) not in [p.strip() for p in (cookie or "").split(";")]:
        headers += ((b"set-cookie", f"{cookie_of(host)}; Path=/".encode()),)
    return Answer(answer.status, headers, answer.body)
