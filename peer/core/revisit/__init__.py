"""Continuous crawling: when a page comes due again, and its revisits through the frontier.

``policy`` (a page's adaptive interval, its conditional GET), ``duequeue``
(the revisit records by host and due time), ``hostmix`` (a host's starts
shared between new URLs and revisits), ``recrawl`` (the three composed for
the crawl core).
"""
