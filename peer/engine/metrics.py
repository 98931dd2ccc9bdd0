"""Prometheus metrics of one peer, at ``http://[[peer]] metrics_address/metrics``, and its probes.

``prometheus_client`` (the Prometheus project's own Python client) writes the
text exposition format and serves it; this module only says which figures
become which metrics. No counter is kept here or added to the crawler: a
custom collector reads the figures the crawler already keeps (its core's:
summary, frontier, limits, Bloom filter and ring node, read by
``peer.core.door.readouts``; its resolver's and WARC writer's) at scrape time, the
pattern prometheus_client documents for "proxying metrics from other
systems".

- :func:`read_figures` copies those figures into a frozen
  :class:`~peer.core.run.scrape.PeerFigures`; it runs on the trio thread, between two steps of the
  event loop, so it never sees a dict half-updated and the crawler needs no
  lock.
- :func:`families` turns one :class:`PeerFigures` into metric families: pure,
  tested without a server.
- :func:`serve_metrics` is the edge: a threaded HTTP server
  (``peer.engine.opserver``, around prometheus_client's WSGI app) answers
  each scrape in a thread of its own, and the collector hops onto the trio
  thread with ``trio.from_thread.run_sync`` for the read. The same server
  answers ``/healthz`` and ``/readyz`` from the loop's heartbeat, without
  waiting on the loop, and any other path 404 (``peer.core.run.probes``);
  ``[metrics]`` adds a bearer token and TLS (``peer.core.config.metrics``).
  A scrape therefore costs the event loop one read (the frontier
  scans are O(hosts kept), measured in scripts/bench_metrics.py), and a slow
  or stuck scraper holds a server thread, never the crawl.

Names follow the Prometheus conventions: a ``ringcrawl_`` prefix, ``_total``
on counters, base units (seconds, bytes), ratios in 0..1. The crawl's figures
(pages, failed, not requested, drops) are named by ``ring.vocabulary``, as in
the summary, stats.json and ``ring status``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import trio
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from peer.core.run.probes import Beat, Readiness, readiness
from peer.core.run.scrape import DELAY_QUANTILES, PeerFigures, quantiles
from ring.vocabulary import TERMS, Family

if TYPE_CHECKING:
    from peer.engine.crawler import Crawler

__all__ = ["PeerFigures", "PeerCollector", "families", "read_figures", "read_readiness", "serve_metrics",
           "DELAY_QUANTILES"]

log = logging.getLogger("peer.metrics")

def read_figures(crawler: Crawler, started: float) -> PeerFigures:
    """Copy the crawler's figures (call on the trio thread); ``started``: time.monotonic() at start."""
    dns = crawler.resolver.stats()
    return crawler.peer.figures.scrape(
        crawler.clock(), crawler.status_figures(), peer=crawler.peer_id, ring=crawler.cfg.ring.name,
        uptime=max(0.0, time.monotonic() - started),
        dns={k: getattr(dns, k) for k in ("lookups", "hits", "static_hits", "negative_hits", "misses",
                                          "merged", "evictions", "size", "in_flight")},
        dns_hit_ratio=dns.hit_rate,
        warc=crawler.archive.figures() if crawler.archive is not None else {})


def families(f: PeerFigures) -> Iterator[Metric]:
    """The metric families of one set of figures (pure)."""
    def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
        return CounterMetricFamily(f"ringcrawl_{name}", doc, value=value)

    def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"ringcrawl_{name}", doc, value=value)

    def labelled(kind: type, name: str, doc: str, label: str, values: Mapping) -> Metric:
        m = kind(f"ringcrawl_{name}", doc, labels=[label])
        for key, v in sorted(values.items(), key=lambda kv: str(kv[0])):
            m.add_metric([str(key)], v)
        return m

    info = GaugeMetricFamily("ringcrawl_peer_info", "which peer of which ring this is (always 1)",
                             labels=["peer", "ring"])
    info.add_metric([f.peer, f.ring], 1)
    yield info
    yield gauge("uptime_seconds", "seconds since this peer's crawl started", f.uptime)
    pages, fail, never, drops = (TERMS[k] for k in (Family.PAGES, Family.FAILED, Family.NOT_REQUESTED,
                                                     Family.DROPS))
    yield counter(pages.metric, f"{pages.words}: {pages.means}", f.pages)
    yield counter("body_bytes", "body bytes kept, after decompression", f.bytes)
    yield labelled(CounterMetricFamily, "responses", "HTTP answers by status code", "status", f.by_status)
    yield labelled(CounterMetricFamily, fail.metric, fail.means, fail.label, f.failed)
    yield labelled(CounterMetricFamily, never.metric, never.means, never.label, f.not_requested)
    yield counter("retries", "fetches retried", f.retries)
    yield counter("robots_fetches", "robots.txt fetched", f.robots_fetches)
    yield counter("items", "rows of the extraction rules' tables", f.items)
    yield counter("extract_errors", "failures of the user extraction function", f.extract_errors)
    yield gauge("frontier_urls", "URLs queued in this peer's frontier", f.frontier)
    yield gauge("in_flight", "fetches in flight", f.in_flight)
    yield labelled(GaugeMetricFamily, "hosts", "hosts with queued work: ready to start, waiting on "
                   "politeness (delay or ceiling), held (Retry-After, robots.txt retry), busy "
                   "(every slot in flight)", "state", f.hosts)
    yield labelled(GaugeMetricFamily, "hosts_held", "hosts held, by reason", "reason", f.held)
    yield labelled(CounterMetricFamily, "dns_cache", "DNS cache counters (size and in_flight are "
                   "current values)", "figure",
                   {k: v for k, v in f.dns.items() if k not in ("size", "in_flight")})
    yield gauge("dns_cache_names", "names in the DNS cache", f.dns.get("size", 0))
    yield gauge("dns_cache_hit_ratio", "share of lookups answered from the cache", f.dns_hit_ratio)
    yield gauge("bloom_urls", "URLs added to the seen set (Bloom filter)", f.bloom_urls)
    yield gauge("bloom_fill_ratio", "fill of the Bloom filter's newest slice", f.bloom_fill)
    yield gauge("bloom_slices", "slices of the scalable Bloom filter", f.bloom_slices)
    yield gauge("bloom_false_positive_ratio", "estimated false-positive rate of the seen set", f.bloom_fpr)
    yield gauge("bloom_bytes", "memory of the Bloom filter's bits", f.bloom_bytes)
    yield counter("forwarded_out", "URLs forwarded to their owners on the ring", f.forwarded_out)
    yield counter("forwarded_in", "URLs received from other peers", f.forwarded_in)
    yield labelled(CounterMetricFamily, drops.metric, drops.means, drops.label, f.drops)
    yield labelled(GaugeMetricFamily, "politeness_delay_seconds", "quantiles of the hosts' delays "
                   "between request starts (PID output, Crawl-delay floor, backoff)", "quantile",
                   {format(q, "g"): v for q, v in f.delay_quantiles.items()})
    ceiling = CounterMetricFamily("ringcrawl_politeness_ceiling_holds", "request starts the 1 s/5 s "
                                  "ceiling held back, per host or per IP", labels=["scope"])
    ceiling.add_metric(["host"], f.ceiling_holds)
    ceiling.add_metric(["ip"], f.ip_ceiling_holds)
    yield ceiling
    # The lease (ring.membership.lease): alert on lease_held == 0 for longer than a grace.
    yield gauge("lease_held", "1 while a majority of the quorum vouches for this peer's ring and "
                "requests start; 0 while paused (grace after a ring change, or no majority)",
                1 if f.lease_held else 0)
    yield gauge("lease_vouched", "members vouching for this peer's ring within the lease, itself "
                "included", f.lease_vouched)
    yield gauge("lease_needed", "vouches the lease needs: a majority of the quorum", f.lease_needed)
    yield gauge("lease_quorum", "voters: the [[peer]] list less those that left (alive, suspect and dead)",
                f.lease_quorum)
    yield gauge("lease_grace_seconds", "seconds of grace still to run after a ring change",
                f.lease_grace_seconds)
    if f.warc:
        yield labelled(CounterMetricFamily, "warc", "the WARC writer's counters: records, fetches, files, "
                       "bytes written; fetches without_response, skipped_truncated, not_archived",
                       "figure", f.warc)
    if f.seeds_file:  # the peer that reads crawl.seeds_file
        yield labelled(CounterMetricFamily, "seeds_file_lines", "lines of crawl.seeds_file read, by outcome: "
                       "queued, forwarded, seen, skipped, invalid, or the not-requested cause",
                       "outcome", f.seeds_file)
    if f.seed_add:  # a peer that took `ring seed add` batches
        yield labelled(CounterMetricFamily, "seed_add_lines", "lines of `ring seed add` batches this peer "
                       "took, by outcome: queued, forwarded, seen, skipped, invalid, or the not-requested cause",
                       "outcome", f.seed_add)
    if f.seed_add_untaken:
        yield labelled(CounterMetricFamily, "seed_add_batches_untaken", "`ring seed add` batches this peer "
                       "answered without taking them, by why: busy (waiting batches or forwarding backlog "
                       "full), over_cap, leaving; asked_again: taken before, answered as then", "why",
                       f.seed_add_untaken)
    if f.seed_add_caps:
        yield labelled(CounterMetricFamily, "seed_add_cap_hits", "hits of `ring seed add`'s caps, by config "
                       "key: crawl.seed_add_waiting (a batch answered busy), crawl.seed_add_answers (an "
                       "answer forgotten)", "cap", f.seed_add_caps)
    yield gauge("ring_version", "changes of this peer's live member set since it started",
                f.ring_version)
    if f.revisit_visits:  # a continuous crawl ([revisit] enabled)
        yield gauge("revisits_due", "revisits due now and waiting for their host's turn (overdue)",
                    f.revisits_due)
        yield gauge("revisits_scheduled", "fetched pages with a revisit scheduled", f.revisits_scheduled)
        yield labelled(CounterMetricFamily, "revisits", "revisits made, by what they found (a 304 is "
                       "not_modified)", "change", f.revisit_visits)
        if f.revisit_freshness is not None:
            yield gauge("revisit_freshness_ratio", "answered revisits that found the stored copy "
                        "still current (a 304 or the same payload digest)", f.revisit_freshness)


class PeerCollector(Collector):
    """Exports what ``read()`` returns at each scrape (nothing while it returns None)."""

    def __init__(self, read: Callable[[], PeerFigures | None]) -> None:
        self._read = read

    def collect(self) -> Iterator[Metric]:
        figures = self._read()
        if figures is not None:
            yield from families(figures)


def read_readiness(crawler: Crawler) -> Readiness:
    """The peer's readiness now (call on the trio thread): ``peer.core.run.probes`` rule 3."""
    peer = crawler.peer
    return readiness(running=crawler.running, in_ring=peer.in_ring, cluster=crawler.cluster,
                     lease=peer.lease_state(crawler.clock()), stopping=peer.stopping, leaving=peer.leaving)


async def serve_metrics(crawler: Crawler, address: str, *, key: str = "",
                        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``crawler``'s metrics and probes on ``address`` until cancelled.

    ``address``: ``host:port``, or a port alone for loopback
    (``peer.core.config.metrics`` rule 1); ``key``: what names it in an
    error (``peer[0].metrics_address``, ``--metrics-address``). A port that
    cannot be bound, a token or a certificate that cannot be read, is a
    :class:`~peer.errors.ConfigError` (the command line prints one line and
    exits 2). ``task_status`` gets the ``host:port`` bound.
    """
    from prometheus_client import CollectorRegistry, make_wsgi_app
    from prometheus_client.process_collector import ProcessCollector

    from peer.core.config.metrics import is_loopback, metrics_listen
    from peer.engine.opserver import OpServer, heartbeat, read_token, tls_context
    from peer.errors import ConfigError

    where = str(crawler.cfg.path)
    if not key:
        index = next((i for i, p in enumerate(crawler.cfg.peers) if p.id == crawler.peer_id), 0)
        key = f"peer[{index}].metrics_address"
    try:
        host, port = metrics_listen(address)
    except ValueError as exc:
        raise ConfigError(where, key, str(exc)) from None
    token = read_token(crawler.cfg.metrics, where)
    tls = tls_context(crawler.cfg.metrics, where)
    trio_token = trio.lowlevel.current_trio_token()
    started = time.monotonic()

    def read() -> PeerFigures | None:
        try:
            return trio.from_thread.run_sync(read_figures, crawler, started, trio_token=trio_token)
        except trio.RunFinishedError:
            return None  # a scrape that came as the peer ended

    registry = CollectorRegistry(auto_describe=False)
    registry.register(PeerCollector(read))
    ProcessCollector(registry=registry)  # process_resident_memory_bytes, CPU seconds, open fds
    try:
        server = OpServer(host, port, make_wsgi_app(registry), token=token, tls=tls)
    except OSError as exc:
        raise ConfigError(where, key, f"cannot listen on {address}: {exc.strerror or exc}") from None
    shown = f"[{host}]" if ":" in host else host
    bound = f"{shown}:{server.port}"
    scheme = "https" if tls is not None else "http"
    log.info("metrics on %s://%s/metrics (probes /healthz, /readyz)%s", scheme, bound,
             "; a bearer token is required" if token else "")
    if token is None and not is_loopback(host):
        # The figures name the peer, its ring, its hosts and its leases
        # (docs/curve.md: what Curve leaves open).
        log.warning("metrics on %s, not loopback, without a token: anyone who reaches it reads this "
                    "peer's figures; set [metrics] token_file or token_env", bound)
    server.beat = Beat(time.monotonic(), read_readiness(crawler))
    server.start()
    task_status.started(bound)
    try:
        await heartbeat(server, lambda: read_readiness(crawler))
    finally:
        with trio.CancelScope(shield=True):
            # shutdown() waits for serve_forever's next poll (0.5 s): off the loop.
            await trio.to_thread.run_sync(server.shutdown)
