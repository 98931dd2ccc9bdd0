"""scripts/demo's ports: which ones a run uses, whether they are free, and its cluster.toml.

The demo serves the site graph where CONFIG's first seed points (8080 for
the shipped cluster.toml) and starts CONFIG's peers on their addresses.
``--port N`` moves the web to N; ``--port 0`` picks free ports for the web
and for every peer. Either way every port is checked *before* the demo
empties its output directory, so a busy port costs nothing:
``scripts/demo`` runs ``python -m localweb.demo`` first and stops on exit 2.

When the ports differ from CONFIG's, the run gets its own cluster.toml
(:func:`run_config`): CONFIG's text with the peers' addresses, the seeds'
port, the peers' data_dir (OUT/<id>, so the run leaves CONFIG's data
alone) and a relative curve_keys rewritten, comments kept.
"""

from __future__ import annotations

import argparse
import errno
import re
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from localweb.processes.peerrun import free_ports
from peer.core.config.cluster import ClusterConfig, parse_address, parse_config
from peer.state.configfile import load_config
from peer.errors import ConfigError

__all__ = ["DemoError", "Plan", "busy", "main", "plan", "run_config"]


class DemoError(Exception):
    """A port is busy or the config cannot be rewritten: one line for the user."""


@dataclass(frozen=True, slots=True)
class Plan:
    """The ports of one demo run: the web's, and each peer's address (id -> tcp://host:port)."""

    web_port: int
    addresses: Mapping[str, str]
    seed_port: int            # the port CONFIG's seeds point at
    picked: bool              # True: the ports were picked free, not asked for

    def rewrites(self, cfg: ClusterConfig) -> bool:
        """Does the run need a cluster.toml of its own?"""
        return self.web_port != self.seed_port or any(
            p.address != self.addresses[p.id] for p in cfg.peers)


def seed_port(cfg: ClusterConfig) -> int:
    """The port of CONFIG's first seed: where the demo's web must listen."""
    if not cfg.crawl.seeds:
        raise DemoError(f"{cfg.path}: crawl.seeds is empty; the demo serves its web where the first seed points")
    url = urlsplit(cfg.crawl.seeds[0])
    return url.port or (443 if url.scheme == "https" else 80)


def plan(cfg: ClusterConfig, port: int | None) -> Plan:
    """The run's ports: CONFIG's, the web moved to ``port``, or all free when ``port`` is 0."""
    old = seed_port(cfg)
    if port == 0:
        ports = free_ports(1 + len(cfg.peers))
        addresses = {p.id: f"tcp://{_bracket(parse_address(p.address)[0])}:{q}"
                     for p, q in zip(cfg.peers, ports[1:])}
        return Plan(ports[0], addresses, old, True)
    return Plan(old if port is None else port, {p.id: p.address for p in cfg.peers}, old, False)


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def busy(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on now (e.g. "address already in use"), or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        # As the web (trio) and zmq do: a port held only by TIME_WAIT is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0" if host == "*" else host, port))
        except OSError as exc:
            return (exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))).lower()
    return None


def check(cfg: ClusterConfig, p: Plan) -> None:
    """DemoError naming the first busy port of the run, and what to do."""
    wanted = [("the local web", "127.0.0.1", p.web_port)]
    wanted += [(f"peer {i}", *parse_address(a)) for i, a in p.addresses.items()]
    for who, host, port in wanted:
        why = busy(host, port)
        if why is not None:
            raise DemoError(f"{host}:{port}, where {who} must listen, is busy ({why}); nothing was "
                            "changed: stop what holds it, or run scripts/demo --port 0 for free ports")


def run_config(text: str, cfg: ClusterConfig, p: Plan, out: Path) -> str:
    """CONFIG's ``text`` for this run's ports, with data_dir OUT/<id> (see the module docstring)."""
    for spec in cfg.peers:
        line = re.compile(rf'^(\s*address\s*=\s*)"{re.escape(spec.address)}"(.*)$', re.M)
        new_dir = (out / spec.id).as_posix()
        text, n = line.subn(lambda m: f'{m[1]}"{p.addresses[spec.id]}"{m[2]}\ndata_dir = "{new_dir}"',
                            text)
        if n != 1:
            raise DemoError(f"{cfg.path}: cannot find peer {spec.id}'s address line to give it a free port")
    text = _drop_old_data_dirs(text, out)
    if p.web_port != p.seed_port:
        text = re.sub(rf"(//[A-Za-z0-9.\-_]+):{p.seed_port}\b", rf"\g<1>:{p.web_port}", text)
    keys = cfg.ring.curve_keys
    if keys and not Path(keys).is_absolute():
        absolute = (Path(cfg.path).parent / keys).resolve().as_posix()
        text = re.sub(r'^(\s*curve_keys\s*=\s*)"[^"]*"', lambda m: f'{m[1]}"{absolute}"', text, flags=re.M)
    parse_config(text, out / "cluster.toml")  # the rewrite must still be a valid config
    return text


def _drop_old_data_dirs(text: str, out: Path) -> str:
    """Remove every data_dir line but the ones :func:`run_config` just wrote (under ``out``)."""
    mine = f'data_dir = "{out.as_posix()}/'
    return "".join(line for line in text.splitlines(keepends=True)
                   if not re.match(r"\s*data_dir\s*=", line) or line.startswith(mine))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m localweb.demo",
                                 description="Plan and check scripts/demo's ports; print them as shell lines.")
    ap.add_argument("--config", required=True, help="the demo's CONFIG")
    ap.add_argument("--port", type=int, default=None, help="the web's port; 0: free ports for web and peers")
    ap.add_argument("--out", required=True, type=Path, help="the demo's OUT directory (data_dir of a rewrite)")
    ap.add_argument("--write", required=True, type=Path, help="where to write the run's cluster.toml if needed")
    args = ap.parse_args(argv)
    try:
        if args.port is not None and not 0 <= args.port <= 65535:
            raise DemoError(f"--port must be 0-65535, not {args.port}")
        cfg = load_config(args.config)
        p = plan(cfg, args.port)
        check(cfg, p)
        rewrite = p.rewrites(cfg)
        if rewrite:
            text = Path(args.config).read_text(encoding="utf-8")
            args.write.write_text(run_config(text, cfg, p, args.out.resolve()), encoding="utf-8")
    except (DemoError, ConfigError, OSError) as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    print(f"WEB_PORT={p.web_port}\nREWRITTEN={int(rewrite)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
