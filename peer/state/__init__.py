"""A peer's files: blocking file I/O, run in worker threads by the engine.

- ``fsio``        the one atomic write (tmp, fsync, rename, directory fsync)
- ``configfile``  read cluster.toml (``peer.core.config.cluster`` parses it)
- ``bloomfile``   the Bloom filter's file, written atomically and read back checked
- ``generations`` the state directory's files by generation: list, clean, name the damaged
- ``frames``      the journal's bytes: records, frames, torn tails told from corruption
- ``snapshot``    a generation's snapshot and Bloom files, written and read back checked
- ``recovery``    the newest snapshot, its journal replayed, the spill blocks taken since
- ``runrecord``   ``run.json``: how the last run began and ended (advice, not state)
- ``cookiefile``  ``cookies.msgpack``: the cookie jar, written atomically beside the snapshots
- ``journal``     ``PeerState``: the journal of a peer's crawl and the crash-ordering
                  argument that ties the modules above together
- ``spill``       frontier segments spilled to disk past the memory budget
- ``sievefile``   the exact seen set's sorted runs of URL hashes
- ``statusaddress`` where a running solo peer without an address answers ``ring status``

What must be on disk before what, and why, is argued in each module's
docstring; the decisions themselves are made in ``peer.core``.
"""
