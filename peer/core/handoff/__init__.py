"""Hosts that change owner: what the crawl core does when the ring moves a host.

``holds`` (a gained host waits for its previous owner's hand-off),
``moves`` (hosts lost passed on, a hand-off's reads, request starts carried over)
and ``leasewaits`` (moved hosts waiting for their lease, counted).
"""
