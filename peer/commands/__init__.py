"""The user's commands: parsing, one-line errors, exit statuses.

- ``cli``       ``python -m peer`` (``ringcrawl``): crawl a peer of cluster.toml, ``--check``, ``try``
- ``envflags``  each flag's default from the environment (``RINGCRAWL_LOG_LEVEL`` for ``--log-level``)
- ``trial``     ``python -m peer try URL``: one URL through the crawl's rules
- ``check``     what ``--check`` says of a config without asking anything: summary, warnings, seed owners
- ``preflight`` what ``--check`` learns by asking: each seed host resolved and its robots.txt read
- ``adopt``     hand a lost peer's frontier to the live ring (``ringcrawl-adopt``, ``scripts/adopt.py``)
- ``lostpeer``  what a lost peer left in its data_dir, read without changing it (adopt's input)
- ``merge``     the peers' results files merged into one (``ringcrawl-merge``, ``scripts/merge.py``)
- ``report``    a crawl report from a results file (``ringcrawl-report``, ``scripts/report.py``)
- ``shell``     ``cli_main``: every command's user error as one line, exit status 2
"""
