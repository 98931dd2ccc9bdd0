"""python -m ring status / leave: a ring it cannot ask is one line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ringharness import cluster_text

ROOT = Path(__file__).resolve().parent.parent


def ring_cmd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ring", *args], capture_output=True, text=True,
                          cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL, timeout=60)


def one_line(res: subprocess.CompletedProcess, status: int) -> str:
    assert res.returncode == status, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("error: ")
    return res.stderr.strip()


def test_status_of_a_ring_nobody_answers_is_one_line_and_exit_1(tmp_path):
    # Two free loopback ports with nothing behind them: connects are refused.
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 2))
    res = ring_cmd("status", "--ring", str(toml), "--timeout", "0.3")
    line = one_line(res, 1)
    assert "no peer of ring 'test' answered" in line and "are the peers running?" in line
    assert res.stdout == ""


def test_status_and_leave_of_a_missing_file_are_one_line_and_exit_2(tmp_path):
    for args in (("status",), ("leave", "--id", "p1")):
        res = ring_cmd(*args, "--ring", str(tmp_path / "none.toml"))
        assert one_line(res, 2) == f"error: {tmp_path / 'none.toml'}: no such file (pass --ring PATH to a cluster.toml)"


def test_a_missing_curve_key_inside_the_event_loop_is_one_line(tmp_path):
    # The tool's own pair is there but not p1's public key: the error is raised
    # inside trio.run, while asking p1.
    keys = tmp_path / "keys"
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "keys.py"), "--dir", str(keys),
                          "--id", "ops"], capture_output=True, text=True, timeout=60, env=os.environ)
    assert res.returncode == 0, res.stderr
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 2).replace('[ring]\n', f'[ring]\ncurve_keys = "{keys}"\n'))
    for args in (("status", "--timeout", "0.3"), ("leave", "--id", "p2", "--timeout", "1")):
        res = ring_cmd(*args, "--ring", str(toml))
        line = one_line(res, 2)
        assert f"{keys / 'p1.key'}: no such key file" in line


def test_bad_watch_count_and_timeout_values_are_one_line_and_exit_2(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    for args, expected in ((("--watch", "0"), "--watch: expected a number of seconds > 0"),
                           (("--watch", "1", "--count", "-1"), "--count: expected an integer >= 0"),
                           (("--timeout", "-1"), "--timeout: expected a number of seconds > 0")):
        res = ring_cmd("status", "--ring", str(toml), *args)
        assert one_line(res, 2) == f"error: {expected}"


def test_watch_of_a_silent_ring_keeps_asking_and_stops_after_count(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    res = ring_cmd("status", "--ring", str(toml), "--timeout", "0.2", "--watch", "0.2", "--count", "2")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("no peer of ring 'test' answered") == 2
    assert res.stdout.count("every 0.2s (Ctrl-C to stop)") == 2


async def test_status_of_a_one_peer_crawl_has_totals_units_and_watch(tmp_path):
    """A ring of one answers `ring status` on its address; the table has a totals row and units."""
    import json
    import re

    import trio
    from ringharness import Ring
    from localweb import SiteGraph, serve_webfarm

    graph = SiteGraph(hosts=3, pages_per_host=40, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        async with Ring(tmp_path, cluster_text(tmp_path, farm.port, 1, rate=300.0)) as ring:
            await ring.start("p1")
            with trio.fail_after(60):
                while sum(e.target != "/robots.txt" for e in farm.log) < 10:
                    assert ring.procs["p1"].returncode is None, ring.tails()
                    await trio.sleep(0.1)
                # Garbage and a message a solo peer does not take are data: dropped, counted.
                from peer.config import load_config
                from ring.messages import Ack, encode
                from ring.zmqio import SocketType, open_socket

                address = load_config(ring.toml).peers[0].address
                async with open_socket(SocketType.DEALER, connect=address, linger=1000) as sock:
                    await sock.send_multipart([b"\xc1 not msgpack"])
                    await sock.send_multipart([encode(Ack("test", "x", 0, 0))])
                await trio.sleep(0.5)
                table = await ring.ring_cmd("status")
                js = await ring.ring_cmd("status", "--json")
                watch = await ring.ring_cmd("status", "--watch", "0.3", "--count", "3")
                watch_json = await ring.ring_cmd("status", "--watch", "0.3", "--count", "2", "--json")
            ring.kill("p1", 15)
            await ring.wait("p1")
        nursery.cancel_scope.cancel()
    assert table.returncode == 0, table.stderr.decode()
    out = table.stdout.decode()
    lines = out.splitlines()
    head, row = lines[:2]
    total = next(x for x in lines if x.startswith("total "))
    assert head.split()[:4] == ["id", "state", "share", "pages"] and "pages/s" in head and "queued" in head
    assert row.split()[:3] == ["p1", "alive", "100.0%"]
    assert total.startswith("total") and "1 live" in total
    pages = int(row.split()[3].replace(",", ""))
    assert pages >= 10 and int(total.split()[4].replace(",", "")) == pages
    assert "pages/s: since the peer started; queued: URLs in its frontier" in out
    members = json.loads(js.stdout)["members"]
    assert [m["id"] for m in members] == ["p1"] and members[0]["share"] == 1.0
    assert {"errors", "busiest", "dropped"} <= set(members[0])
    assert members[0]["dropped"].get("unexpected_type") == 1, members[0]["dropped"]
    assert sum(members[0]["dropped"].get(k, 0) for k in ("not_msgpack", "malformed")) == 1
    assert "dropped: " in out
    assert members[0]["busiest"] and members[0]["busiest"][0][2] == 300.0  # host, pages/min, setpoint
    # --watch into a pipe: one table after another, each with its time.
    assert watch.returncode == 0, watch.stderr.decode()
    stamps = re.findall(r"ring 'test' at (\d\d:\d\d:\d\d), every 0.3s", watch.stdout.decode())
    assert len(stamps) == 3 and watch.stdout.decode().count("\ntotal ") == 3
    rounds = watch_json.stdout.decode().splitlines()
    assert len(rounds) == 2 and all(json.loads(x)["members"][0]["id"] == "p1" for x in rounds)
    assert ring.procs["p1"].returncode == 0, ring.tails()


def test_watch_on_a_terminal_redraws_in_place(tmp_path):
    import pty

    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    master, slave = pty.openpty()
    try:
        res = subprocess.run([sys.executable, "-m", "ring", "status", "--ring", str(toml), "--timeout", "0.2",
                              "--watch", "0.2", "--count", "2"], stdout=slave, stderr=subprocess.PIPE,
                             cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL, timeout=60)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the writer is gone and everything was read
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    assert res.returncode == 0, res.stderr
    # Cursor home and clear to the end of the screen (ECMA-48 CUP, ED) before each round.
    assert out.count(b"\x1b[H\x1b[J") == 2, out


def test_ctrl_c_ends_watch_quietly(tmp_path):
    import signal
    import time

    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    proc = subprocess.Popen([sys.executable, "-m", "ring", "status", "--ring", str(toml), "--timeout", "0.2",
                             "--watch", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL, text=True)
    try:
        first = proc.stdout.readline() + proc.stdout.readline()  # the first round is out
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "every 0.2s (Ctrl-C to stop)" in first
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_status_of_the_shipped_solo_config_says_it_has_no_address():
    # solo.toml's peer needs no address to crawl, so it listens nowhere:
    # status says what to set, not "no peer answered at ''".
    res = ring_cmd("status", "--ring", str(ROOT / "solo.toml"), "--timeout", "0.2")
    line = one_line(res, 1)
    assert "has an address to ask" in line and "[[peer]] address" in line, line
