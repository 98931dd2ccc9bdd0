"""What a crawl leaves behind: each peer's DuckDB file of pages and items, and what reads it.

- ``store``   the results schema and the batched, crash-safe writes of one peer
- ``merge``   the peers' files merged into one (``ringcrawl-merge``, ``scripts/merge.py``)
- ``report``  plots and an index.html of a results file (``ringcrawl-report``,
  ``scripts/report.py``): a package of ``facts``, ``plots``, ``page``, ``build``
"""
