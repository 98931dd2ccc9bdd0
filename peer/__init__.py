"""One ringcrawl peer: the crawler process that owns a slice of the hosts.

Layers, one folder each, bottom up. Each imports only from the layers above
it in this list, and ``ring`` (which imports nothing of ``peer``):

- ``errors``     the package's exception tree (it imports nothing but ``ring.errors``)
- ``core/``      the pure cores: every decision, no I/O of any kind (``now`` comes in,
                 frozen decisions go out); checked by glob in tests/project/test_purity.py
- ``state/``     blocking file I/O run in worker threads: journal, snapshots,
                 recovery, spill, the seen set's files, the config file
- ``net/``       the fetcher and the resolver
- ``results/``   the DuckDB results of a peer
- ``engine/``    the one trio driver: it asks the cores and does what they say
- ``commands/``  ``python -m peer``, ``try``, ``adopt``, ``merge`` and ``report``: parsing,
                 one-line errors (``cli_main``), exit statuses

docs/architecture.md follows one URL through them.
"""
