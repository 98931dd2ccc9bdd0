#!/usr/bin/env python3
"""``python scripts/keys.py``: the ring's CurveZMQ key pairs (``ringcrawl-keys`` once installed).

The command is :mod:`ring.tools.keys`; ``ring/__main__.py`` hands it cluster.toml's parser.
"""

import sys

from ring.__main__ import keys_main

if __name__ == "__main__":
    sys.exit(keys_main())
