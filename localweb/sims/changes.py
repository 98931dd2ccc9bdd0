"""A host whose pages change on a schedule, crawled and revisited on simulated time (pure).

The revisit cores (peer/core/revisit/policy.py, duequeue.py, hostmix.py) driven as
the engine will drive them, against one simulated host: *fast* pages whose
content changes every ``fast_period`` seconds, *static* pages that never
change, and a backlog of *new* URLs found at the start (static once
fetched). The host is paced at one start every ``delay`` seconds; at each
start the host's mix chooses a new URL or a due revisit, the answer is
classified and the URL rescheduled. Half the pages send an ETag and answer
a matching ``If-None-Match`` with a 304, the other half send none, so both
ways of seeing "unchanged" are exercised.

What it returns is what a site owner's log and a crawl's figures would
show: every start as a :class:`localweb.judges.politeness.Request` (judge it with
:func:`localweb.judges.politeness.worst`) and visits per page. tests/core/test_revisit.py
asserts on it; scripts/bench_revisit.py prints it.
"""

from __future__ import annotations

import math
import random
from collections import Counter, deque
from dataclasses import dataclass, field

from localweb.judges.politeness import Request
from peer.core.revisit.duequeue import DueQueue
from peer.core.revisit.hostmix import HostMix, Kind
from peer.core.revisit.policy import Change, RevisitConfig, after_visit, conditional_headers, first_visit

__all__ = ["HOST", "SimResult", "SimSpec", "simulate"]

HOST = "change.sim.test"


@dataclass(frozen=True, slots=True)
class SimSpec:
    """The simulated host and the crawl's settings."""

    delay: float = 1.0            # the host's pace: one start every delay s
    fast_pages: int = 10
    fast_period: float = 5.0      # seconds between two changes of a fast page
    static_pages: int = 10
    new_pages: int = 100          # the backlog of new URLs, queued at t = 0
    duration: float = 1800.0      # simulated seconds
    seed: int = 1
    config: RevisitConfig = field(default_factory=lambda: RevisitConfig(
        enabled=True, min_interval=2.0, max_interval=600.0, initial_interval=30.0))


@dataclass(frozen=True, slots=True)
class SimResult:
    """What the run did."""

    requests: tuple[Request, ...]      # every start, in order
    visits: dict[str, int]             # per URL
    kinds: dict[Kind, int]             # starts per kind
    changes: dict[Change, int]         # visits per classification
    new_left: int                      # new URLs never fetched
    overdue_max: int                   # most revisits overdue at once

    def mean_visits(self, prefix: str) -> float:
        """Mean visits of the URLs whose path starts with ``prefix``."""
        n = [v for u, v in self.visits.items() if u.startswith(f"http://{HOST}{prefix}")]
        return sum(n) / len(n) if n else 0.0


def _page(url: str, t: float, spec: SimSpec) -> tuple[str, str | None]:
    """(digest, etag or None) of ``url`` at ``t``."""
    path = url.removeprefix(f"http://{HOST}")
    version = math.floor(t / spec.fast_period) if path.startswith("/fast/") else 0
    digest = f"{path}@{version}"
    etag = f'"{version}"' if int(path.rsplit("/", 1)[1]) % 2 == 0 else None
    return digest, etag


def simulate(spec: SimSpec) -> SimResult:
    """Crawl the host for ``spec.duration`` simulated seconds."""
    cfg = spec.config
    rng = random.Random(spec.seed)
    queue = DueQueue(now=0.0)
    mix = HostMix(cfg.revisit_share)
    base = f"http://{HOST}"
    new = deque([f"{base}/fast/{i}" for i in range(spec.fast_pages)]
                + [f"{base}/static/{i}" for i in range(spec.static_pages)]
                + [f"{base}/new/{i}" for i in range(spec.new_pages)])
    requests: list[Request] = []
    visits: Counter[str] = Counter()
    changes: Counter[Change] = Counter()
    overdue_max = 0
    t, last_start = 0.0, -math.inf
    while True:
        t = max(t, last_start + spec.delay)
        if t >= spec.duration:
            break
        queue.advance(t)
        overdue_max = max(overdue_max, queue.overdue)
        kind = mix.take(HOST, bool(new), queue.due_count(HOST) > 0)
        if kind is None:
            wake = queue.next_due()
            if wake is None:
                break
            t = wake
            continue
        if kind is Kind.NEW:
            state = first_visit(new.popleft(), HOST, t, None, cfg)
        else:
            popped = queue.pop(HOST)
            assert popped is not None
            state = popped
        last_start = t
        digest, etag = _page(state.url, t, spec)
        sent = dict(conditional_headers(state))
        status = 304 if etag is not None and sent.get("If-None-Match") == etag else 200
        requests.append(Request(t, t + 0.05, "", HOST, status, state.url))
        visits[state.url] += 1
        result = after_visit(state, t, status, None if status == 304 else digest, etag, None, cfg, rng)
        changes[result.change] += 1
        queue.schedule(result.state)
    return SimResult(tuple(requests), dict(visits), dict(mix.taken), dict(changes), len(new), overdue_max)
