"""localweb: the hostile local web the crawler's hardening is judged against.

Layers, bottom up (each imports only those above it)::

    wire.py     bytes: parse a request head, build any reply (Reply, End)  - pure
    site.py     the normal site: a known page graph, its exact URL set     - pure
    farm.py     link farms and traps, generated while they stream         - pure
    cases.py    the hostile hosts (Retry-After, desync, robots.txt, bad
                HTTP, fuzz) and the catalogue of cases (CASES)            - pure
    hostile.py  the trio server on one loopback port, its request log,
                serve_in_thread, the config a crawler needs, the CLI
    peerrun.py  real `python -m peer` processes against it: cluster.toml,
                bounded runs, RSS polled from /proc, result rows

``python -m localweb.hostile --help`` lists the hosts and the cluster.toml
lines a crawler needs to reach them.
"""

from localweb.cases import CASES, RETRY_AFTER, Case
from localweb.farm import Farm
from localweb.site import Site
from localweb.wire import End, Reply, reply

_SERVER_NAMES = ("DNS", "HostileWeb", "LogEntry", "config_snippet", "in_thread", "serve_in_thread")


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # The server's names load on first use, so ``python -m localweb.hostile``
    # runs the module once, as __main__, not also as an import of the package.
    if name in _SERVER_NAMES:
        from localweb import hostile

        return getattr(hostile, name)
    raise AttributeError(f"module 'localweb' has no attribute {name!r}")

__all__ = [
    "CASES", "Case", "DNS", "End", "Farm", "HostileWeb", "LogEntry", "RETRY_AFTER", "Reply",
    "Site", "config_snippet", "in_thread", "reply", "serve_in_thread",
]
