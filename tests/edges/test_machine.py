"""``python -m peer --check --id ID`` says whether this machine can run that peer.

A config valid everywhere cannot start a peer here when its secret key is
missing, its data directory is read-only, a port it listens on is taken, or
its address belongs to another machine (peer/commands/machine.py). Each is
one ``error:`` line naming the key or path, all of them are said, and the
exit status is 2. Run in process (tests/support/clirun.py), as the user
would see the command.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clirun import Result, run_main
from ringharness import free_ports

from peer.commands.cli import main
from ring.io.curve import write_keypair
from ring.io.zap import curve_keypair


def check(toml: Path, peer_id: str) -> Result:
    return run_main(main, ["--ring", str(toml), "--check", "--id", peer_id])


def cluster(tmp_path: Path, *, address: str, data_dir: Path, metrics: str = "",
            curve_keys: str = "") -> Path:
    """A ring of two whose p1 is the peer checked; its one seed is out of scope (no request made)."""
    toml = tmp_path / "cluster.toml"
    toml.write_text(f"""
[ring]
name = "machine"
curve_keys = "{curve_keys}"

[[peer]]
id = "p1"
address = "{address}"
data_dir = "{data_dir}"
metrics_address = "{metrics}"

[[peer]]
id = "p2"
address = "tcp://127.0.0.1:{free_ports(1)[0]}"
data_dir = "{tmp_path / 'p2'}"
weight = 0.001

[crawl]
seeds = ["http://s001.web.test/"]
deny_hosts = ["*.web.test"]
""")
    return toml


@contextlib.contextmanager
def listening(port: int) -> Iterator[None]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        yield


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """``directory`` on a read-only bind mount of itself (root only: mode bits do not stop root)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only mount needs root and mount(8)")
    bound = subprocess.run(["mount", "--bind", str(directory), str(directory)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"mount --bind refused: {bound.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(directory)], check=True, capture_output=True)
        yield
    finally:
        subprocess.run(["umount", str(directory)], check=True, capture_output=True)


def errors(res: Result) -> list[str]:
    lines = res.stderr.splitlines()
    assert all(line.startswith("error: ") for line in lines), res.stderr
    return lines


def test_check_fails_with_one_line_each_for_a_missing_secret_a_read_only_data_dir_and_ports_in_use(tmp_path):
    data = tmp_path / "p1"
    data.mkdir()
    write_keypair(tmp_path / "keys", "p2", *curve_keypair())  # p1's pair is not on this machine
    ring_port, metrics_port = free_ports(2)
    toml = cluster(tmp_path, address=f"tcp://127.0.0.1:{ring_port}", data_dir=data,
                   metrics=f"127.0.0.1:{metrics_port}", curve_keys="keys")
    with read_only(data), listening(ring_port), listening(metrics_port):
        res = check(toml, "p1")
    assert res.returncode == 2, res
    secret, data_dir, ring, metrics = errors(res)
    assert f"{tmp_path / 'keys' / 'p1.key_secret'}: no secret key for peer p1" in secret
    assert "scripts/keys.py" in secret
    assert f"peer[0].data_dir {data}: is not writable (Read-only file system)" in data_dir
    assert "remount it read-write" in data_dir
    assert f"peer[0].address tcp://127.0.0.1:{ring_port}: port {ring_port} is in use" in ring
    assert f"peer[0].metrics_address 127.0.0.1:{metrics_port}: port {metrics_port} is in use" in metrics
    # The config itself is fine: --check still describes it.
    assert "ok: ring 'machine', 2 peer(s)" in res.stdout and "machine: ok" not in res.stdout


def test_check_fails_for_an_id_whose_address_is_not_on_this_machine(tmp_path):
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): no machine here has it.
    toml = cluster(tmp_path, address="tcp://192.0.2.7:5701", data_dir=tmp_path / "p1")
    res = check(toml, "p1")
    assert res.returncode == 2, res
    (line,) = errors(res)
    assert line == (f"error: {toml}: peer[0].address tcp://192.0.2.7:5701: 192.0.2.7 is not an address "
                    "of this machine; run this peer on the machine that has it")
    # The same file, for the peer whose address is here: ok, and the data_dir not made by a check.
    res = check(toml, "p2")
    assert res.returncode == 0, res.stderr
    assert f"machine: ok for p2: data_dir {tmp_path / 'p2'} writable, ring address tcp://127.0.0.1:" in res.stdout
    assert not (tmp_path / "p2").exists()


def test_check_says_a_secret_others_can_read_and_a_full_disk(tmp_path, monkeypatch):
    import peer.commands.machine as machine

    write_keypair(tmp_path / "keys", "p1", *curve_keypair())
    (tmp_path / "keys" / "p1.key_secret").chmod(0o644)
    toml = cluster(tmp_path, address=f"tcp://127.0.0.1:{free_ports(1)[0]}", data_dir=tmp_path / "a" / "p1",
                   curve_keys="keys")
    monkeypatch.setattr(machine, "MIN_FREE_BYTES", 1 << 62)  # more than any disk here has
    res = check(toml, "p1")
    assert res.returncode == 2, res
    secret, space = errors(res)
    assert "p1.key_secret: permissions 0644 are too open" in secret and "chmod 600" in secret
    assert f"peer[0].data_dir {tmp_path / 'a' / 'p1'}: " in space and "MiB free on its filesystem" in space


def test_check_without_id_on_a_ring_says_the_machine_was_not_checked(tmp_path):
    toml = cluster(tmp_path, address="tcp://192.0.2.7:5701", data_dir=tmp_path / "p1")
    res = run_main(main, ["--ring", str(toml), "--check"])
    assert res.returncode == 0, res.stderr
    assert "machine: not checked (pass --id" in res.stdout
