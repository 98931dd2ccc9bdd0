"""Where a host name leads: the DNS cache's policy, the SSRF guard, the order addresses are tried in.

``cache`` (which names need a query, and what to answer meanwhile),
``guard`` (which addresses a crawler may connect to), ``eyeballs`` (happy
eyeballs, RFC 8305: the order and delays of a host's connection attempts).
"""
