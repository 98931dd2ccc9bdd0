import sys

from peer.commands.cli import main

sys.exit(main())
