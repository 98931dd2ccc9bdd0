"""What a crawl leaves behind: each peer's DuckDB file of pages and items, its WARC files, and what reads them.

- ``schema``  the results tables: their columns, what each holds, the row of ``pages``
- ``fetches`` the proposed ``fetches`` table (one row per visit, for revisits): its DDL, not yet created
- ``store``   the batched, crash-safe writes of one peer into those tables
- ``warc``    WARC/1.1 files of the fetches, from one writer thread, crash-safe
- ``cdxj``    their CDXJ indexes: written beside each file, rebuilt, merged
- ``merge``   the peers' files merged into one (``ringcrawl-merge``, ``scripts/merge.py``)
- ``report``  plots and an index.html of a results file (``ringcrawl-report``,
  ``scripts/report.py``): a package of ``facts``, ``plots``, ``page``, ``build``
"""
