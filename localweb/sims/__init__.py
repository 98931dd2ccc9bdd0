"""Simulated webs on simulated time, no network and no clock (pure).

``politeness`` (servers with latency, 429s and shared IPs for the frontier),
``changes`` (a host whose pages change on a schedule, revisited).
"""
