"""A peer's files: blocking file I/O, run in worker threads by the engine.

- ``fsio``        the one atomic write (tmp, fsync, rename, directory fsync)
- ``configfile``  read cluster.toml (``peer.core.config`` parses it)
- ``bloomfile``   the Bloom filter's file, written atomically and read back checked
- ``journal``     the crash-safe journal, snapshots and recovery of a peer's crawl
- ``spill``       frontier segments spilled to disk past the memory budget
- ``sievefile``   the exact seen set's sorted runs of URL hashes

What must be on disk before what, and why, is argued in each module's
docstring; the decisions themselves are made in ``peer.core``.
"""
