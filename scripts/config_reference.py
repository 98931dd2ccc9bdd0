"""Print the config reference table from peer.core.config.cluster's own fields (``--write``: into docs/configuration.md).

The table and the markers it lives between are scripts/generated_docs.py's.
"""

from generated_docs import main

if __name__ == "__main__":
    main(only="config")
