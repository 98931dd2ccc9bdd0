"""A seeds file of millions of lines routed into a 3-peer ring: time, peak RSS, disk.

Writes a gzip file of ``--lines`` URLs over ``--hosts`` hosts (``hN.bench.test``,
in scope, resolved to 127.0.0.1 on a port where nothing listens: unreachable by
design, so each host costs one refused robots.txt and its URLs end as
``connect``), plus one line in 50 out of scope and one in 500 invalid. Starts
three ``python -m peer`` processes on loopback; p1, the lowest id, reads the
file and forwards each URL to its host's owner. Printed: the seconds until p1
has routed the last line (its ``seeds_file:`` line), each peer's peak RSS
(VmHWM) and its data_dir's size on disk then, and p1's counts. The peers are
then stopped (SIGINT); bounded by ``--timeout``.

    scripts/bench_seeds_file.py --lines 1000000
    scripts/bench_seeds_file.py --lines 10000000 --hosts 100000
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from localweb.processes.peerrun import free_ports

SUMMARY = re.compile(r"seeds_file: ([\d,]+) lines read \(([^)]*)\)")


def write_seeds(path: Path, lines: int, hosts: int, port: int) -> None:
    with gzip.open(path, "wt", compresslevel=1) as f:
        for i in range(lines):
            if i % 500 == 0:
                f.write("not a url\n")
            elif i % 50 == 0:
                f.write(f"http://x{i}.example.org/\n")
            else:
                f.write(f"http://h{i % hosts}.bench.test:{port}/p{i}\n")


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_seeds_"))
    *ring_ports, dead = free_ports(4)
    seeds = work / "seeds.txt.gz"
    t0 = time.monotonic()
    write_seeds(seeds, args.lines, args.hosts, dead)
    print(f"wrote {args.lines:,} lines over {args.hosts:,} hosts in {time.monotonic() - t0:.1f} s: "
          f"{seeds.stat().st_size / 2**20:.1f} MiB gzip")
    peers = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\n'
                    f'data_dir = "{work / f"p{i + 1}"}"\n\n' for i, port in enumerate(ring_ports))
    toml = work / "cluster.toml"
    toml.write_text(f"""[ring]
name = "bench"

{peers}[crawl]
seeds_file = "seeds.txt.gz"
allow_hosts = ["*.bench.test"]
allow_private = true
robots_tries = 1
timeout = 2.0

[dns]
resolve = {{ "*.bench.test" = "127.0.0.1" }}

[bloom]
capacity = {max(args.lines, 100_000)}
""")
    procs = {}
    for i in range(3):
        pid = f"p{i + 1}"
        err = (work / f"{pid}.err").open("wb")
        procs[pid] = subprocess.Popen([sys.executable, "-m", "peer", "--ring", str(toml), "--id", pid,
                                       "--progress", "10"], stdout=subprocess.DEVNULL, stderr=err)
    start = time.monotonic()
    routed = None
    try:
        while time.monotonic() - start < args.timeout:
            text = (work / "p1.err").read_text(errors="replace")
            m = SUMMARY.search(text)
            if m:
                routed = time.monotonic() - start
                break
            if any(p.poll() is not None for p in procs.values()):
                print("a peer ended early:\n" + text[-3000:])
                return 1
            time.sleep(0.5)
        rss = {p: peak_rss(proc.pid) for p, proc in procs.items()}
        sizes = {p: disk(work / p) for p in procs}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    if routed is None:
        print(f"not routed within {args.timeout:.0f} s")
        return 1
    print(f"routed {args.lines:,} lines in {routed:.1f} s ({args.lines / routed:,.0f} lines/s), "
          f"from the peers' start")
    for p in procs:
        print(f"  {p}: peak RSS {rss[p] / 2**20:.0f} MiB, data_dir {sizes[p] / 2**20:.1f} MiB")
    print(f"  p1's counts: {m[2]}" if m else "")
    if args.keep:
        print(f"kept {work}")
    else:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
