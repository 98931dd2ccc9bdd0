"""``python -m localweb.hostile``: serve the hostile web on loopback (``localweb.hostile.server``)."""

import sys

from localweb.hostile.server import main

sys.exit(main())
