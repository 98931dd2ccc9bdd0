"""localweb.netns.ring: namespaces on a bridge, silent cuts, and nothing left behind (root only; else skipped)."""

from __future__ import annotations

import ast
import ipaddress
import subprocess
import sys
import textwrap
import time

import pytest

from localweb.netns.ring import WEB, NetRing, available

pytestmark = pytest.mark.skipif(available() is not None, reason=available() or "")

#: Connect from one namespace to another's port; prints ok or the error's name.
CONNECT = "import socket,sys\ns=socket.socket();s.settimeout(0.5)\ntry:\n s.connect((sys.argv[1],int(sys.argv[2])));print('ok')\nexcept OSError as e: print(type(e).__name__)"
LISTEN = "import socket,sys,time\ns=socket.socket();s.bind((sys.argv[1],9000));s.listen(64);print('ready',flush=True);time.sleep(60)"


def _reach(net: NetRing, src: str, dst: str, port: int = 9000) -> str:
    done = subprocess.run(["ip", "netns", "exec", net.netns(src), sys.executable, "-c", CONNECT,
                           net.address(dst), str(port)], capture_output=True, text=True, timeout=20)
    return done.stdout.strip() or done.stderr.strip()


def _listen_everywhere(net: NetRing) -> None:
    for name in net.names:
        proc = net.popen(name, [sys.executable, "-c", LISTEN, net.address(name)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        proc.stdout.close()


def _leftovers(net: NetRing) -> str:
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return "\n".join(line for line in (names + links).splitlines() if f"rc{net.suffix}" in line)


def test_cuts_isolation_and_one_way_cuts_then_everything_is_removed():
    with NetRing(2) as net:
        assert net.names == [WEB, "p1", "p2"]
        addrs = [net.address(n) for n in net.names]
        assert len(set(addrs)) == 3 and all(ipaddress.ip_address(a) in net.subnet for a in addrs)
        assert net.peer_of(net.address("p2")) == "p2"
        _listen_everywhere(net)
        assert _reach(net, "p1", "p2") == _reach(net, "p2", "w") == "ok"
        net.isolate("p1")
        # Dropped silently, as a partition does: a timeout, never a quick error.
        assert _reach(net, "p1", "p2") == _reach(net, "p2", "p1") == "TimeoutError"
        assert _reach(net, "p1", "w") == _reach(net, "p2", "w") == "ok"
        assert net.cuts() == [("p1", "p2"), ("p2", "p1")]
        net.heal_all()
        assert _reach(net, "p1", "p2") == "ok" and net.cuts() == []
        net.cut_one_way("p1", "p2", port=9000)
        assert (_reach(net, "p1", "p2"), _reach(net, "p2", "p1")) == ("TimeoutError", "ok")
        net.heal_one_way("p1", "p2", port=9000)
        assert _reach(net, "p1", "p2") == "ok"
        procs = list(net._procs.values())
    assert all(p.returncode is not None for p in procs)  # ended, by PID
    assert _leftovers(net) == ""


def test_everything_is_removed_when_the_block_raises():
    with pytest.raises(KeyboardInterrupt), NetRing(1) as net:
        proc = net.popen("p1", [sys.executable, "-c", "import time; time.sleep(60)"])
        raise KeyboardInterrupt
    assert proc.returncode is not None
    assert _leftovers(net) == ""


def test_an_ip_level_one_way_cut_stops_tcp_both_ways_within_a_retransmission():
    # p2 sends p1 200 bytes every 50 ms on one connection; then p1's packets
    # to p2 (its ACKs) are dropped. p1 still receives what was in flight and
    # one retransmission, then nothing: the cut is two-way for TCP.
    server = textwrap.dedent("""
        import socket, sys, time
        s = socket.socket(); s.bind((sys.argv[1], 9000)); s.listen(); print("ready", flush=True)
        c, _ = s.accept(); c.settimeout(0.1); t0 = time.monotonic(); got = []
        while time.monotonic() - t0 < 5:
            try:
                d = c.recv(65536)
            except TimeoutError:
                continue
            if not d:
                break
            got.append(time.monotonic() - t0)
        print(repr(got), flush=True)
    """)
    client = textwrap.dedent("""
        import socket, sys, time
        c = socket.create_connection((sys.argv[1], 9000)); t0 = time.monotonic()
        while time.monotonic() - t0 < 5:
            c.send(b"x" * 200); time.sleep(0.05)
    """)
    with NetRing(2) as net:
        srv = net.popen("p1", [sys.executable, "-c", server, net.address("p1")], stdout=subprocess.PIPE)
        assert srv.stdout is not None and srv.stdout.readline().strip() == b"ready"
        net.popen("p2", [sys.executable, "-c", client, net.address("p1")])
        time.sleep(1.5)
        net.cut_one_way("p1", "p2")
        cut_at = 1.5
        got = ast.literal_eval(srv.stdout.readline().decode())
        srv.stdout.close()
    before = [t for t in got if t < cut_at - 0.2]
    late = [t for t in got if t > cut_at + 1.5]
    assert len(before) >= 15, got  # the link worked: ~20 sends a second
    assert late == [], got         # and the data stopped well within 1.5 s of the cut
