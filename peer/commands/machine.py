"""What ``python -m peer --check --id ID`` asks of this machine: can that peer start here?

``peer.commands.check`` judges the config and ``peer.commands.preflight`` the
seed hosts; neither knows whether the peer itself can start on this
machine. A config that is valid everywhere fails here when:

1. its own secret key is missing or readable by others (``[ring]
   curve_keys``: ``<keys>/<id>.key_secret``, mode 0600, ring/io/curve.py) --
   the peer refuses to start;
2. its data directory cannot be created or written (a read-only mount, a
   directory of another user) or its filesystem has less than
   :data:`MIN_FREE_BYTES` free. Writing is tried for real (a temporary file
   made and removed): mode bits do not say it, since root writes through
   them and a read-only mount stops even root;
3. an address it listens on cannot be bound: the ring address it binds
   (:func:`ring_bind_address`: ``bind``, or the default its advertised
   ``address`` gives) and ``metrics_address``, either in use by another
   process or not an address of this machine.

Each failure is one line naming the key or path and what to do, and all of
them are said, not the first only (:func:`machine_problems`). The probe
binds and closes at once, with ``SO_REUSEADDR`` as libzmq's listener sets it,
so a port its own previous run left in TIME_WAIT is not reported busy; it
cannot see a port taken between ``--check`` and the start.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from peer.core.config.cluster import ClusterConfig, parse_address, parse_metrics_address
from ring.commandnames import spoken

__all__ = ["MIN_FREE_BYTES", "Local", "bind_problem", "local_of", "machine_problems", "ring_bind_address"]

#: Free bytes the data directory's filesystem must have for ``--check`` to pass. A
#: peer writes its results (pages.duckdb and its WAL), crawl state and Bloom filter
#: there, all growing with the crawl; this is a floor that catches a full or nearly
#: full disk, not a measured need: size a long crawl's disk from its own figures.
MIN_FREE_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class Local:
    """What one peer needs of the machine it runs on, each with the key that sets it."""

    peer_id: str
    data_dir: Path
    data_key: str      # "peer[0].data_dir", or "--data-dir" of a joiner
    ring: str          # the ring address it binds ("" for a solo peer: a loopback port of its choosing)
    ring_key: str
    metrics: str       # host:port, or ""
    metrics_key: str
    keys_dir: Path | None  # [ring] curve_keys, resolved; None without Curve


def ring_bind_address(cfg: ClusterConfig, peer_id: str, joining: str | None = None,
                      bind: str | None = None) -> str:
    """The address the peer ``peer_id`` binds its ring socket to (not the address it advertises).

    A listed peer's ``bind``, or the default its ``address`` gives
    (``peer.core.config.cluster.bind_address``); a joiner's ``--bind``, or
    the default of its ``--address`` (``ring.addresses.bind_address``).
    ``""`` for a solo peer without an address.
    """
    if joining is not None:
        from ring.addresses import bind_address

        return bind_address(joining, bind or "")
    from peer.core.config.cluster import bind_address as spec_bind

    return spec_bind(cfg.peer(peer_id))


def local_of(cfg: ClusterConfig, peer_id: str, *, joining: str | None = None, bind: str | None = None,
             data_dir: str | Path | None = None, metrics: str | None = None) -> Local:
    """What peer ``peer_id`` needs here; a joiner's addresses and data_dir come from its flags."""
    from ring.io.curve import resolve_keys_dir

    keys_dir = resolve_keys_dir(cfg.ring.curve_keys, cfg.path)
    ring = ring_bind_address(cfg, peer_id, joining, bind)
    if joining is not None:
        return Local(peer_id, Path(data_dir or ".").resolve(), "--data-dir", ring,
                     "--bind" if bind else "--address", metrics or "", "--metrics-address", keys_dir)
    index = next(i for i, p in enumerate(cfg.peers) if p.id == peer_id)
    spec = cfg.peers[index]
    return Local(peer_id, cfg.data_dir(peer_id), f"peer[{index}].data_dir", ring,
                 f"peer[{index}].{'bind' if spec.bind else 'address'}",
                 spec.metrics_address, f"peer[{index}].metrics_address", keys_dir)


def machine_problems(cfg: ClusterConfig, local: Local, *, min_free: int | None = None) -> list[str]:
    """One line per thing this machine lacks for ``local`` to start (module docstring); [] if none.

    ``min_free``: bytes the data directory's filesystem must have (default :data:`MIN_FREE_BYTES`).
    """
    where = str(cfg.path)
    min_free = MIN_FREE_BYTES if min_free is None else min_free
    out: list[str] = []
    if local.keys_dir is not None:
        out.extend(_secret_problem(cfg, local))
    out.extend(f"{where}: {line}" for line in _data_dir_problems(local, min_free))
    if local.ring:
        why = bind_problem(local.ring)
        if why is not None:
            out.append(f"{where}: {local.ring_key} {local.ring}: {why[0]}; {why[1]}")
    if local.metrics:
        host, port = parse_metrics_address(local.metrics)
        why = _probe(host, port)
        if why is not None:
            out.append(f"{where}: {local.metrics_key} {local.metrics}: {why[0]}; {why[1]}")
    return out


def _secret_problem(cfg: ClusterConfig, local: Local) -> list[str]:
    from ring.errors import RingError
    from ring.io.curve import SECRET_SUFFIX, CurveKeys

    assert local.keys_dir is not None
    secret = local.keys_dir / f"{local.peer_id}{SECRET_SUFFIX}"
    if not secret.exists():
        return [spoken(f"{secret}: no secret key for peer {local.peer_id} (ring.curve_keys of {cfg.path}): "
                       f"copy {secret.name} here from where the pairs were made (scp -p keeps its mode 0600), "
                       f"or make a pair: python scripts/keys.py --ring {cfg.path} --id {local.peer_id} (then "
                       f"copy {local.peer_id}.key to every machine)", sys.argv[0])]
    try:
        CurveKeys.load(local.keys_dir, local.peer_id)  # mode, format, both halves, every member's key
    except RingError as exc:
        return [f"ring.curve_keys: {exc}"]
    return []


def _data_dir_problems(local: Local, min_free: int) -> list[str]:
    d, key = local.data_dir, local.data_key
    existing = d
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return [f"{key} {d}: {existing} is a file, not a directory; point {key} elsewhere"]
    what = d if existing == d else existing
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ringcrawl-check-", dir=what)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        if exc.errno == errno.EROFS:
            fix = "remount it read-write, or point {key} at a writable filesystem"
        else:
            fix = "give the peer's user write access to it, or point {key} elsewhere"
        verb = "is not writable" if existing == d else f"cannot be created: {existing} is not writable"
        return [f"{key} {d}: {verb} ({exc.strerror or exc}); " + fix.format(key=key)]
    free = shutil.disk_usage(existing).free
    if free < min_free:
        return [f"{key} {d}: {free / 2**20:,.0f} MiB free on its filesystem, under the "
                f"{min_free / 2**20:,.0f} MiB a peer should start with; free some space, or point "
                f"{key} at a larger filesystem"]
    return []


def bind_problem(address: str) -> tuple[str, str] | None:
    """Why this machine cannot listen on the ring address ``address`` now, and what to do; None if it can.

    Also asked after a peer failed to start: zmq's error carries only a
    strerror, and the way out differs by errno.
    """
    try:
        host, port = parse_address(address, wildcard=True)
    except ValueError:
        return None  # an interface name: zmq's own text says it
    return _probe(host, port)


def _probe(host: str, port: int) -> tuple[str, str] | None:
    """Bind ``host:port`` and close it at once: (what is wrong, what to do), or None if it binds."""
    try:
        infos = socket.getaddrinfo(None if host in ("*", "") else host, port,
                                   type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as e:
        return f"{host} does not resolve ({e.strerror or e})", "correct the host name, or use an address"
    family, kind, proto, _, sockaddr = infos[0]
    try:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(sockaddr)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            return (f"port {port} is in use by another process",
                    "stop that process (another peer with this address?)")
        if e.errno == errno.EADDRNOTAVAIL:
            return (f"{host} is not an address of this machine",
                    "run this peer on the machine that has it")
        if e.errno == errno.EACCES:
            return f"port {port} needs privileges", "use a port above 1023"
        return str(e.strerror or e), "check the address"
    return None
