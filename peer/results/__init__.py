"""What a crawl leaves behind: each peer's DuckDB file of pages and items.

- ``schema``  the results tables: their columns, what each holds, the row of ``pages``
- ``store``   the batched, crash-safe writes of one peer into those tables
"""
