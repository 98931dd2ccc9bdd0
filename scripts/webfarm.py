#!/usr/bin/env python3
"""The local test web on its own: ``python scripts/webfarm.py --help``.

A thin entry point; the web is the :mod:`localweb` package (the site graph
in localweb/sitegraph/graph.py, its pages, oracle, bad endpoints and server), which
tests and benchmarks import directly.
"""

import sys

from localweb.webfarm import main

if __name__ == "__main__":
    sys.exit(main())
