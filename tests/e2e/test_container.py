"""The image (deploy/Containerfile) built offline and run as a 3-peer ring of containers.

Needs root, network namespaces, podman and mmdebstrap (scripts/test installs
the last two with apt-get); elsewhere it skips with the reason. What an
operator does, in order:

1. ``deploy/base-image``: the base from Debian packages, built once a machine
   (kept in podman's storage under a tag made of its recipe's hash);
   ``deploy/build-image``: the image, from wheels made here.
2. Three containers of it, each in a network namespace of its own
   (``--network ns:``, localweb.netns.ring), the web in a fourth; each gets
   the one cluster.toml mounted read-only, a data directory as its /data
   volume (owned by the image's user, uid 10001, as a fresh named volume
   would be) and its peer id from the environment (RINGCRAWL_ID).
3. Once a third of the pages are fetched, ``podman stop`` (SIGTERM to the
   container's PID 1, tini, which forwards it to the peer): each peer must
   log the SIGTERM and the container exit 0.
4. ``podman start`` of the same containers, the same command: each resumes
   its crawl state from its volume, and the ring ends by itself, every
   container exiting 0.

It is judged from the web server's request log alone
(localweb.judges.owners): every expected page requested, none twice, each
host requested by one client address only, no address but the containers'.

Podman here: the ``runc`` runtime and ``default_ulimits = []`` (the
machine's container sandbox forbids raising limits), in a containers.conf of
the test's own (CONTAINERS_CONF). The figures (base build, image build,
image size, crawl) are printed: ``pytest -s`` shows them.

Its cost, measured on the 2-core machine at a load of 7: cold (neither the
base nor the dependencies' layer in podman's storage) 168 s and about 75 s of
CPU (the base 37 s, the image 26 s, the containers 6 s); warm, after a change
of ringcrawl, 64 s and about 27 s of CPU (the image 16 s, half of it pip
making the wheels; the ring 22 s of wall, 6 s of CPU in the containers).
Both caches live in podman's storage (/var/lib/containers): a CI machine
that keeps it between runs pays the cold cost once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from localweb.judges.owners import Exit, Hit, judge
from localweb.netns.partition import Web
from localweb.netns.ring import WEB, NetRing, available
from localweb.processes.peerrun import toml_value
from localweb.sitegraph.server import read_log

ROOT = Path(__file__).resolve().parents[2]
UID = 10001  # the image's user (deploy/Containerfile)
RING_PORT = 7000
WEB_PORT = 8080
#: 12 hosts of about 14 pages at 150 pages/min a host: about 6 s of crawl.
WEB_GRAPH = Web(hosts=12, pages=10, links=10)
RING = {"gossip_interval": 0.15, "suspect_after": 0.45, "dead_after": 1.5, "seed_grace": 5.0,
        "lease": 0.75, "takeover_after": 7.5}
TIME_LIMIT = 90.0  # seconds for each phase's containers to end


def _missing() -> str | None:
    reason = available()
    if reason is not None:
        return reason
    for tool in ("podman", "mmdebstrap"):
        if shutil.which(tool) is None:
            return f"no {tool} here (scripts/test installs it: apt-get install podman mmdebstrap)"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def _podman_env(tmp: Path) -> dict[str, str]:
    conf = tmp / "containers.conf"
    conf.write_text('[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n')
    return {**os.environ, "CONTAINERS_CONF": str(conf)}


def _run(argv: list[str], env: dict[str, str], timeout: float = 600.0) -> str:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout.strip()


def _timed(argv: list[str], env: dict[str, str]) -> tuple[str, float, float]:
    """stdout, wall seconds and CPU seconds (this process's children) of ``argv``."""
    t0, c0 = time.monotonic(), os.times()
    out = _run(argv, env)
    c1 = os.times()
    return out, time.monotonic() - t0, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


#: The test's image. It is kept after the run: its dependencies' layer is the
#: build cache of the next run (the image before it is removed once the new one
#: is built, its own layers only); `podman rmi localhost/ringcrawl:test` frees it.
TAG = "localhost/ringcrawl:test"


def _image_id(env: dict[str, str]) -> str | None:
    done = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", TAG], env=env,
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip() if done.returncode == 0 else None


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """The image's name and the environment podman runs in; the figures printed."""
    tmp = tmp_path_factory.mktemp("image")
    env = _podman_env(tmp)
    # The versions this suite runs with, not whatever the index has newest.
    frozen = _run([sys.executable, "-m", "pip", "list", "--format=freeze", "--exclude-editable",
                   "--disable-pip-version-check"], env)
    (tmp / "constraints.txt").write_text(frozen + "\n")
    env["PIP_CONSTRAINT"] = str(tmp / "constraints.txt")
    base, base_wall, base_cpu = _timed([str(ROOT / "deploy/base-image")], env)
    before = _image_id(env)
    _, wall, cpu = _timed([str(ROOT / "deploy/build-image"), "--base", base, "--tag", TAG,
                           "--python", sys.executable], env)
    if before is not None and before != _image_id(env):
        subprocess.run(["podman", "rmi", before], env=env, capture_output=True, timeout=120)
    size = int(_run(["podman", "image", "inspect", "--format", "{{.Size}}", TAG], env))
    print(f"\nbase image {base}: {base_wall:.1f} s wall, {base_cpu:.1f} s CPU (0 when cached)"
          f"\nimage {TAG}: built in {wall:.1f} s wall, {cpu:.1f} s CPU; {size / 1e6:.0f} MB")
    return TAG, env


def _cluster_toml(net: NetRing) -> str:
    peers = "".join(f'[[peer]]\nid = "{p}"\naddress = "tcp://{net.address(p)}:{RING_PORT}"\n'
                    f'data_dir = "/data/{p}"\n\n' for p in net.names if p != WEB)
    tables: dict[str, dict[str, Any]] = {
        "ring": {"name": "containers", **RING},
        "crawl": {"seeds": [f"http://s001.web.test:{WEB_PORT}/"], "allow_hosts": ["*.web.test"],
                  "allow_private": True, "concurrency": 16, "timeout": 5.0},
        "politeness": {"rate": 150.0, "host_concurrency": 1},
        "dns": {"resolve": {"*.web.test": net.address(WEB)}},
    }
    return peers + "".join(f"[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in t.items()) + "\n"
                           for name, t in tables.items())


class _Containers:
    """The ring's containers by peer name, each watched by a ``podman wait``.

    They share a cgroup parent of their own, whose CPU counter keeps the
    usage of every container that ran under it (cgroup v1's cpuacct charges
    each ancestor; v2's cpu.stat the same): :meth:`cpu_seconds`.
    """

    def __init__(self, env: dict[str, str], prefix: str) -> None:
        self.env, self.prefix = env, prefix
        self.waits: dict[str, subprocess.Popen[str]] = {}
        self.made: list[str] = []

    def name(self, peer: str) -> str:
        return f"{self.prefix}-{peer}"

    def create(self, peer: str, argv: list[str]) -> None:
        self.made.append(self.name(peer))
        _run(["podman", "create", "--name", self.name(peer), "--cgroup-parent", f"/{self.prefix}", *argv],
             self.env)

    def _cgroups(self) -> list[Path]:
        return [d for d in (*Path("/sys/fs/cgroup").glob(f"*/{self.prefix}"), Path("/sys/fs/cgroup") / self.prefix)
                if d.is_dir()]

    def cpu_seconds(self) -> float | None:
        """CPU seconds used by the containers so far (None where the counter cannot be read)."""
        for d in self._cgroups():
            if (d / "cpuacct.usage").exists():
                return int((d / "cpuacct.usage").read_text()) / 1e9
            if (d / "cpu.stat").exists():
                usage = dict(line.split() for line in (d / "cpu.stat").read_text().splitlines())
                return int(usage["usage_usec"]) / 1e6
        return None

    def start(self, peers: list[str]) -> None:
        for peer in peers:
            _run(["podman", "start", self.name(peer)], self.env)
            self.waits[peer] = subprocess.Popen(["podman", "wait", self.name(peer)], env=self.env,
                                                stdout=subprocess.PIPE, text=True)

    def live(self) -> list[str]:
        return [p for p, w in self.waits.items() if w.poll() is None]

    def exits(self, by_itself: bool) -> list[Exit]:
        """Each container's exit status (``podman wait`` prints it), once all have ended."""
        out = []
        for peer, w in self.waits.items():
            text, _ = w.communicate(timeout=60)
            code = int(text.strip()) if text.strip().lstrip("-").isdigit() else None
            out.append(Exit(peer, code, time.time(), by_itself))
        return out

    def stop(self, peers: list[str]) -> None:
        """SIGTERM each container's PID 1 at once (podman stop), SIGKILL after 20 s."""
        stops = [subprocess.Popen(["podman", "stop", "--time", "20", self.name(p)], env=self.env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for p in peers]
        for s in stops:
            s.wait(timeout=60)

    def logs(self, peer: str) -> str:
        done = subprocess.run(["podman", "logs", self.name(peer)], env=self.env, capture_output=True,
                              text=True, timeout=60)
        return done.stdout + done.stderr

    def remove(self) -> None:
        for w in self.waits.values():
            if w.poll() is None:
                w.kill()
            w.wait()
        if self.made:
            subprocess.run(["podman", "rm", "--force", "--time", "0", *self.made], env=self.env,
                           capture_output=True, timeout=120)
        for d in self._cgroups():  # the parent made for them, empty now
            with contextlib.suppress(OSError):
                d.rmdir()


def _wait(until, limit: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not until() and time.monotonic() < deadline:
        time.sleep(0.1)


def test_a_ring_of_three_containers_crawls_the_web_once_stops_on_sigterm_and_resumes(image, tmp_path):
    tag, env = image
    graph = WEB_GRAPH.graph()
    expected = graph.expected_urls(WEB_PORT)
    log_path = tmp_path / "requests.jsonl"
    began = time.monotonic()
    c0 = os.times()
    with NetRing(3) as net:
        peers = [p for p in net.names if p != WEB]
        toml = tmp_path / "cluster.toml"
        toml.write_text(_cluster_toml(net))
        with (tmp_path / "web.err").open("ab") as web_err:
            farm = net.popen(WEB, [sys.executable, "-m", "localweb.webfarm", "--host", net.address(WEB),
                                   "--private", "--port", str(WEB_PORT), *WEB_GRAPH.argv(),
                                   "--log", str(log_path)],
                             stdout=subprocess.PIPE, stderr=web_err, env=dict(os.environ))
        assert farm.stdout is not None
        assert farm.stdout.readline().decode().startswith("listening on"), (tmp_path / "web.err").read_text()
        ring = _Containers(env, f"rc{net.suffix}")
        try:
            for p in peers:
                data = tmp_path / "volumes" / p
                data.mkdir(parents=True)
                os.chown(data, UID, UID)
                ring.create(p, ["--network", f"ns:/run/netns/{net.netns(p)}",
                                "--volume", f"{data}:/data", "--volume", f"{toml}:/etc/ringcrawl/cluster.toml:ro",
                                "--env", f"RINGCRAWL_ID={p}", "--env", "RINGCRAWL_PROGRESS=2", tag])
            ring.start(peers)

            def pages() -> int:
                return sum(1 for e in read_log(str(log_path)) if e.target != "/robots.txt") \
                    if log_path.exists() else 0

            _wait(lambda: pages() >= len(expected) // 3 or not ring.live(), TIME_LIMIT)
            stopped_at = pages()
            assert ring.live() == peers, "a container ended before the stop:\n" + \
                "\n".join(ring.logs(p)[-2000:] for p in peers)
            ring.stop(peers)
            stops = ring.exits(by_itself=False)
            logs = {p: ring.logs(p) for p in peers}
            # SIGTERM went through tini to Python: the peer's own stop, then exit 0.
            for p in peers:
                assert "SIGTERM: stopping" in logs[p], logs[p][-3000:]
            assert [(e.peer, e.code) for e in stops] == [(p, 0) for p in peers], \
                "\n".join(logs[p][-2000:] for p in peers)

            # The same containers again: the same command resumes each volume's crawl.
            ring.start(peers)
            _wait(lambda: not ring.live(), TIME_LIMIT)
            left = ring.live()
            ring.stop(left)
            ends = ring.exits(by_itself=not left)
            logs = {p: ring.logs(p) for p in peers}
            containers_cpu = ring.cpu_seconds()
        finally:
            ring.remove()
            net.kill(farm, 5.0)
            farm.stdout.close()
        addresses = {net.address(p): p for p in peers}
    c1 = os.times()
    hits = [Hit(e.t, e.host, e.target, e.method, e.client) for e in read_log(str(log_path))]
    verdict = judge(hits, addresses, expected=expected, port=WEB_PORT, exits=ends)
    report = "\n".join([*verdict.lines(), f"stopped after {stopped_at} pages"]
                       + [f"--- {p}\n{logs[p][-2500:]}" for p in peers])
    ours = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    theirs = "unknown" if containers_cpu is None else f"{containers_cpu:.1f} s"
    print(f"\nring of 3 containers: {time.monotonic() - began:.1f} s wall; CPU: {ours:.1f} s podman and "
          f"the web, {theirs} the containers; stopped after {stopped_at} pages\n" + "\n".join(verdict.lines()))
    for p in peers:
        assert "resuming the crawl state" in logs[p], report
        stats = json.loads((tmp_path / "volumes" / p / p / "stats.json").read_text())
        assert stats["peer"] == p, report
    assert verdict.covered == verdict.expected, report
    assert verdict.fetched_twice == 0, report
    assert verdict.hosts_by_two == (), report
    assert verdict.unknown_clients == (), report
    assert verdict.all_exit_0_by_themselves, report
