"""Who fetched each host: a ring's crawl judged from the web server's request log alone.

A ring must keep one owner per host, through partitions too: a site owner
who sees two crawler addresses fetching their host in the same second, or
one page twice, sees the ring fail. This module takes the server's log
(:class:`Hit` rows: time, host, target, method, client address), the
client address of each peer, the URLs a correct crawl fetches and how each
peer ended, and returns the figures (:class:`Verdict`). It is pure: lists
in, figures out, no clock and no file (:mod:`localweb.netns.partition` runs the
crawl and reads the log; tests hand-make the rows).

Rules:

- **Host-seconds with two peers**: the log's wall time is cut into 1-second
  buckets (``floor(t)``); a (host, bucket) counts when 2 or more distinct
  client addresses requested the host in it. A run is consecutive such
  buckets of one host.
- **Pages fetched twice**: (host, target) pairs with more than one GET,
  ``/robots.txt`` apart (every new owner of a host may read it again); of
  those, the ones whose GETs came from 2+ different clients are counted
  apart ("by two peers").
- **Coverage**: expected URLs fetched at least once / expected URLs; a
  target is compared after the oracle's normalisation
  (:func:`localweb.sitegraph.oracle.normalize`), as :meth:`WebFarm.fetched` does.
- **Hosts written by two peers**: hosts requested (robots.txt apart) by 2+
  clients over the whole run. A host may move legitimately after a real
  ring change, so this is reported with its peers, not judged.
- **Exits**: each peer's exit status, whether it ended by itself, and the
  seconds from the log's last page request to its exit.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from localweb.sitegraph.hrefs import port_suffix
from localweb.sitegraph.oracle import normalize

__all__ = ["Exit", "Hit", "Verdict", "judge", "page_url"]

ROBOTS = "/robots.txt"


class Hit(NamedTuple):
    """One logged request: wall time (epoch s), host, target, method, client address."""

    t: float
    host: str
    target: str
    method: str = "GET"
    client: str = ""


@dataclass(frozen=True, slots=True)
class Exit:
    """How one peer ended: status (None: never ended), wall time, and whether by itself."""

    peer: str
    code: int | None
    at: float | None
    by_itself: bool


@dataclass(frozen=True, slots=True)
class Verdict:
    """The figures of one crawl (module docstring)."""

    requests: int
    pages: int                                   # GETs, robots.txt apart
    two_peer_seconds: int                        # (host, second) with 2+ clients
    longest_two_peer_run: int                    # consecutive such seconds of one host
    two_peer_hosts: tuple[str, ...]              # hosts with any such second
    fetched_twice: int                           # (host, target) with 2+ GETs
    fetched_twice_by_two: int                    # of those, by 2+ clients
    expected: int
    covered: int                                 # expected URLs fetched
    hosts_by_two: tuple[tuple[str, tuple[str, ...]], ...]  # host, its peers (2+)
    exits: tuple[Exit, ...]
    last_page: float | None                      # wall time of the last page request
    unknown_clients: tuple[str, ...]             # addresses no peer has

    @property
    def coverage(self) -> float:
        return self.covered / self.expected if self.expected else 1.0

    def exit_after_last_page(self, e: Exit) -> float | None:
        """Seconds from the last page request to ``e``'s exit (None if either is unknown)."""
        if e.at is None or self.last_page is None:
            return None
        return e.at - self.last_page

    @property
    def all_exit_0_by_themselves(self) -> bool:
        return all(e.code == 0 and e.by_itself for e in self.exits)

    def lines(self) -> list[str]:
        """The figures, one a line, for a benchmark's output or a failing test's message."""
        out = [
            f"requests                   {self.requests} ({self.pages} pages, robots.txt apart)",
            f"host-seconds, 2+ peers     {self.two_peer_seconds} (longest run {self.longest_two_peer_run} s;"
            f" {len(self.two_peer_hosts)} hosts{_names(self.two_peer_hosts)})",
            f"pages fetched twice        {self.fetched_twice} ({self.fetched_twice_by_two} by two peers)",
            f"coverage                   {self.covered}/{self.expected} = {100 * self.coverage:.1f}%",
            f"hosts fetched by 2+ peers  {len(self.hosts_by_two)}"
            + _hosts_text(self.hosts_by_two),
        ]
        for e in self.exits:
            after = self.exit_after_last_page(e)
            how = "by itself" if e.by_itself else "stopped"
            out.append(f"exit {e.peer:<21} {e.code} ({how}"
                       + (f", {after:.1f} s after the last page)" if after is not None else ")"))
        if self.unknown_clients:
            out.append(f"unknown clients            {', '.join(self.unknown_clients)}")
        return out


def _names(hosts: Sequence[str], most: int = 8) -> str:
    if not hosts:
        return ""
    return ": " + ", ".join(hosts[:most]) + (" ..." if len(hosts) > most else "")


def _hosts_text(hosts: Sequence[tuple[str, Sequence[str]]], most: int = 8) -> str:
    if not hosts:
        return ""
    shown = "; ".join(f"{h}: {','.join(p)}" for h, p in hosts[:most])
    return f" ({shown}{' ...' if len(hosts) > most else ''})"


def page_url(host: str, target: str, port: int) -> str:
    """The normalised URL of a logged request, to compare with the oracle's expected set."""
    raw = f"http://{host}{port_suffix(port)}{target}"
    try:
        return normalize(raw)
    except ValueError:
        return raw


def _runs(buckets: Iterable[int]) -> int:
    """The longest run of consecutive integers in ``buckets``."""
    best = run = 0
    last = None
    for b in sorted(set(buckets)):
        run = run + 1 if last is not None and b == last + 1 else 1
        best = max(best, run)
        last = b
    return best


def judge(hits: Sequence[Hit], peers: Mapping[str, str], *, expected: Iterable[str] = (),
          port: int = 80, exits: Sequence[Exit] = ()) -> Verdict:
    """The :class:`Verdict` of a crawl whose log is ``hits``.

    ``peers`` maps a client address to its peer's name (an address it lacks
    counts as itself, and is listed in ``unknown_clients``); ``expected`` is
    the oracle's URL set for the web on ``port``.
    """
    per_second: dict[tuple[str, int], set[str]] = defaultdict(set)
    gets: Counter[tuple[str, str]] = Counter()
    getters: dict[tuple[str, str], set[str]] = defaultdict(set)
    host_clients: dict[str, set[str]] = defaultdict(set)
    pages = 0
    last_page: float | None = None
    unknown: set[str] = set()
    for h in hits:
        who = peers.get(h.client)
        if who is None:
            who = h.client
            unknown.add(h.client)
        per_second[(h.host, math.floor(h.t))].add(who)
        if h.target == ROBOTS:
            continue
        host_clients[h.host].add(who)
        if h.method != "GET":
            continue
        pages += 1
        last_page = h.t if last_page is None else max(last_page, h.t)
        key = (h.host, h.target)
        gets[key] += 1
        getters[key].add(who)
    two = sorted(key for key, who in per_second.items() if len(who) >= 2)
    by_host: dict[str, list[int]] = defaultdict(list)
    for host, second in two:
        by_host[host].append(second)
    twice = [key for key, n in gets.items() if n > 1]
    wanted = set(expected)
    fetched = {page_url(host, target, port) for host, target in gets}
    return Verdict(
        requests=len(hits),
        pages=pages,
        two_peer_seconds=len(two),
        longest_two_peer_run=max((_runs(s) for s in by_host.values()), default=0),
        two_peer_hosts=tuple(sorted(by_host)),
        fetched_twice=len(twice),
        fetched_twice_by_two=sum(1 for key in twice if len(getters[key]) >= 2),
        expected=len(wanted),
        covered=len(wanted & fetched),
        hosts_by_two=tuple((host, tuple(sorted(who))) for host, who in sorted(host_clients.items())
                           if len(who) >= 2),
        exits=tuple(exits),
        last_page=last_page,
        unknown_clients=tuple(sorted(unknown)),
    )
