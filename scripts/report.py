#!/usr/bin/env python3
"""``python scripts/report.py``: a crawl report from a results file (``ringcrawl-report`` once installed).

The command is :mod:`peer.commands.report`.
"""

import sys

from peer.commands.report import main

if __name__ == "__main__":
    sys.exit(main())
