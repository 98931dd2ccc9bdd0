"""What the benchmarks share: options, timing, frames, and one place to import the rest from.

``scripts/bench_*.py`` and ``scripts/sim_polite.py`` import this module and
no other benchmark (each one a script, none a library of another), as the
tests import :mod:`localweb.processes.peerrun`. What they share lives in modules of
its own, one concept each, and this module re-exports all of it, so a
benchmark still has one place to import from:

- :mod:`localweb.processes.children`: the processes of a benchmark (:class:`Children`,
  :class:`Exited`, :func:`proc_cpu`, :func:`machine_busy`, :func:`tcp_bytes`).
- :mod:`localweb.bench.web`: the web a benchmark crawls, nginx over the
  rendered site graph or webfarm, and reading their request logs
  (:func:`render_site`, :class:`Nginx`, :class:`Webfarm`,
  :func:`read_requests`).
- :mod:`localweb.bench.crawl`: crawls by ``python -m peer`` processes and
  what they leave (:func:`write_toml`, :func:`run_crawl`, :func:`page_rows`,
  :func:`pid_rows`, :func:`report_ring`).
- :mod:`localweb.judges.politeness` (pure): a server's request log judged as a site
  owner would, in any 1 s and 5 s window (:func:`count_in`,
  :func:`sliding_max`; politeness is counted at the request's start, as the
  frontier paces starts).

What is left here is small: :func:`positive` (an argparse ``type``),
:func:`median_time` of a timed call, and :func:`sample_frames`, encoded URL
batches of a given size for the zmq and Curve benchmarks.

Linux only (``/proc``, ``prctl``), as the benchmarks are; nothing here runs
at import.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from localweb.bench.crawl import Crawl, page_rows, pid_rows, report_ring, ring_changes, run_crawl, write_toml
from localweb.bench.web import (
    NGINX_HINT,
    Nginx,
    Server,
    Site,
    Webfarm,
    find_nginx,
    graph_for,
    read_access_log,
    read_requests,
    render_site,
)
from localweb.processes.children import Children, Exited, machine_busy, proc_cpu, tcp_bytes
from localweb.judges.politeness import Request, count_in, sliding_max
from localweb.processes.peerrun import free_ports
from ring.messages import UrlBatch, encode

__all__ = [
    "END_FRAME", "NGINX_HINT", "REPEATS", "Children", "Crawl", "Exited", "Nginx", "Request", "Server",
    "Site", "Webfarm", "count_in", "find_nginx", "free_ports", "graph_for", "machine_busy",
    "median_time", "page_rows", "pid_rows", "positive", "proc_cpu", "read_access_log", "read_requests",
    "render_site", "report_ring", "ring_changes", "run_crawl", "sample_frames", "sliding_max",
    "tcp_bytes", "write_toml",
]

#: Repeats of a timed call; the median is reported.
REPEATS = 5
#: The frame that ends a run of :func:`sample_frames` in the zmq benchmarks.
END_FRAME = b"end"


# ---------------------------------------------------------------------------
# Options and timing


def positive(kind):  # type: ignore[no-untyped-def]
    """An argparse ``type`` accepting numbers of ``kind`` > 0, for the benchmarks' options."""
    def check(value: str):  # type: ignore[no-untyped-def]
        try:
            v = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {value!r}") from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"expected a number > 0, not {value!r}")
        return v
    return check


def median_time(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    """Median wall time of ``fn()`` in seconds."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


# ---------------------------------------------------------------------------
# Frames


def sample_frames(size: int, count: int = 8) -> list[bytes]:
    """``count`` encoded URL batches of about ``size`` bytes each."""
    frames = []
    for seq in range(count):
        urls: list[tuple[str, int]] = []
        while True:
            frame = encode(UrlBatch(ring="bench", sender="p1", epoch=1, seq=seq, urls=tuple(urls)))
            if len(frame) >= size:
                break
            urls.append((f"https://s{len(urls):03d}.web.test:8080/page/{seq}/{len(urls) * 7919}.html", 2))
        frames.append(frame)
    return frames

