"""The exceptions of the ``peer`` package, split by whose fault it is.

::

    PeerError                      base of everything peer raises on purpose
    ├── ConfigError                the user's cluster.toml is wrong (file, key, expectation)
    │   └── LiveSettingError       a live setting (``ring set``) that cannot change live, or a bad value
    ├── URLError                   a URL we cannot or will not crawl (garbage, bad scheme)
    ├── StateError                 a persisted file under data_dir is unreadable
    │   ├── LockedError            the results file is held open by another process (.pid)
    │   └── StorageError           a write under data_dir failed (read-only, full, I/O error)
    └── FetchError                 a fetch failed (.kind, an ErrorKind): data, not a crash

Each carries a one-line message meant for a person: the CLI prints ``str(err)``
and exits 2 (:data:`EXIT_USAGE`; a :class:`StorageError` :data:`EXIT_STORAGE`), never a traceback (httpx ``_exceptions.py`` draws its tree the same
way). Foreign exceptions (tomllib, yarl, idna, OSError) are translated where
they arise, so callers only ever catch these.

:data:`USER_ERRORS` are what a command prints as its one line;
``peer.commands.shell.cli_main`` is the command-line shell that prints it.
This module imports nothing but ``ring.errors``: every core module imports it.
"""

from __future__ import annotations

from enum import StrEnum

from ring import errors as _ring_errors
from ring.errors import EXIT_USAGE, RingError

__all__ = ["PeerError", "ConfigError", "LiveSettingError", "URLError", "StateError", "LockedError", "StorageError",
           "FetchError", "ErrorKind", "USER_ERRORS", "EXIT_USAGE", "EXIT_STORAGE", "EXIT_RESTART", "first_line",
           "user_error"]

#: The exit status of a peer whose data_dir refused a write while it ran (a
#: disk gone read-only or full, an I/O error): the operator's disk, not the
#: command line, so not :data:`EXIT_USAGE`; a service manager may restart on
#: it once the disk is fixed. Every status is listed in ``python -m peer --help``
#: and docs/operations.md ("Exit statuses").
EXIT_STORAGE = 4
#: The exit status of a peer that stopped because ``ringcrawl-ring restart`` asked it to:
#: a planned restart (``ring.membership.restarts``), which its service manager carries out
#: (systemd's Restart=on-failure, a StatefulSet's pod). 75 is sysexits.h's EX_TEMPFAIL,
#: "a temporary failure ... the user is invited to retry": not 0, which a service manager
#: takes for a crawl that ended, nor 2 or 3, which the unit never restarts.
EXIT_RESTART = 75


class PeerError(Exception):
    """Base class of every error the peer package raises on purpose."""


class ConfigError(PeerError):
    """cluster.toml (or a command-line option) is wrong.

    ``path`` is the file, ``key`` the dotted key path (``crawl.rate``,
    ``peer[1].address``) or ``""`` for the file as a whole.
    """

    def __init__(self, path: str, key: str, message: str) -> None:
        self.path = path
        self.key = key
        self.message = message
        where = f"{path}: {key}: " if key else f"{path}: "
        super().__init__(where + message)


class LiveSettingError(ConfigError):
    """A ``KEY=VALUE`` of a live change (``ring set``) names a key that cannot change while the
    ring runs, or a bad value; ``key`` is the dotted key (peer/core/config/livekeys.py)."""


class URLError(PeerError, ValueError):
    """A URL that cannot be parsed, or that no crawler should follow."""


class StateError(PeerError):
    """A state file under data_dir is corrupt or partial; names the file and the way out."""


class LockedError(StateError):
    """The results file is held open by another process; ``pid`` is its id, or None if unknown.

    DuckDB lets one process at a time open a database for writing, so this is
    most often a second peer started with the same data_dir.
    """

    def __init__(self, message: str, pid: int | None = None) -> None:
        self.pid = pid
        super().__init__(message)


class StorageError(StateError):
    """A write under data_dir failed: the disk is read-only or full, or failing; names the
    file and the operating system's reason (``strerror``).

    Not one URL's fault, so never recorded as a page's ``internal`` error: the
    peer stops (:data:`EXIT_STORAGE`), and the page whose row could not be
    written has neither a row nor a done record, so its next owner fetches it
    again (peer/state/journal.py's crash ordering).
    """


class ErrorKind(StrEnum):
    """The ``error`` column of a results row: why a URL has no page (the value is what is stored).

    The network kinds are mapped from foreign exceptions in one place,
    ``peer.net.errorkinds.error_kind`` (the fetcher's module docstring says what each means);
    the others are the crawl's own verdicts.
    """

    DNS = "dns"  # the name did not resolve
    BLOCKED = "blocked"  # the SSRF guard refused every address (peer/core/dns/guard.py)
    CONNECT = "connect"  # refused, unreachable, connect timed out
    TIMEOUT = "timeout"  # crawl.timeout passed
    RESET = "reset"  # the connection was reset or closed mid-response
    TOO_LARGE = "too_large"  # over crawl.max_body
    DECODE = "decode"  # unknown Content-Encoding or a corrupt compressed body
    PROTOCOL = "protocol"  # malformed HTTP
    TLS = "tls"  # a TLS failure of no kind below: handshake, protocol, another certificate error
    TLS_EXPIRED = "tls_expired"  # the certificate expired or is not yet valid
    TLS_HOSTNAME = "tls_hostname"  # the certificate is for another host name
    TLS_UNTRUSTED = "tls_untrusted"  # no trusted CA signed it (self-signed, unknown CA)
    TLS_CLIENT_CERT = "tls_client_cert"  # the server wanted a client certificate, or refused ours
    PROXY = "proxy"  # the proxy could not be reached, or broke its protocol (peer/core/http/tunnel.py)
    PROXY_AUTH = "proxy_auth"  # the proxy refused the credentials (407, SOCKS5 auth)
    PROXY_REFUSED = "proxy_refused"  # the proxy could not or would not reach the target
    SCOPE = "scope"  # a URL httpx cannot fetch at all
    INTERNAL = "internal"  # a bug of ours while handling the URL (logged with its traceback)
    ROBOTS = "robots"  # robots.txt disallows it, or could not be read
    TOO_MANY_REDIRECTS = "too_many_redirects"  # crawl.max_redirects hops
    RETRY_AFTER = "retry_after"  # 429/503 answers until the retries ran out
    UNKNOWN = "unknown"  # a failed result without a kind (should not happen)


class FetchError(PeerError):
    """A fetch that failed; ``kind`` is the error kind stored in the results.

    Fetch errors are data: the engine records them as rows and the crawl
    goes on.
    """

    def __init__(self, kind: ErrorKind, message: str = "") -> None:
        self.kind = kind
        super().__init__(f"{kind}: {message}" if message else kind)


#: What a command prints as one line and exit 2: the errors raised on purpose.
USER_ERRORS: tuple[type[BaseException], ...] = (PeerError, RingError)


def user_error(exc: BaseException,
               kinds: tuple[type[BaseException], ...] = USER_ERRORS) -> BaseException | None:
    """The one error of ``kinds`` that ``exc`` is or carries (``ring.errors.user_error``)."""
    return _ring_errors.user_error(exc, kinds)


def first_line(exc: BaseException) -> str:
    """The first line of a foreign error's message (its type's name if it has none), for a
    one-line message of ours: DuckDB's errors run over several lines."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
