import sys

from ring.cli import main

sys.exit(main())
