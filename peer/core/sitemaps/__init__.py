"""Sitemaps (sitemaps.org 0.9): read from hostile bytes, tracked, fetched by their host's owner.

``document`` (one sitemap document's URLs or children), ``tracker`` (the
sitemaps this peer found, each fetched once, bounded), ``hints`` (what
travels with a URL a sitemap lists), ``jobs`` (the crawl core's side:
sitemaps found, queued as jobs of their host, read).
"""
