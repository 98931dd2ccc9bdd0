#!/usr/bin/env python3
"""Generate the CurveZMQ key pairs of a ring's peers (docs/curve.md).

For every ``[[peer]]`` of cluster.toml (or only the ``--id`` given, such as
a joiner not listed there) this writes, into the directory named by
``[ring] curve_keys`` (relative to cluster.toml) or ``--dir``::

    <id>.key          the public key: copy it to every machine of the ring
    <id>.key_secret   the secret key, mode 0600: only on <id>'s machine

in the certificate format of ``zmq.auth.create_certificates``. A peer whose
two files exist already keeps them: nothing is overwritten without
``--force`` (a new key locks the peer out until every machine has its new
``.key``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from peer.state.configfile import load_config
from peer.errors import ConfigError, cli_main
from ring.io.curve import PUBLIC_SUFFIX, SECRET_SUFFIX, resolve_keys_dir, write_keypair
from ring.io.zmqio import curve_keypair

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python scripts/keys.py",
        description=__doc__.split("\n\n")[0],
        epilog=(
            "Examples:\n"
            "  python scripts/keys.py --ring cluster.toml             a key pair per [[peer]], into curve_keys\n"
            "  python scripts/keys.py --ring cluster.toml --id p4     one more, for a joiner p4\n"
            "  python scripts/keys.py --dir keys --id p1 --force      replace p1's pair\n"
            "Then copy every .key to every machine and each .key_secret to its own peer's machine\n"
            "only (docs/curve.md). Exit status 2 on a usage or config error."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--ring", metavar="PATH", help="the cluster.toml: its [[peer]] ids and [ring] curve_keys")
    p.add_argument("--dir", metavar="DIR",
                   help="write here instead of [ring] curve_keys (needed when that is empty or without --ring)")
    p.add_argument("--id", metavar="ID", action="append", default=[],
                   help="generate for this peer id only (repeatable), e.g. a joiner not in cluster.toml")
    p.add_argument("--force", action="store_true", help="replace existing key pairs")
    return p


@cli_main
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.ring and not args.dir:
        raise ConfigError("keys.py", "", "pass --ring cluster.toml (or --dir DIR with --id ID)")
    ids: list[str] = list(args.id)
    directory = Path(args.dir) if args.dir else None
    curve_keys = None
    if args.ring:
        cfg = load_config(args.ring)
        curve_keys = cfg.ring.curve_keys
        if not ids:
            ids = [p.id for p in cfg.peers]
        if directory is None:
            directory = resolve_keys_dir(curve_keys, cfg.path)
            if directory is None:
                raise ConfigError(str(cfg.path), "ring.curve_keys", "is empty: set it (e.g. curve_keys = "
                                  "\"keys\") or pass --dir DIR")
    elif not ids:
        raise ConfigError("keys.py", "", "without --ring, say which peers with --id ID")
    assert directory is not None

    for peer_id in dict.fromkeys(ids):
        pub, sec = directory / f"{peer_id}{PUBLIC_SUFFIX}", directory / f"{peer_id}{SECRET_SUFFIX}"
        if not args.force and pub.exists() and sec.exists():
            print(f"{peer_id}: kept the existing {pub} and {sec.name} (--force replaces them)")
            continue
        pub, sec = write_keypair(directory, peer_id, *curve_keypair(), force=args.force)
        print(f"{peer_id}: wrote {pub} (public) and {sec.name} (secret, mode 0600)")

    print(f"Deploy: copy every *{PUBLIC_SUFFIX} of {directory} to the keys directory of every machine; "
          f"copy <id>{SECRET_SUFFIX} to peer <id>'s machine only.")
    if args.ring and not curve_keys:
        print(f"Curve is off until cluster.toml says: [ring] curve_keys = \"{directory.resolve()}\"")
    return 0


if __name__ == "__main__":
    sys.exit(main())
