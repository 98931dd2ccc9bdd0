#!/usr/bin/env python3
"""``python scripts/adopt.py``: adopt a lost peer's frontier (``ringcrawl-adopt`` once installed).

The command is :func:`peer.commands.adopt.main`; its module says how adoption works.
"""

import sys

from peer.commands.adopt import main

if __name__ == "__main__":
    sys.exit(main())
