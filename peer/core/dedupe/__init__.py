"""Duplicate content: exact by body digest, near by SimHash asked of the bands' owners across the ring.

``simhash`` (a page's text as a 64-bit fingerprint), ``digests`` (the body
digests this peer saw), ``bands`` (the band table a band owner keeps),
``verdicts`` (a page's verdict, and the questions to ask first), ``held``
(the crawl's side: a page's row and links held until its verdict),
``precedence`` (which of two copies is the original, the same on every peer),
``exact`` (the digests a band owner keeps: exact copies across the ring),
``claims`` (what a member's band query may be taken for).
"""
