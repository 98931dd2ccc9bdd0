"""Measure ``SiteSettings.for_host`` (peer/core/config/sites.py) at 0, 1, 10 and 100 ``[[site]]`` blocks.

    .venv/bin/python scripts/bench_sites.py [--quick]

It is asked for a new host of the frontier, every request's headers and
every row's store options. Printed per call, median of several repeats:
a memo hit (a host seen before), a first resolution (the memo cleared
first: one regex match over every block's globs), and for comparison a loop
over one ``Scope`` a block, as a plain reading of "first block that matches"
would do it. Then a frontier's push + pop_ready + done per URL with the
blocks pacing the hosts, against none. Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse

from localweb.bench import median_time
from peer.core.config.cluster import parse_config
from peer.core.frontier.frontier import Frontier, Outcome
from peer.core.config.sites import SiteSettings
from peer.core.urls.scope import Scope


def sites(n: int) -> SiteSettings:
    blocks = "".join(f'[[site]]\nhosts = ["*.site{i}.example", "site{i}.example"]\nrate = {60 + i}\n'
                     for i in range(n))
    cfg = parse_config('[[peer]]\nid = "p1"\n[politeness]\nrate = 60\n' + blocks)
    return SiteSettings(cfg.sites, cfg.crawl, cfg.politeness)


def hosts_for(n_blocks: int, count: int) -> list[str]:
    """Half in some block (spread over all), half in none: those try every block."""
    out = []
    for i in range(count):
        if i % 2 and n_blocks:
            out.append(f"h{i}.site{i % n_blocks}.example")
        else:
            out.append(f"h{i}.elsewhere.test")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--quick", action="store_true", help="fewer hosts")
    args = p.parse_args()
    count = 2_000 if args.quick else 20_000
    print(f"for_host, µs a call over {count:,} hosts (half in a block, half in none)")
    print("blocks  memo hit  first resolution  loop over Scopes  frontier push+pop+done µs/URL")
    for n in (0, 1, 10, 100):
        s = sites(n)
        hosts = hosts_for(n, count)

        def hit() -> None:
            for h in hosts:
                s.for_host(h)

        def first() -> None:
            s._memo.clear()
            for h in hosts:
                s.for_host(h)

        scopes = [Scope(b.hosts) for b in s.blocks]

        def naive() -> None:
            for sc in scopes:
                sc._memo.clear()
            for h in hosts:
                next((i for i, sc in enumerate(scopes) if sc.allows_host(h)), -1)

        hit()
        t_hit = median_time(hit) / count
        t_first = median_time(first) / count
        t_naive = median_time(naive) / count

        def crawl() -> None:
            f = Frontier(s.politeness, politeness_for=(lambda h: s.for_host(h).politeness) if s else None)
            now = 0.0
            for i, h in enumerate(hosts):
                f.push(f"http://{h}/{i}", h, 0, now)
            while (job := f.pop_ready(now)) is not None:
                f.done(job.host, now, Outcome.FETCHED, job.url)

        t_crawl = median_time(crawl) / count
        print(f"{n:>6}  {t_hit * 1e6:8.3f}  {t_first * 1e6:16.3f}  {t_naive * 1e6:15.3f}  {t_crawl * 1e6:10.2f}")


if __name__ == "__main__":
    main()
