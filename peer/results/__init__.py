"""What a crawl leaves behind: each peer's DuckDB file of pages and items.

- ``store``  the results schema and the batched, crash-safe writes of one peer
"""
