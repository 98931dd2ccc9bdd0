"""NetRing: peers and a web server in Linux network namespaces, with links that can be cut.

:class:`NetRing` (root only; :func:`available` says why not) creates, for
``n`` peers: one bridge in the machine's own namespace, ``n + 1`` network
namespaces (``w`` for the web server, ``p1`` ... ``pN`` for the peers), each
joined to the bridge by a veth pair whose inner end is ``eth0``, with ``lo``
up and one address of a private /24 that overlaps no address or route of
the machine (10.231.X.0/24, X picked at random among the free ones; the
bridge itself has no address, so the machine routes nothing new). Every
name carries a random suffix (``rc<6 hex>...``), so parallel test workers
never collide. Commands run in a namespace with ``ip netns exec``
(:meth:`NetRing.popen`); their PIDs are recorded and, at exit, each is sent
SIGTERM then SIGKILL by PID. Leaving the ``with`` block, by an exception or
KeyboardInterrupt too, deletes every namespace, veth and the bridge it made,
and nothing else.

Cuts drop packets **silently at the receiver**, as a partition does, with
policy-routing rules (``ip rule ... blackhole``) in the receiving namespace:
no iptables, no tc action modules (which this machine's kernel lacks). A
route on the sender's side would not do: a local ``blackhole`` route makes
``connect()`` and ``send()`` fail at once (EINVAL), which no real partition
does. The namespace's ``local`` lookup is moved from preference 0 to 100 at
creation, so a rule at preference 10 is consulted before a packet is
delivered.

- :meth:`cut` / :meth:`heal`: both directions between two peers.
- :meth:`isolate`: one peer from every other peer; the web stays reachable.
- :meth:`cut_one_way` ``(src, dst)``: packets from ``src`` to ``dst`` are
  dropped. **What that does to TCP**: a connection needs both directions,
  so an IP-level one-way cut is a two-way cut for every TCP connection
  between the two within one retransmission timeout: on ``dst``'s own
  connection to ``src`` the data still arrives, but ``src``'s ACKs do not,
  so ``dst``'s unacked segments are retransmitted with a window of one and
  nothing new goes. Measured here (tests/edges/test_netns.py), 200 bytes every
  50 ms: after the cut, one more send arrived, then one retransmission
  0.2 s later carrying the 4 sends queued meanwhile, then nothing for the
  4 s watched. No new connection completes its handshake either way. "``dst`` does not hear ``src``, ``src`` still hears ``dst``" cannot be
  had from IP-level drops. With ``port=`` (``dst``'s listening port) only
  the packets ``src`` sends *to that port* are dropped: ``src``'s own
  connections to ``dst``'s listener die (ZeroMQ heartbeats close them, and
  reconnects never get a SYN through) while ``dst``'s connections to
  ``src``'s listener, ACKs included, pass. For a ring whose members each
  send on their own connection to the other's ROUTER, that is the closest
  honest form of "``dst`` does not hear ``src``": ``src``'s messages to
  ``dst`` are lost, ``dst``'s reach ``src``.
- :meth:`heal_all`: every cut removed.

Names and moves (tests of ring addresses):

- :meth:`write_hosts`: a hosts file of each namespace, in
  ``/etc/netns/<namespace>/hosts``, which ``ip netns exec`` bind-mounts
  over ``/etc/hosts`` for the processes it starts (ip-netns(8)), so each
  namespace resolves the names given; rewritten in place, so processes
  already running see a change at their next lookup. Removed at exit.
- :meth:`readdress`: a namespace's ``eth0`` moves to another address of
  the subnet (a machine, or a pod, back somewhere else).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
import random
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from localweb.processes.children import _die_with_parent

__all__ = ["NetError", "NetRing", "available"]

WEB = "w"
#: Preference of the cut rules; the ``local`` table's lookup moves below them.
_CUT_PREF = 10
_LOCAL_PREF = 100


class NetError(RuntimeError):
    """An ``ip`` command failed: its argv and stderr."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise NetError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done


@functools.cache
def available() -> str | None:
    """None if namespaces work here, else a one-line reason (for ``pytest.skip``)."""
    if os.name != "posix" or not Path("/proc/self/ns/net").exists():
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2) on PATH"
    name = f"rc{secrets.token_hex(3)}probe"
    try:
        done = _ip("netns", "add", name, check=False)
        if done.returncode != 0:
            return f"ip netns add fails here: {done.stderr.strip()}"
        rule = _ip("-n", name, "rule", "add", "pref", str(_CUT_PREF), "from", "10.0.0.1",
                   "blackhole", check=False)
        if rule.returncode != 0:
            return f"ip rule blackhole fails in a namespace: {rule.stderr.strip()}"
        bridge = _ip("link", "add", f"{name[:8]}br", "type", "bridge", check=False)
        if bridge.returncode != 0:
            return f"ip link add type bridge fails here: {bridge.stderr.strip()}"
        _ip("link", "del", f"{name[:8]}br", check=False)
    finally:
        _ip("netns", "del", name, check=False)
    return None


def _used_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The IPv4 networks of the machine's addresses and routes (default route apart)."""
    nets: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    for line in _ip("-o", "-4", "addr").stdout.splitlines():
        fields = line.split()
        if "inet" in fields:
            nets.append(ipaddress.ip_interface(fields[fields.index("inet") + 1]).network)
    for line in _ip("-4", "route", "show", "table", "all").stdout.splitlines():
        dest = line.split()[0] if line.split() else ""
        if dest in ("broadcast", "local", "unreachable", "blackhole", "prohibit") and len(line.split()) > 1:
            dest = line.split()[1]
        with contextlib.suppress(ValueError):
            nets.append(ipaddress.ip_network(dest, strict=False))
    return nets


def free_subnet() -> ipaddress.IPv4Network:
    """A 10.231.X.0/24 that overlaps no address or route of this machine."""
    used = _used_networks()
    candidates = list(range(256))
    random.shuffle(candidates)
    for x in candidates:
        net = ipaddress.IPv4Network(f"10.231.{x}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise NetError("no free 10.231.X.0/24 on this machine")


class NetRing:
    """``n`` peer namespaces and one web namespace on a bridge (module docstring).

    ``names`` are ``"w"``, ``"p1"`` ... ``"pN"``; :meth:`address` gives each
    one's IPv4 address, :meth:`netns` its namespace's name.
    """

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError("a NetRing needs at least one peer")
        self.n = n
        self.suffix = secrets.token_hex(3)
        self.names = [WEB, *(f"p{i}" for i in range(1, n + 1))]
        self.subnet: ipaddress.IPv4Network | None = None
        self._made_ns: list[str] = []
        self._made_links: list[str] = []
        self._rules: set[tuple[str, tuple[str, ...]]] = set()
        self._procs: dict[int, subprocess.Popen[Any]] = {}
        self._moved: dict[str, str] = {}
        self._hosts_dirs: list[Path] = []

    # -- names and addresses ---------------------------------------------------

    @property
    def bridge(self) -> str:
        return f"rc{self.suffix}br"

    def netns(self, name: str) -> str:
        self._check(name)
        return f"rc{self.suffix}{name}"

    def address(self, name: str) -> str:
        """The IPv4 address of ``name``'s ``eth0``: .1 for the web, .10+i for peer pi."""
        self._check(name)
        assert self.subnet is not None, "use NetRing in a with block"
        if name in self._moved:
            return self._moved[name]
        host = 1 if name == WEB else 10 + int(name[1:])
        return str(self.subnet.network_address + host)

    def peer_of(self, address: str) -> str | None:
        """The name whose address ``address`` is (None if none)."""
        return next((name for name in self.names if self.address(name) == address), None)

    def _check(self, name: str) -> None:
        if name not in self.names:
            raise ValueError(f"no {name!r} in this NetRing (names: {', '.join(self.names)})")

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> NetRing:
        reason = available()
        if reason is not None:
            raise NetError(reason)
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _create(self) -> None:
        self.subnet = free_subnet()
        prefix = self.subnet.prefixlen
        _ip("link", "add", self.bridge, "type", "bridge")
        self._made_links.append(self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i, name in enumerate(self.names):
            ns, veth = self.netns(name), f"rc{self.suffix}v{i}"
            _ip("netns", "add", ns)
            self._made_ns.append(ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self._made_links.append(veth)
            _ip("link", "set", veth, "master", self.bridge, "up")
            _ip("-n", ns, "addr", "add", f"{self.address(name)}/{prefix}", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "rule", "add", "pref", str(_LOCAL_PREF), "lookup", "local")
            _ip("-n", ns, "rule", "del", "pref", "0")

    def readdress(self, name: str, host: int) -> str:
        """Move ``name``'s ``eth0`` to the subnet's address number ``host`` (100-250); the new address."""
        if not 100 <= host <= 250:
            raise ValueError("a moved namespace takes an address .100 to .250 (below are the fixed ones)")
        assert self.subnet is not None, "use NetRing in a with block"
        old, new = self.address(name), str(self.subnet.network_address + host)
        prefix = self.subnet.prefixlen
        # The old one first: added first, the new one would be a secondary
        # address, which the kernel deletes with the primary (no promote_secondaries).
        _ip("-n", self.netns(name), "addr", "del", f"{old}/{prefix}", "dev", "eth0")
        _ip("-n", self.netns(name), "addr", "add", f"{new}/{prefix}", "dev", "eth0")
        self._moved[name] = new
        return new

    def write_hosts(self, names: dict[str, str], namespaces: Sequence[str] | None = None) -> None:
        """``namespaces`` (default: all) resolve each of ``names`` (name -> address) from their own hosts file (docstring)."""
        text = "127.0.0.1 localhost\n::1 localhost\n" + "".join(f"{a} {n}\n" for n, a in sorted(names.items()))
        for name in self.names if namespaces is None else namespaces:
            folder = Path("/etc/netns") / self.netns(name)
            if folder not in self._hosts_dirs:
                folder.mkdir(parents=True, exist_ok=True)
                self._hosts_dirs.append(folder)
            hosts = folder / "hosts"
            # In place, never replaced: a running process's /etc/hosts is a bind mount of this inode.
            with open(hosts, "a+") as f:
                f.seek(0)
                f.truncate()
                f.write(text)

    def close(self) -> None:
        """End every process started here (by PID), then delete what was created."""
        self.kill_all()
        for folder in self._hosts_dirs:
            with contextlib.suppress(OSError):
                (folder / "hosts").unlink()
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._hosts_dirs.clear()
        self._moved.clear()
        for ns in reversed(self._made_ns):
            _ip("netns", "del", ns, check=False)
        self._made_ns.clear()
        # A namespace's deletion destroys its veth pairs; the bridge (and any
        # veth left by a failed start) goes by name, ours only.
        for link in reversed(self._made_links):
            if _ip("link", "show", link, check=False).returncode == 0:
                _ip("link", "del", link, check=False)
        self._made_links.clear()
        self._rules.clear()

    # -- processes --------------------------------------------------------------------

    def popen(self, name: str, argv: Sequence[str], *, stdout: IO[Any] | int | None = subprocess.DEVNULL,
              stderr: IO[Any] | int | None = subprocess.DEVNULL, env: dict[str, str] | None = None,
              cwd: str | Path | None = None) -> subprocess.Popen[Any]:
        """Start ``argv`` in ``name``'s namespace (``ip netns exec`` execs it: same PID)."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.netns(name), *argv], stdout=stdout,
                                stderr=stderr, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                start_new_session=True, preexec_fn=_die_with_parent)
        self._procs[proc.pid] = proc
        return proc

    def kill(self, proc: subprocess.Popen[Any], grace: float = 5.0) -> int:
        """SIGTERM ``proc``, SIGKILL after ``grace`` s; its exit status."""
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        self._procs.pop(proc.pid, None)
        return proc.returncode

    def kill_all(self, grace: float = 5.0) -> None:
        live = [p for p in self._procs.values() if p.poll() is None]
        for p in live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(p.poll() is None for p in live) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in live:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGKILL)
                p.wait()
        self._procs.clear()

    # -- cuts ---------------------------------------------------------------------------

    def _drop(self, src: str, dst: str, port: int | None, add: bool) -> None:
        spec: tuple[str, ...] = ("from", f"{self.address(src)}/32", "iif", "eth0")
        if port is not None:
            spec += ("ipproto", "tcp", "dport", str(port))
        key = (dst, spec)
        if add == (key in self._rules):
            return
        verb = "add" if add else "del"
        _ip("-n", self.netns(dst), "rule", verb, "pref", str(_CUT_PREF), *spec, "blackhole")
        if add:
            self._rules.add(key)
        else:
            self._rules.discard(key)

    def cut_one_way(self, src: str, dst: str, *, port: int | None = None) -> None:
        """Drop what ``src`` sends ``dst`` (only to ``dst``'s ``port``, if given); see the docstring."""
        self._drop(src, dst, port, True)

    def heal_one_way(self, src: str, dst: str, *, port: int | None = None) -> None:
        self._drop(src, dst, port, False)

    def cut(self, a: str, b: str) -> None:
        """Drop every packet between ``a`` and ``b``, both ways."""
        self._drop(a, b, None, True)
        self._drop(b, a, None, True)

    def heal(self, a: str, b: str) -> None:
        self._drop(a, b, None, False)
        self._drop(b, a, None, False)

    def isolate(self, a: str) -> None:
        """Cut ``a`` from every other peer; the web server stays reachable."""
        for b in self.names:
            if b not in (a, WEB):
                self.cut(a, b)

    def heal_all(self) -> None:
        for dst, spec in list(self._rules):
            _ip("-n", self.netns(dst), "rule", "del", "pref", str(_CUT_PREF), *spec, "blackhole",
                check=False)
        self._rules.clear()

    def cuts(self) -> list[tuple[str, str]]:
        """``(src, dst)`` of every one-way drop in place, sorted."""
        return sorted({(self.peer_of(spec[1].removesuffix("/32")) or "?", dst) for dst, spec in self._rules})
