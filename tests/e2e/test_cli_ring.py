"""python -m ring status / leave / forget: a ring it cannot ask is one line, never a traceback.

The commands run in this process (tests/support/clirun.py: ``ring.tools.cli.main`` with the
``ConfigSource`` that ``ring/__main__.py`` builds), stdout, stderr and exit
status judged as a user sees them; ``python -m ring`` itself runs as a
process once, for a real Ctrl-C, and the status of a live crawl asks a real
peer process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import Result, ring_main, run_main
from ringharness import cluster_text

from ring.hashring import HashRing

ROOT = Path(__file__).resolve().parents[2]


def ring_cmd(*args: str, stdout_tty: bool = False) -> Result:
    return ring_main(args, stdout_tty=stdout_tty)


def one_line(res: Result, status: int) -> str:
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
    for args in (("status",), ("leave", "--id", "p1"), ("forget", "--id", "p1")):
        res = ring_cmd(*args, "--ring", str(tmp_path / "none.toml"))
        assert one_line(res, 2) == f"error: {tmp_path / 'none.toml'}: no such file (pass --ring PATH to a cluster.toml)"


def test_a_missing_curve_key_inside_the_event_loop_is_one_line(tmp_path):
    # The tool's own pair is there but not p1's public key: the error is raised
    # inside trio.run, while asking p1.
    keys = tmp_path / "keys"
    from ring.__main__ import keys_main  # scripts/keys.py, ringcrawl-keys

    made = run_main(keys_main, ["--dir", str(keys), "--id", "ops"])
    assert made.returncode == 0, made.stderr
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 2).replace('[ring]\n', f'[ring]\ncurve_keys = "{keys}"\n'))
    for args in (("status", "--timeout", "0.3"), ("leave", "--id", "p2", "--timeout", "1"),
                 ("forget", "--id", "p2", "--timeout", "0.3")):
        res = ring_cmd(*args, "--ring", str(toml))
        line = one_line(res, 2)
        # Every seed is asked at once: p1's or p2's key is missed first.
        assert any(f"{keys / k}: no such key file" in line for k in ("p1.key", "p2.key")), line


def test_bad_watch_count_and_timeout_values_are_one_line_and_exit_2(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    for args, expected in ((("--watch", "0"), "--watch: expected a number of seconds > 0"),
                           (("--watch", "1", "--count", "-1"), "--count: expected an integer >= 0"),
                           (("--timeout", "-1"), "--timeout: expected a number of seconds > 0")):
        res = ring_cmd("status", "--ring", str(toml), *args)
        assert one_line(res, 2) == f"error: {expected}"


def test_forget_with_a_bad_timeout_or_id_is_one_line_and_exit_2(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 2))
    res = ring_cmd("forget", "--ring", str(toml), "--id", "p2", "--timeout", "0")
    assert one_line(res, 2) == "error: --timeout: expected a number of seconds > 0"
    res = ring_cmd("forget", "--ring", str(toml), "--id", " ")
    assert one_line(res, 2) == "error: --id: expected a member id"


def test_forget_in_a_ring_nobody_answers_says_so_per_peer_and_exits_1(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 2))
    res = ring_cmd("forget", "--ring", str(toml), "--id", "p2", "--timeout", "0.3")
    assert res.returncode == 1 and res.stderr == "", res.stderr
    assert res.stdout.splitlines() == [
        "p1         no answer",
        "p2         no answer: as expected of a dead peer",
        "no peer answered: p2 is not forgotten; are the peers running?",
    ]


async def test_a_ring_of_two_pauses_when_one_dies_and_ring_forget_lets_the_other_finish(tmp_path):
    """The survivor of a ring of two has no majority (1 of 2) and starts no
    request until `python -m ring forget` drops the dead peer from its quorum;
    asked while both run, every peer refuses (the survivor: alive in its view;
    the victim: itself)."""
    import json

    import trio

    from localweb import SiteGraph, serve_webfarm
    from ringharness import Ring, busiest_peer, pages_fetched

    # 8 hosts of 15 pages at 4 a second a host: the crawl is far from over when
    # the victim dies (at 15 pages of about 150), and the survivor is the peer
    # that owns the most hosts, so it surely has work left to pause (the
    # placement moves with the port): it crawls at most 16 pages a second for
    # the 1.5 s its lease lasts. What it crawls after the forget only shows it
    # went on: 30 pages a host made that 12 s of the test's 25.
    graph = SiteGraph(hosts=8, pages_per_host=15, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        alive = busiest_peer(graph, farm.port, ["p1", "p2"])
        dead = "p2" if alive == "p1" else "p1"
        async with Ring(tmp_path, cluster_text(tmp_path, farm.port, 2, rate=240.0)) as ring:
            with trio.fail_after(120):
                for p in ("p1", "p2"):
                    await ring.start_in_process(nursery, p)
                while pages_fetched(farm) < 15:
                    await trio.sleep(0.05)
                refused = await ring.ring_cmd("forget", "--id", dead, "--timeout", "1")
                survivor_log = ring.logs[alive][1]
                at_kill = len(survivor_log.read_text())
                ring.procs[dead].kill()
                # The survivor finds the victim dead, then pauses: no majority of two.
                # Its log says when the victim is dead (read every 0.1 s; a `ring
                # status` a try cost a process start each, from the kill on); then
                # `ring status` is asked until the pause shows, a ring change's
                # grace first.
                while f"member {dead}: dead" not in survivor_log.read_text()[at_kill:]:
                    assert ring.procs[alive].returncode is None, ring.tails()
                    await trio.sleep(0.1)
                while True:
                    assert ring.procs[alive].returncode is None, ring.tails()
                    st = await ring.ring_cmd("status", "--json")
                    rows = {m["id"]: m for m in json.loads(st.stdout or '{"members": []}')["members"]}
                    me = rows.get(alive)
                    if me is not None and me["lease"] == "no_majority" and rows[dead]["state"] == "dead":
                        break
                    await trio.sleep(0.3)
                paused = await ring.ring_cmd("status")
                before = pages_fetched(farm)
                await trio.sleep(1.0)
                still = pages_fetched(farm)
                forgot = await ring.ring_cmd("forget", "--id", dead, "--timeout", "1")
                await ring.wait(alive)
            code = ring.procs[alive].returncode
            tail = ring.tails()
            log = ring.logs[alive][1].read_text()
        nursery.cancel_scope.cancel()
    assert refused.returncode == 1, refused.stderr
    lines = dict(line.split(None, 1) for line in refused.stdout.decode().splitlines()[:2])
    assert lines[alive].startswith(f"refused: {dead} is alive in its view"), lines
    assert lines[dead] == f"refused: this is {dead}, and it is running"
    assert refused.stdout.decode().splitlines()[2] == (
        f"{dead} is not forgotten everywhere: 2 of 2 peers that answered refused")
    assert me["vouched"] == 1 and me["needed"] == 2 and me["quorum"] == 2
    row = next(x for x in paused.stdout.decode().splitlines() if x.startswith(f"{alive} "))
    assert row.split()[1:4] == ["alive", "no-majority", "1/2/2"], row
    assert still == before  # paused: no request starts
    assert "paused: no majority (1 of 2 vouch, 2 needed)" in log  # the progress line
    assert "partition: no majority of the ring" in log
    assert forgot.returncode == 0, (forgot.stdout, forgot.stderr)
    assert sorted(forgot.stdout.decode().splitlines()[:2]) == sorted([
        f"{alive:<10} forgotten: dropped from its view and its quorum",
        f"{dead:<10} no answer: as expected of a dead peer"])
    assert forgot.stdout.decode().splitlines()[2] == (
        f"{dead} is out of every view that answered (1 forgot it, 0 did not know it)")
    assert f"forget requested by ring-forget: {dead} (dead, incarnation" in log
    assert "partition over: a majority again (1 of 1)" in log
    assert code == 0, tail
    assert pages_fetched(farm) > still  # it went on, and finished


def test_watch_of_a_silent_ring_keeps_asking_and_stops_after_count(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    res = ring_cmd("status", "--ring", str(toml), "--timeout", "0.2", "--watch", "0.2", "--count", "2")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("no peer of ring 'test' answered") == 2
    assert res.stdout.count("every 0.2s (Ctrl-C to stop)") == 2


def test_status_of_a_one_peer_crawl_has_totals_units_and_watch(tmp_path):
    """A ring of one answers `ring status` on its address; the table has a totals row and units.

    The peer is a real process (its zmq ROUTER answers between processes);
    the local web and the ring commands run in this process.
    """
    import json
    import re
    import time

    import trio

    from clirun import web_thread
    from peer.state.configfile import load_config
    from ring.messages import Ack, encode
    from ring.io.zmqio import SocketType, open_socket

    with web_thread(hosts=3, pages=40, links=8, shop=False) as web:
        toml = tmp_path / "cluster.toml"
        toml.write_text(cluster_text(tmp_path, web.port, 1, rate=300.0))
        err = tmp_path / "p1.err"
        with err.open("wb") as ferr:
            peer = subprocess.Popen([sys.executable, "-m", "peer", "--ring", str(toml), "--id", "p1",
                                     "--progress", "1"], stdout=subprocess.DEVNULL, stderr=ferr,
                                    stdin=subprocess.DEVNULL, env=os.environ)
        try:
            deadline = time.monotonic() + 60
            while sum(e.target != "/robots.txt" for e in web.requests()) < 10:
                assert peer.poll() is None, err.read_text()[-2000:]
                assert time.monotonic() < deadline, err.read_text()[-2000:]
                time.sleep(0.1)
            # Garbage and a message a solo peer does not take are data: dropped, counted.
            address = load_config(toml).peers[0].address

            async def send_garbage() -> None:
                async with open_socket(SocketType.DEALER, connect=address, linger=1000) as sock:
                    await sock.send_multipart([b"\xc1 not msgpack"])
                    await sock.send_multipart([encode(Ack("test", "x", 0, 0))])

            trio.run(send_garbage)
            args = ("--ring", str(toml))
            # The peer counts them as its ROUTER reads them: ask until they are in.
            for _ in range(50):
                js = ring_cmd("status", "--json", *args)
                assert js.returncode == 0, js.stderr
                if sum(json.loads(js.stdout)["members"][0]["drops"].values()) >= 2:
                    break
                time.sleep(0.1)
            table = ring_cmd("status", *args)
            watch = ring_cmd("status", "--watch", "0.1", "--count", "3", *args)
            watch_json = ring_cmd("status", "--watch", "0.1", "--count", "2", "--json", *args)
            peer.send_signal(signal.SIGTERM)
            assert peer.wait(timeout=60) == 0, err.read_text()[-2000:]
        finally:
            if peer.poll() is None:
                peer.kill()
                peer.wait()
    assert table.returncode == 0, table.stderr
    out = table.stdout
    lines = out.splitlines()
    head, row = lines[:2]
    total = next(x for x in lines if x.startswith("total "))
    assert head.split()[:7] == ["id", "state", "lease", "vouch", "ring", "share", "pages"]
    assert "pages/s" in head and "queued" in head
    # Alone, a peer holds its own lease (1 of 1) on a ring of itself.
    assert row.split()[:4] == ["p1", "alive", "held", "1/1/1"] and row.split()[4].startswith("v0:")
    assert row.split()[5] == "100.0%"
    assert total.startswith("total") and "1 live" in total and "1 held" in total and "1 ring " in total
    pages = int(row.split()[6].replace(",", ""))
    assert pages >= 10 and int(total.split()[8].replace(",", "")) == pages
    assert "pages/s: since the peer started; queued: URLs in its frontier" in out
    members = json.loads(js.stdout)["members"]
    assert [m["id"] for m in members] == ["p1"] and members[0]["share"] == 1.0
    assert {"pages", "failed", "not_requested", "drops", "counters", "busiest"} <= set(members[0])
    assert (members[0]["lease"], members[0]["vouched"], members[0]["needed"]) == ("held", 1, 1)
    assert len(members[0]["ring_fingerprint"]) == 16
    assert members[0]["drops"].get("unexpected_type") == 1, members[0]["drops"]
    assert sum(members[0]["drops"].get(k, 0) for k in ("not_msgpack", "malformed")) == 1
    assert "drops: " in out
    assert members[0]["busiest"] and members[0]["busiest"][0][2] == 300.0  # host, pages/min, setpoint
    # --watch into a pipe: one table after another, each with its time.
    assert watch.returncode == 0, watch.stderr
    stamps = re.findall(r"ring 'test' at (\d\d:\d\d:\d\d), every 0.1s", watch.stdout)
    assert len(stamps) == 3 and watch.stdout.count("\ntotal ") == 3
    rounds = watch_json.stdout.splitlines()
    assert len(rounds) == 2 and all(json.loads(x)["members"][0]["id"] == "p1" for x in rounds)


def test_watch_on_a_terminal_redraws_in_place(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    res = ring_cmd("status", "--ring", str(toml), "--timeout", "0.2", "--watch", "0.2", "--count", "2",
                   stdout_tty=True)
    assert res.returncode == 0, res.stderr
    # Cursor home and clear to the end of the screen (ECMA-48 CUP, ED) before each round.
    assert res.stdout.count("\x1b[H\x1b[J") == 2, res.stdout
    assert not res.stdout.startswith("\n")  # not the pipe's form


def _signal_at(monkeypatch, owner: object, name: str, call: int) -> list[int]:
    """Raise SIGINT inside the ``call``-th call of ``owner.name`` (its Python handler runs there)."""
    calls = [0]
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == call:
            signal.raise_signal(signal.SIGINT)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)
    return calls


@pytest.mark.parametrize("where", ["recv", "watcher task", "socket close", "sleep between rounds",
                                   "print"])
def test_ctrl_c_at_any_point_of_a_round_ends_watch_quietly(tmp_path, monkeypatch, where):
    """SIGINT in the second round, at each kind of place a round spends its time.

    Before ring.tools.cli caught SIGINT with a signal receiver, trio raised
    KeyboardInterrupt where it landed: in the socket's watcher task it came
    out as an exception group (a traceback), in the socket's close() as
    "Nursery stack corrupted". --count bounds the run if Ctrl-C is lost.
    """
    import builtins

    import trio
    import zmq

    import ring.io.zmqio

    owner, name = {"recv": (zmq.Socket, "recv_multipart"),
                   "watcher task": (ring.io.zmqio, "wait_readable"),
                   "socket close": (zmq.Socket, "close"),
                   "sleep between rounds": (trio, "sleep_until"),
                   "print": (builtins, "print")}[where]
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    # Count the calls of one round and of two, then signal at the first call after round 1.
    counted = []
    for rounds in (1, 2):
        calls = _signal_at(monkeypatch, owner, name, 10**9)
        assert ring_cmd("status", "--ring", str(toml), "--timeout", "0.05", "--watch", "0.05",
                        "--count", str(rounds)).returncode == 0
        counted.append(calls[0])
        monkeypatch.undo()
    assert counted[1] > counted[0], f"{where}: not called after the first round"
    _signal_at(monkeypatch, owner, name, counted[0] + 1)
    res = ring_cmd("status", "--ring", str(toml), "--timeout", "0.05", "--watch", "0.05", "--count", "6")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "KeyboardInterrupt" not in res.stderr, res.stderr
    assert res.stderr == "\n"  # ends the terminal's ^C line, nothing else
    assert 1 <= res.stdout.count("(Ctrl-C to stop)") <= 2, res.stdout


@pytest.mark.parametrize("where", ["watcher task", "socket close"])
def test_ctrl_c_during_leave_ends_the_wait_in_one_line(tmp_path, monkeypatch, where):
    """Ctrl-C while ``ring leave`` waits: one line saying the wait ended, exit 1, no traceback.

    KeyboardInterrupt landing in the socket's watcher task came out of
    trio.run as an exception group; landing in its close() it left the
    socket's nursery open. Both now end the wait the same way.
    """
    import ring.io.zmqio
    import zmq

    owner, name = {"watcher task": (ring.io.zmqio, "wait_readable"),
                   "socket close": (zmq.Socket, "close")}[where]
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    calls = _signal_at(monkeypatch, owner, name, 1)
    res = ring_cmd("leave", "--ring", str(toml), "--id", "p1", "--timeout", "5")
    assert calls[0] >= 1, f"{where}: never reached"
    assert "Traceback" not in res.stderr and "KeyboardInterrupt" not in res.stderr, res.stderr
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip().splitlines() == [
        "interrupted: stopped waiting for p1, which goes on leaving if it got the request; "
        "see `python -m ring status`"], res.stderr


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


def shipped_solo(tmp_path: Path) -> Path:
    """solo.toml as shipped, in its own directory: its data_dir (data/solo) is relative to it."""
    toml = tmp_path / "solo.toml"
    toml.write_text((ROOT / "solo.toml").read_text())
    return toml


def test_status_and_dashboard_of_a_solo_peer_not_running_say_where_and_how_to_start_it(tmp_path):
    # solo.toml's peer has no address: the tools look in its data_dir, and
    # with nothing recorded there say so, not "are the peers running?".
    toml = shipped_solo(tmp_path)
    expected = (f"error: solo peer 'solo' of ring 'solo' is not running: no status address recorded in "
                f"{tmp_path / 'data' / 'solo'}; start it with: python -m peer --ring {toml}")
    for args in (("status",), ("status", "--json")):
        res = ring_cmd(*args, "--ring", str(toml), "--timeout", "0.2")
        assert one_line(res, 1) == expected, args
        assert res.stdout == "", args


def test_the_dashboard_of_a_solo_peer_starts_before_the_crawl_and_says_it_is_not_running(tmp_path):
    # A user opens the dashboard, then starts the crawl: it refused to start
    # ("is not running") and had to be run again after the peer.
    import html
    import time

    import httpx

    toml = shipped_solo(tmp_path)
    said = (f"solo peer 'solo' of ring 'solo' is not running: no status address recorded in "
            f"{tmp_path / 'data' / 'solo'}; start it with: python -m peer --ring {toml}")
    dash = subprocess.Popen([sys.executable, "-m", "ring", "dashboard", "--ring", str(toml), "--port", "0",
                             "--interval", "0.2", "--timeout", "0.2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=os.environ, text=True, cwd=ROOT)
    try:
        line = dash.stdout.readline()
        assert line.startswith("dashboard: http://127.0.0.1:"), (line, dash.poll())
        url = line.split()[1]
        deadline = time.monotonic() + 30
        while said not in html.unescape(page := httpx.get(url + "fragment", timeout=5).text):
            assert time.monotonic() < deadline, page
            time.sleep(0.1)
        assert dash.poll() is None  # still serving, polling for the peer
        dash.send_signal(signal.SIGINT)
        _, err = dash.communicate(timeout=30)
    finally:
        if dash.poll() is None:
            dash.kill()
            dash.communicate(timeout=30)
    assert dash.returncode == 0, err
    assert f"{said}; the dashboard polls until it answers" in err and "Traceback" not in err


def test_a_status_address_left_by_a_killed_solo_peer_is_not_running_at_once(tmp_path):
    import time

    from peer.state.statusaddress import StatusAddress, write_status_address
    from localweb.processes.peerrun import free_ports

    toml = shipped_solo(tmp_path)
    data_dir = tmp_path / "data" / "solo"
    data_dir.mkdir(parents=True)
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, timeout=60, check=True)
    address = f"tcp://127.0.0.1:{free_ports(1)[0]}"
    write_status_address(data_dir, StatusAddress(address, int(ended.stdout), time.time() - 60))
    began = time.monotonic()
    res = ring_cmd("status", "--ring", str(toml), "--timeout", "30")
    assert time.monotonic() - began < 10  # told by its process, not by waiting 30 s for an answer
    assert one_line(res, 1) == (
        f"error: solo peer 'solo' of ring 'solo' is not running: the status address in {data_dir} "
        f"({address}) was left by process {int(ended.stdout)}, which is gone (killed or crashed); "
        f"start it with: python -m peer --ring {toml}")
    # A process that exists but does not answer there: asked, and said within the timeout.
    write_status_address(data_dir, StatusAddress(address, os.getpid(), time.time()))
    res = ring_cmd("status", "--ring", str(toml), "--timeout", "0.3")
    assert one_line(res, 1) == (
        f"error: solo peer 'solo' of ring 'solo' did not answer within 0.3s at {address}, the address "
        f"it recorded in {data_dir}: it is not running or is stopped; start it with: "
        f"python -m peer --ring {toml}")


def test_a_solo_peer_without_an_address_is_watched_by_status_and_dashboard(tmp_path):
    """solo.toml's peer, a real process, answers `ring status` and the dashboard at the
    address it recorded in its data_dir; once it exits, or is killed, they say it is not running."""
    import html
    import json
    import time

    import httpx

    from clirun import web_thread

    data_dir = tmp_path / "data" / "solo"
    record = data_dir / "status-address.json"
    with web_thread(hosts=3, pages=40, links=8, shop=False) as web:
        toml = tmp_path / "solo.toml"
        toml.write_text(f"""
[ring]
name = "solo"

[[peer]]
id = "solo"
data_dir = "data/solo"

[crawl]
seeds = ["http://s001.web.test:{web.port}/"]
allow_hosts = ["*.web.test"]
allow_private = true

[politeness]
rate = 300.0

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
""")
        args = ("--ring", str(toml))
        procs: list[subprocess.Popen] = []

        def start(*flags: str) -> subprocess.Popen:
            with (tmp_path / "peer.err").open("ab") as ferr:
                proc = subprocess.Popen([sys.executable, "-m", "peer", *args, *flags],
                                        stdout=subprocess.DEVNULL, stderr=ferr, stdin=subprocess.DEVNULL,
                                        env=os.environ)
            procs.append(proc)
            return proc

        def wait_for(what, proc: subprocess.Popen, limit: float = 60.0) -> None:
            deadline = time.monotonic() + limit
            while not what():
                assert proc.poll() is None, (tmp_path / "peer.err").read_text()[-2000:]
                assert time.monotonic() < deadline, (tmp_path / "peer.err").read_text()[-2000:]
                time.sleep(0.1)

        def pages() -> int:
            return sum(e.target != "/robots.txt" for e in web.requests())

        try:
            peer = start()
            wait_for(lambda: record.exists() and pages() >= 10, peer)
            recorded = json.loads(record.read_text())
            js = ring_cmd("status", "--json", *args)
            table = ring_cmd("status", *args)
            # `ring seed add` finds it where `status` does; a new host's page is fetched.
            added = f"http://s050.web.test:{web.port}/"
            seed = ring_cmd("seed", "add", added, "ftp://x.web.test/", *args)
            wait_for(lambda: any(e.host == "s050.web.test" for e in web.requests()), peer)
            dash = subprocess.Popen([sys.executable, "-m", "ring", "dashboard", *args, "--port", "0",
                                     "--interval", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, env=os.environ, text=True, cwd=ROOT)
            procs.append(dash)
            url = dash.stdout.readline().split()[1]  # "dashboard: http://127.0.0.1:PORT/ (...)"

            def fragment() -> str:
                return httpx.get(url + "fragment", timeout=5).text

            deadline = time.monotonic() + 30
            while 'data-id="solo"' not in (live := fragment()):
                assert time.monotonic() < deadline, live
                time.sleep(0.1)
            peer.send_signal(signal.SIGTERM)
            assert peer.wait(timeout=60) == 0, (tmp_path / "peer.err").read_text()[-2000:]
            left_behind = record.exists()
            after_exit = ring_cmd("status", *args)
            seed_after_exit = ring_cmd("seed", "add", added, *args)
            deadline = time.monotonic() + 30
            while "is not running" not in (gone := fragment()):
                assert time.monotonic() < deadline, gone
                time.sleep(0.1)
            dash.send_signal(signal.SIGINT)
            _, dash_err = dash.communicate(timeout=30)
            assert dash.returncode == 0, dash_err
            # Again, and killed: the record it leaves is told stale.
            peer = start("--fresh", "--yes")
            wait_for(record.exists, peer)
            again = json.loads(record.read_text())
            peer.kill()
            peer.wait(timeout=30)
            after_kill = ring_cmd("status", *args)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                proc.communicate(timeout=30)  # reaped, its pipes closed
    assert recorded["address"].startswith("tcp://127.0.0.1:") and recorded["pid"] == procs[0].pid
    assert js.returncode == 0, js.stderr
    (member,) = json.loads(js.stdout)["members"]
    assert (member["id"], member["state"], member["share"]) == ("solo", "alive", 1.0)
    assert member["pages"] >= 10 and member["address"] == recorded["address"]
    assert table.returncode == 0, table.stderr
    row = table.stdout.splitlines()[1].split()
    assert row[:4] == ["solo", "alive", "held", "1/1/1"] and row[-1] == recorded["address"]
    assert "<td>solo</td>" in live and "are the peers running?" not in gone
    assert html.unescape(gone).count(f"no status address recorded in {data_dir}") == 1
    assert seed.returncode == 0, seed.stderr
    assert "routed   1: queued 1" in seed.stdout and "refused  1: invalid 1" in seed.stdout, seed.stdout
    assert one_line(seed_after_exit, 1) == (f"error: peer solo is not running (no status address recorded in "
                                            f"{data_dir}); start it with: python -m peer --ring {toml}")
    assert not left_behind  # the clean exit removed its record
    assert one_line(after_exit, 1).startswith(
        f"error: solo peer 'solo' of ring 'solo' is not running: no status address recorded in {data_dir}")
    assert again["pid"] == procs[-1].pid
    assert one_line(after_kill, 1).startswith(
        f"error: solo peer 'solo' of ring 'solo' is not running: the status address in {data_dir} "
        f"({again['address']}) was left by process {again['pid']}, which is gone")



def test_output_into_a_pipe_its_reader_closed_ends_quietly(tmp_path):
    # `python -m ring table --ring cluster.toml | head -1`: head leaves after
    # its line; the rest must go nowhere, without a BrokenPipeError traceback.
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 3))
    proc = subprocess.Popen([sys.executable, "-m", "ring", "table", "--ring", str(toml), "--sample", "1000"],
                            cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err


# -- python -m ring table: the shares and owners of cluster.toml's ring (ring.hashring) --------------


def test_ring_table_command_prints_shares_and_seed_owner():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    res = subprocess.run(
        [sys.executable, "-m", "ring", "table", "--ring", "cluster.toml", "--host", "Example.COM:8080"],
        capture_output=True, text=True, cwd=root, timeout=60,
    )
    assert res.returncode == 0, res.stderr
    ring = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0})  # cluster.toml's three peers
    shares = ring.shares()
    for p in ("p1", "p2", "p3"):
        assert f"{shares[p]:.1%}" in res.stdout
    assert f"s001.web.test:8080                       {ring.owner('s001.web.test:8080')}" in res.stdout
    assert f"example.com:8080                         {ring.owner('example.com:8080')}" in res.stdout


def test_ring_table_bad_config_is_one_line(tmp_path):
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "ring", "table", "--ring", str(tmp_path / "none.toml")],
        capture_output=True, text=True, timeout=60,
    )
    assert res.returncode == 2 and res.stderr.startswith("error: ") and res.stderr.count("\n") == 1
