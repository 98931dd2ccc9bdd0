"""Generate the CurveZMQ key pairs of a ring's peers (docs/curve.md).

For every ``[[peer]]`` of cluster.toml (or only the ``--id`` given, such as
a joiner not listed there) this writes, into the directory named by
``[ring] curve_keys`` (relative to cluster.toml) or ``--dir``::

    <id>.key          the public key: copy it to every machine of the ring
    <id>.key_secret   the secret key, mode 0600: only on <id>'s machine

in the certificate format of ``zmq.auth.create_certificates``. Only peers
without a key here get a new pair: a peer whose two files exist keeps them,
and so does a peer with only its ``.key`` here (as on another peer's
machine: its secret is on its own), so running it again after adding a
``[[peer]]`` adds that peer's pair and keeps the running ones'. A lone
``.key_secret`` gets its public half written back from it. Nothing is
replaced without ``--force`` (a new key locks the peer out until every
machine has its new ``.key``).

``ring`` never imports ``peer``: cluster.toml comes in through the same
:class:`~ring.tools.cli.ConfigSource` as ``python -m ring``'s, which
``ring/__main__.py`` builds (its ``keys_main`` is ``ringcrawl-keys`` and
``python scripts/keys.py``). A user's mistake is one ``error:`` line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from ring.commandnames import Command, command, spoken
from collections.abc import Sequence
from pathlib import Path

from ring.errors import EXIT_USAGE, RingError, user_error
from ring.io.curve import (PUBLIC_SUFFIX, SECRET_SUFFIX, read_public, read_secret, resolve_keys_dir, write_keypair,
                           write_public)
from ring.io.zap import curve_keypair
from ring.tools.cli import ConfigSource

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=command(Command.KEYS, sys.argv[0]),
        description=__doc__.split("\n\n")[0],
        epilog=(
            "Examples:\n"
            "  python scripts/keys.py --ring cluster.toml             a key pair per [[peer]] that has none,\n"
            "                                                         into curve_keys (existing pairs kept)\n"
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
    p.add_argument("--force", action="store_true",
                   help="replace existing key pairs too (re-keys those peers: each needs its new pair deployed)")
    # Commands named as the user started this one (installed, or from a checkout).
    p.description, p.epilog = spoken(p.description or "", sys.argv[0]), spoken(p.epilog or "", sys.argv[0])
    return p


def main(argv: Sequence[str] | None = None, *, source: ConfigSource) -> int:
    """``python scripts/keys.py``; cluster.toml is read through ``source``."""
    args = _parser().parse_args(argv)
    try:
        return _keys(args, source)
    except BaseException as exc:  # a RingError of ours, or the config's error found by the source
        err = user_error(exc, (RingError,)) or source.user_error(exc)
        if err is None:
            raise
        print("error: " + " ".join(str(err).splitlines()), file=sys.stderr)
        return EXIT_USAGE


def _keys(args: argparse.Namespace, source: ConfigSource) -> int:
    if not args.ring and not args.dir:
        raise RingError("keys.py: pass --ring cluster.toml (or --dir DIR with --id ID)")
    ids: list[str] = list(args.id)
    directory = Path(args.dir) if args.dir else None
    curve_keys = None
    if args.ring:
        cfg = source.load(args.ring)
        curve_keys = cfg.ring.curve_keys
        if not ids:
            ids = [p.id for p in cfg.peers]
        if directory is None:
            directory = resolve_keys_dir(curve_keys, cfg.path)
            if directory is None:
                raise RingError(f"{cfg.path}: ring.curve_keys: is empty: set it (e.g. curve_keys = "
                                "\"keys\") or pass --dir DIR")
    elif not ids:
        raise RingError("keys.py: without --ring, say which peers with --id ID")
    assert directory is not None

    made: list[str] = []
    kept: list[str] = []
    for peer_id in dict.fromkeys(ids):
        pub, sec = directory / f"{peer_id}{PUBLIC_SUFFIX}", directory / f"{peer_id}{SECRET_SUFFIX}"
        if not args.force and (pub.exists() or sec.exists()):
            # A running peer's key is never replaced by accident: a new one locks it out until
            # every machine has the new .key. On a peer's machine the others' pairs are only
            # their .key (their secret stays on their own machine), which is a pair kept too.
            kept.append(peer_id)
            if pub.exists() and sec.exists():
                print(f"{peer_id}: kept the existing {pub} and {sec.name} (--force replaces them)")
            elif pub.exists():
                read_public(pub)  # a file that is no key is said now, not kept in silence
                print(f"{peer_id}: kept the existing {pub} (its {sec.name} is on {peer_id}'s machine; "
                      "--force makes a new pair)")
            else:
                public, _ = read_secret(sec)
                write_public(directory, peer_id, public)
                print(f"{peer_id}: kept the existing {sec} and wrote its missing public half, {pub.name}")
            continue
        pub, sec = write_keypair(directory, peer_id, *curve_keypair(), force=args.force)
        made.append(peer_id)
        print(f"{peer_id}: wrote {pub} (public) and {sec.name} (secret, mode 0600)")

    print(f"made {len(made)} pair(s)" + (f" ({', '.join(made)})" if made else "")
          + f", kept {len(kept)}" + (f" ({', '.join(kept)})" if kept else ""))
    print(f"Deploy: copy every *{PUBLIC_SUFFIX} of {directory} to the keys directory of every machine; "
          f"copy <id>{SECRET_SUFFIX} to peer <id>'s machine only.")
    if args.ring and not curve_keys:
        print(f"Curve is off until cluster.toml says: [ring] curve_keys = \"{directory.resolve()}\"")
    return 0

