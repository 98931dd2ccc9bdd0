"""``python -m ring``: the process entry point, and the one place ``ring`` meets ``peer``.

cluster.toml has one parser (``peer.core.config.cluster``), a URL one placement key
(``peer.core.urls.normalize.host_key``) and a solo peer's recorded status address one reader
(``peer.state.statusaddress``); the commands (``ring.tools.cli``, ``ring.tools.keys``)
get them through a ``ConfigSource`` built here, so no module of the ring package
imports peer. The installed commands ``ringcrawl-ring`` and ``ringcrawl-keys``
are :func:`main` and :func:`keys_main` (pyproject.toml's ``[project.scripts]``).
"""

import sys
from collections.abc import Sequence

from peer.errors import user_error
from peer.core.urls.normalize import host_key
from peer.state.configfile import load_config
from peer.state.statusaddress import read_status_address
from ring.tools import cli, keys
from ring.tools.cli import ConfigSource
from ring.tools.shell import cli_shell

SOURCE = ConfigSource(load=load_config, host_key=host_key, user_error=user_error,
                      status_address=read_status_address)


@cli_shell()
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ring``, ``ringcrawl-ring``: table, status, leave, forget, voter, set, pause, resume, dashboard."""
    return cli.main(argv, source=SOURCE)


@cli_shell()
def keys_main(argv: Sequence[str] | None = None) -> int:
    """``python scripts/keys.py``, ``ringcrawl-keys``: the ring's CurveZMQ key pairs."""
    return keys.main(argv, source=SOURCE)


if __name__ == "__main__":
    sys.exit(main())
