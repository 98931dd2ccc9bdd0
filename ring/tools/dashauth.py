"""Who may read the dashboard: its token, the login form and the session cookie (pure).

The dashboard shows the ring's members, addresses, key fingerprints, busy
hosts and its history, read with the operator's key; on a routable address
it needs a token (``python -m ring dashboard --token-file`` or
``--token-env``), and ``ring.tools.cli`` refuses a non-loopback ``--host``
without one. These rules decide each request; ``ring.tools.dashboard``
serves what they say.

1. **Who is let in.** A request carrying ``Authorization: Bearer <token>``
   (RFC 6750 §2.1: curl, a script, a reverse proxy) or the session cookie
   (rule 2). Both are compared in constant time (``hmac.compare_digest``).
2. **A browser logs in once.** Without either, ``/`` answers 401 with a
   form; its POST to ``/login`` with the right token gets a cookie
   (``HttpOnly``, ``SameSite=Strict``: no script reads it and no other
   site's page sends it) and a redirect to ``/``. The cookie holds
   HMAC-SHA256(token, a fixed label), never the token itself, so a cookie
   copied out of a browser cannot be used as the token elsewhere (the
   metrics, another dashboard with another label), and a new token ends
   every session.
3. **Without a token** every request is let in: the dashboard is on
   loopback, where the Host check against DNS rebinding
   (``ring.tools.dashpage.host_allowed``) stands in.
"""

from __future__ import annotations

import hashlib
import hmac
import html
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

__all__ = ["COOKIE", "MAX_LOGIN_BODY", "authorized", "login_token", "matches", "render_login", "session",
           "set_cookie"]

#: The session cookie's name (rule 2).
COOKIE = "ringcrawl_dashboard"
#: A login form's body at most, bytes: a token and a field name.
MAX_LOGIN_BODY = 4096
_LABEL = b"ringcrawl dashboard session v1"


def session(token: str) -> str:
    """The session cookie's value for ``token`` (rule 2)."""
    return hmac.new(token.encode(), _LABEL, hashlib.sha256).hexdigest()


def set_cookie(token: str) -> str:
    """The ``Set-Cookie`` header's value of a login with ``token``."""
    return f"{COOKIE}={session(token)}; Path=/; HttpOnly; SameSite=Strict"


def matches(token: str, given: str) -> bool:
    """Whether ``given`` is ``token``, in constant time (rule 1)."""
    return hmac.compare_digest(given.strip().encode(), token.encode())


def authorized(token: str | None, authorization: str | None, cookie: str | None) -> bool:
    """Rule 1 (and 3): whether a request with these headers may read the dashboard."""
    if not token:
        return True
    if authorization:
        scheme, _, credentials = authorization.strip().partition(" ")
        if scheme.lower() == "bearer" and matches(token, credentials):
            return True
    if cookie:
        try:
            jar = SimpleCookie(cookie)
        except CookieError:
            return False
        morsel = jar.get(COOKIE)
        if morsel is not None and hmac.compare_digest(morsel.value.encode(), session(token).encode()):
            return True
    return False


def login_token(body: bytes) -> str | None:
    """The token a login form posted (``application/x-www-form-urlencoded``), or None."""
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=4)
    except (UnicodeDecodeError, ValueError):
        return None
    got = fields.get("token")
    return got[0] if got else None


def render_login(ring_name: str, failed: bool) -> str:
    """The login page: one field, posted to /login; no script."""
    note = '<p class="bad">That token is not this dashboard\'s.</p>' if failed else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ringcrawl: ring {html.escape(ring_name)}: log in</title>
<link rel="stylesheet" href="/static/dashboard.css">
</head><body>
<h1>ringcrawl dashboard: ring {html.escape(ring_name)}</h1>
<p>This dashboard needs its token (the one given to <code>python -m ring dashboard</code>
with --token-file or --token-env).</p>{note}
<form method="post" action="/login"><label>Token <input type="password" name="token"
autocomplete="current-password" autofocus></label> <button type="submit">Log in</button></form>
</body></html>
"""
