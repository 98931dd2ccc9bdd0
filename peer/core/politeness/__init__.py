"""Politeness in numbers: a host's delay controller, the rate ceiling, a profile's figures.

Bottom up: ``pid`` (the PID law on a host's delay between requests),
``ceiling`` (the 1 s/5 s ceiling's numbers and rings of start times) and
``profile`` (``Pace``: a ``[politeness]`` or ``[[site]]`` profile worked out
once), and ``machines`` (the peers of one machine as one client to a site).
Values and pure functions, no records of hosts: the frontier
(``peer.core.frontier``) keeps those and applies these numbers to them.
"""
