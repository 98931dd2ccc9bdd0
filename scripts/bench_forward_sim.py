"""Forwarding at 8 to 512 simulated peers: frames/s per peer, URLs per frame, bytes per URL, latency.

Pure and in one process: every peer is a ``ring.forwarding.forwarder`` Outbox and Inbox
pair, as ``ring.node.RingNode`` drives them, over a network that delivers
each frame 1-3 ms later and loses none. Each peer fetches 1,000 pages/s;
a page forwards a Poisson number of URLs (mean ``--mix``: 0.6 is a crawl
that mostly stays within its sites, 6.5 is IRLbot's new URLs a page, WWW
2008, all of them foreign) to owners drawn uniformly, as the hash ring
spreads hosts. The URLs are unique and about 70 characters long, so the
recently-forwarded cache (``recent_size``) is off: it would only cost RAM.

Two configurations, the same traffic (the same seed):

- ``before``: what the ring did before coalescing: a fixed 50 ms batch age
  and one :class:`~ring.messages.Ack` frame per batch, sent as it arrives.
- ``after``: ``[ring]`` defaults: acks owed and piggybacked on the frames
  going back (``Outbox.owe_ack``, ``Outbox.messages``), the batch age
  adapting to ``message_budget`` between ``batch_age`` and
  ``max_batch_age`` (ring/forwarding/forwarder.py rules 7 and 8).

The figures are over the last ``--measure`` seconds of ``--seconds``
simulated ones (the age settles within a few ``RATE_WINDOW`` s):

- frames/s a peer sends, mean over the peers and the busiest peer;
- URLs a frame (frames without URLs included: lone acks);
- bytes a URL: the encoded frames of two observed peers (batches, acks,
  packets) over the URLs they carry; less the mean URL length, the overhead;
- latency: from ``Outbox.add`` to the owner's ``Inbox.accept``, for one URL
  in 32 of the observed peers', mean and 99th percentile; it includes the network's 1-3 ms and the
  simulation step (``--step``, 5 ms).

Run: ``python scripts/bench_forward_sim.py`` (all sizes, both mixes, both
modes) or a part, e.g. ``--peers 8 64 --mix 6.5 --seconds 10 --measure 5``.
It is CPU-bound Python: 8 and 64 peers take 2-70 s of CPU a row, 256 peers
1.5-9 min, 512 peers at 6.5 URLs a page longer still ("before" is the slow
mode: every frame is simulated).
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass

from ring.forwarding.forwarder import BATCH_AGE, MAX_BATCH_AGE, MESSAGE_BUDGET, Outbox
from ring.forwarding.inbox import Inbox, Verdict
from ring.messages import Ack, Message, Packet, UrlBatch, encode

RING = "sim"
PAGES_PER_S = 1000.0
OBSERVED = 2  # peers whose frames are encoded to count bytes
SAMPLE = 32  # one URL in SAMPLE is timed


@dataclass(frozen=True, slots=True)
class Mode:
    name: str
    piggyback: bool
    batch_age: float
    max_batch_age: float
    budget: float


BEFORE = Mode("before", False, 0.05, 0.05, 0.0)
AFTER = Mode("after", True, BATCH_AGE, MAX_BATCH_AGE, MESSAGE_BUDGET)


@dataclass(frozen=True, slots=True)
class Row:
    peers: int
    mix: float
    mode: str
    frames_per_s: float
    frames_per_s_max: float
    urls_per_frame: float
    bytes_per_url: float
    overhead_per_url: float
    latency_ms: float
    latency_p99_ms: float
    age: float
    resent: int
    cpu_s: float


def _poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method; the means here are at most a few dozen."""
    limit, k, p = math.exp(-mean), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def _batches(m: Message) -> tuple[UrlBatch, ...]:
    if isinstance(m, UrlBatch):
        return (m,)
    if isinstance(m, Packet):
        return m.url_batches()
    return ()


def simulate(n: int, mix: float, mode: Mode, *, seconds: float, measure: float, step: float,
             seed: int) -> Row:
    rng = random.Random(seed)
    names = [f"p{i:03d}" for i in range(n)]
    outs = [Outbox(names[i], RING, epoch=1, max_age=mode.batch_age, max_delay=mode.max_batch_age,
                   budget=mode.budget, recent_size=0) for i in range(n)]
    ins = [Inbox(RING) for _ in range(n)]
    index = {name: i for i, name in enumerate(names)}
    net: list[tuple[float, int, int, int, Message]] = []  # (arrival, tick, src, dst, frame)
    tick = 0
    frames = [0] * n  # in the measured window
    urls_out = 0  # URLs in all frames, measured window
    frames_all = 0
    obs_bytes = obs_urls = 0
    added: dict[str, float] = {}
    latencies: list[float] = []
    start_measure = seconds - measure
    per_step = PAGES_PER_S * step * mix
    counter = 0
    t0 = time.process_time()

    def send(src: int, dst: int, m: Message, now: float) -> None:
        nonlocal tick, urls_out, frames_all, obs_bytes, obs_urls
        tick += 1
        heapq.heappush(net, (now + rng.uniform(0.001, 0.003), tick, src, dst, m))
        if now >= start_measure:
            frames[src] += 1
            frames_all += 1
            k = sum(len(b.urls) for b in _batches(m))
            urls_out += k
            if src < OBSERVED:
                obs_bytes += len(encode(m))
                obs_urls += k

    # URLs come from a pool (the Inbox does not look at them, and the cache is
    # off); the timed ones, from the observed peers, are unique.
    pool = [f"http://www.site{c % 7919}.example.com/section/{c}/page.html" for c in range(1 << 16)]
    mask = (1 << 16) - 1
    others = range(n - 1)
    steps = int(round(seconds / step))
    for s in range(steps):
        now = s * step
        timing = now >= start_measure - 2 * mode.max_batch_age
        for i in range(n):
            ob = outs[i]
            for d in rng.choices(others, k=_poisson(rng, per_step)):
                if d >= i:
                    d += 1
                counter += 1
                if i < OBSERVED and timing and counter % SAMPLE == 0:
                    url = f"http://timed.example.com/{counter}"
                    added[url] = now
                else:
                    url = pool[counter & mask]
                ob.add(url, 1, names[d], now)
            due = ob.next_due_at()
            if due is not None and due <= now:
                got = ob.messages(now) if mode.piggyback else ob.due(now)
                for dest, m in got:
                    send(i, index[dest], m, now)
        while net and net[0][0] <= now + step:
            _, _, src, dst, m = heapq.heappop(net)
            ob, ib = outs[dst], ins[dst]
            if isinstance(m, Ack):
                ob.ack(names[src], m.epoch, m.seq)
                continue
            if isinstance(m, Packet):
                for seq in m.acks:
                    ob.ack(names[src], m.acked_epoch, seq)
            for b in _batches(m):
                v = ib.accept(b)
                if v is Verdict.ACCEPT and src < OBSERVED:
                    for url, _ in b.urls:
                        t = added.pop(url, None)
                        if t is not None and t >= start_measure:
                            latencies.append(now + step - t)
                if v.ack:
                    if mode.piggyback:
                        ob.owe_ack(names[src], b.epoch, b.seq, now)
                    else:
                        send(dst, src, Ack(RING, names[dst], b.epoch, b.seq), now)
    cpu = time.process_time() - t0
    latencies.sort()
    mean_url = statistics.fmean(len(u) for u in pool)
    bpu = obs_bytes / obs_urls if obs_urls else float("nan")
    return Row(
        peers=n, mix=mix, mode=mode.name,
        frames_per_s=statistics.fmean(frames) / measure, frames_per_s_max=max(frames) / measure,
        urls_per_frame=urls_out / frames_all if frames_all else 0.0,
        bytes_per_url=bpu, overhead_per_url=bpu - mean_url,
        latency_ms=1000 * statistics.fmean(latencies) if latencies else float("nan"),
        latency_p99_ms=1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else float("nan"),
        age=statistics.fmean(o.stats().age for o in outs),
        resent=sum(o.stats().resent for o in outs), cpu_s=cpu)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peers", type=int, nargs="+", default=[8, 64, 256, 512])
    ap.add_argument("--mix", type=float, nargs="+", default=[0.6, 6.5],
                    help="mean URLs forwarded a page")
    ap.add_argument("--seconds", type=float, default=12.0, help="simulated seconds a run")
    ap.add_argument("--measure", type=float, default=6.0, help="the last seconds measured")
    ap.add_argument("--step", type=float, default=0.005, help="simulation step, seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modes", nargs="+", choices=("before", "after"), default=["before", "after"])
    args = ap.parse_args(argv)
    if any(p < 2 for p in args.peers) or not 0 < args.measure < args.seconds or args.step <= 0:
        print("bench_forward_sim: --peers >= 2, 0 < --measure < --seconds, --step > 0", file=sys.stderr)
        return 2
    print(f"{PAGES_PER_S:.0f} pages/s a peer; after: batch_age {BATCH_AGE} s, max_batch_age "
          f"{MAX_BATCH_AGE} s, message_budget {MESSAGE_BUDGET:.0f}/s; measured over the last "
          f"{args.measure:g} of {args.seconds:g} simulated s")
    head = (f"{'peers':>5} {'URLs/page':>9} {'mode':>6} {'frames/s':>9} {'max':>6} {'URLs/frame':>10} "
            f"{'B/URL':>6} {'overhead':>8} {'latency ms':>10} {'p99 ms':>7} {'age s':>6} {'resent':>6} "
            f"{'cpu s':>6}")
    print(head)
    for n in args.peers:
        for mix in args.mix:
            for mode in (m for m in (BEFORE, AFTER) if m.name in args.modes):
                r = simulate(n, mix, mode, seconds=args.seconds, measure=args.measure,
                             step=args.step, seed=args.seed)
                print(f"{r.peers:>5} {r.mix:>9.1f} {r.mode:>6} {r.frames_per_s:>9.0f} "
                      f"{r.frames_per_s_max:>6.0f} {r.urls_per_frame:>10.1f} {r.bytes_per_url:>6.1f} "
                      f"{r.overhead_per_url:>8.1f} {r.latency_ms:>10.0f} {r.latency_p99_ms:>7.0f} "
                      f"{r.age:>6.2f} {r.resent:>6} {r.cpu_s:>6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
