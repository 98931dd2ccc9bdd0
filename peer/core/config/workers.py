"""``[[peer]] workers = N``: one entry for the peers of one machine, expanded when cluster.toml is parsed.

A machine with several cores runs one peer a core (a peer is one trio event
loop: one core). Rather than N entries written out by hand, one entry says
``workers = N`` and stands for N peers. The rules:

1. An entry with ``workers = 1`` (the default) is one peer, as before.
2. An entry with ``workers = N > 1`` is the N peers ``<id>-0`` .. ``<id>-(N-1)``:
   - worker k is reached at the entry's ``address`` with its port + k, and
     listens at its ``bind`` (when set) with that port + k: every
     ``tcp://host:port`` key named in ``PORTED`` moves the same way;
   - ``metrics_address``, when set, also moves by k; port 0 (any free port)
     stays 0;
   - ``data_dir`` is ``<the entry's data_dir>/<k>`` (default ``data/<id>/<k>``);
   - each has the entry's ``weight``: a machine of N workers takes N times the
     ring share of one peer, as it has N cores to crawl with.
3. Every peer has a ``machine``: the entry's ``machine`` key, else the entry's
   id. The workers of one entry share it; entries on one machine written out
   by hand share it by saying so. Peers of one machine are one client to a
   site (docs/politeness.md, Per machine) and ``{machine}`` in a User-Agent
   is it (:func:`user_agent_for`).
4. The entry's id names the group: ``python -m peer --id <id>`` runs all its
   workers under one supervisor (peer/commands/supervise.py), ``--id <id>-k``
   runs worker k alone. A group id is never also a peer id: ids stay unique
   across peers and groups.

Pure: values in, values out; the loader (peer/core/config/cluster.py) calls
:func:`expand` on every entry and raises what it returns as a ConfigError.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from peer.core.config.sections import PeerSpec, parse_address, parse_metrics_address

__all__ = ["MACHINE_PLACEHOLDER", "PORTED", "PORTED_HOSTPORT", "expand", "groups", "machines", "user_agent_for",
           "worker_id"]

#: PeerSpec keys holding a ``tcp://host:port`` that each worker moves by its index,
#: and whether the key takes a wildcard host (a bind: ``*``, ``0.0.0.0``, ``[::]``).
PORTED: Mapping[str, bool] = {"address": False, "bind": True}

#: PeerSpec keys holding a ``host:port`` (metrics) that each worker moves by its index; port 0 stays 0.
PORTED_HOSTPORT: tuple[str, ...] = ("metrics_address",)

#: The text of crawl.user_agent replaced by the peer's machine.
MACHINE_PLACEHOLDER = "{machine}"


def worker_id(entry_id: str, k: int) -> str:
    """The id of worker ``k`` of the entry ``entry_id``."""
    return f"{entry_id}-{k}"


def expand(spec: PeerSpec) -> tuple[tuple[PeerSpec, ...], tuple[str, str] | None]:
    """The peers an entry stands for, or ``((), (key, expected))`` naming what is wrong.

    ``spec.data_dir`` must already be resolved (absolute, or as the caller wants it).
    """
    machine = spec.machine or spec.id
    n = spec.workers
    if n == 1:
        return (dataclasses.replace(spec, machine=machine),), None
    last = worker_id(spec.id, n - 1)
    if len(last) > 64:
        return (), ("id", f"an id of at most {64 - len(last) + len(spec.id)} characters with "
                          f"workers = {n} (its workers' ids, such as {last!r}, must fit in 64)")
    moved: dict[str, list[str]] = {}
    for key, wildcard in PORTED.items():
        value = getattr(spec, key)
        if not value:
            continue
        host, port = parse_address(value, wildcard=wildcard)
        if port + n - 1 > 65535:
            return (), (key, f"a port of at most {65536 - n} with workers = {n} (worker k listens on port + k)")
        moved[key] = [f"tcp://{_host(host)}:{port + k}" for k in range(n)]
    for key in PORTED_HOSTPORT:
        value = getattr(spec, key)
        if not value:
            continue
        host, port = parse_metrics_address(value)
        if port + n - 1 > 65535:
            return (), (key, f"a port of at most {65536 - n} with workers = {n} (worker k serves on port + k)")
        moved[key] = [f"{_host(host)}:{port + k if port else 0}" for k in range(n)]
    out = []
    for k in range(n):
        fields: dict[str, Any] = {key: values[k] for key, values in moved.items()}
        fields.update(id=worker_id(spec.id, k), data_dir=f"{spec.data_dir.rstrip('/')}/{k}",
                      workers=1, machine=machine)
        out.append(dataclasses.replace(spec, **fields))
    return tuple(out), None


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def machines(peers: Iterable[PeerSpec]) -> dict[str, str]:
    """Peer id -> its machine, for the listed peers."""
    return {p.id: p.machine or p.id for p in peers}


def user_agent_for(agent: str, machine: str) -> str:
    """``agent`` with ``{machine}`` replaced by this peer's machine (the only placeholder)."""
    return agent.replace(MACHINE_PLACEHOLDER, machine)


def groups(entries: Iterable[tuple[str, tuple[PeerSpec, ...]]]) -> Mapping[str, tuple[str, ...]]:
    """Entry id -> its workers' ids, for the entries of more than one worker."""
    return {entry: tuple(p.id for p in peers) for entry, peers in entries if len(peers) > 1}
