#!/usr/bin/env python3
"""``python scripts/merge.py``: the peers' results files merged into one (``ringcrawl-merge`` once installed).

The command is :mod:`peer.commands.merge`.
"""

import sys

from peer.commands.merge import main

if __name__ == "__main__":
    sys.exit(main())
