"""``python -m ring``: the process entry point, and the one place ``ring`` meets ``peer``.

cluster.toml has one parser (``peer.core.config``) and a URL one placement key
(``peer.core.urls.host_key``); the commands (``ring.tools.cli``) get both through a
``ConfigSource`` built here, so no module of the ring package imports peer.
"""

import sys

from peer.state.configfile import load_config
from peer.errors import user_error
from peer.core.urls import host_key
from ring.tools.cli import ConfigSource, main

sys.exit(main(source=ConfigSource(load=load_config, host_key=host_key, user_error=user_error)))
