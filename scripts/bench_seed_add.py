"""``ring seed add --file`` of millions of lines into a running 3-peer ring: time, the tool's peak RSS.

Writes a gzip file as ``scripts/bench_seeds_file.py`` does (``--lines`` URLs over
``--hosts`` unreachable hosts in scope, one line in 50 out of scope, one in 500
invalid), starts three ``python -m peer`` processes on loopback in a continuous
crawl (``[revisit]``: the ring runs until stopped, so it is there for the whole
file), then runs ``python -m ring seed add --file`` as an operator would.
Printed: the tool's wall time and exit status, its peak RSS (``ru_maxrss`` of
the child), each peer's peak RSS (VmHWM), and the tool's last lines. The peers
are then stopped (SIGINT); bounded by ``--timeout``.

    scripts/bench_seed_add.py --lines 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_seeds_file import peak_rss, write_seeds  # noqa: E402
from localweb.processes.peerrun import free_ports  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a running process (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_seed_add_"))
    *ring_ports, dead = free_ports(4)
    seeds = work / "seeds.txt.gz"
    write_seeds(seeds, args.lines, args.hosts, dead)
    print(f"wrote {args.lines:,} lines over {args.hosts:,} hosts: {seeds.stat().st_size / 2**20:.1f} MiB gzip")
    peers = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\n'
                    f'data_dir = "{work / f"p{i + 1}"}"\n\n' for i, port in enumerate(ring_ports))
    toml = work / "cluster.toml"
    toml.write_text(f"""[ring]
name = "bench"

{peers}[crawl]
seeds = ["http://start.bench.test:{dead}/"]
allow_hosts = ["*.bench.test"]
allow_private = true
robots_tries = 1
timeout = 2.0

[revisit]
enabled = true

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
    try:
        time.sleep(3.0)  # the ring forms
        cpu0 = {p: cpu_seconds(proc.pid) for p, proc in procs.items()}
        start = time.monotonic()
        tool = subprocess.run([sys.executable, "-m", "ring", "seed", "add", "--file", str(seeds), "--ring",
                               str(toml)], capture_output=True, text=True, timeout=args.timeout)
        took = time.monotonic() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        tool_rss, tool_cpu = usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime
        rss = {p: peak_rss(proc.pid) for p, proc in procs.items()}
        cpu = {p: cpu_seconds(proc.pid) - cpu0[p] for p, proc in procs.items()}
        status = subprocess.run([sys.executable, "-m", "ring", "status", "--json", "--ring", str(toml)],
                                capture_output=True, text=True, timeout=60)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"seed add --file: exit {tool.returncode} after {took:.1f} s ({args.lines / took:,.0f} lines/s); "
          f"the tool's peak RSS {tool_rss / 2**20:.0f} MiB")
    print(f"  the tool's CPU {tool_cpu:.1f} s; the peers' during the run: "
          + ", ".join(f"{p} {cpu[p]:.1f} s" for p in procs)
          + f" ({sum(cpu.values()) / args.lines * 1e6:.0f} us a line; they crawl their unreachable hosts too)")
    for p in procs:
        print(f"  {p}: peak RSS {rss[p] / 2**20:.0f} MiB")
    print(tool.stdout.rstrip())
    try:
        members = json.loads(status.stdout)["members"]
    except (ValueError, KeyError):
        members = []
    for m in members:  # batches answered with nothing taken (busy: the tool asked again)
        refused = {k: n for k, n in m.get("counters", {}).items() if k.startswith("seed_add_batch.")}
        if refused:
            print(f"  {m['id']}: {refused}")
    if tool.returncode:
        print(tool.stderr[-2000:])
    if args.keep:
        print(f"kept {work}")
    else:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0 if tool.returncode == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
