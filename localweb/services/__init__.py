"""The other servers a test needs on loopback: DNS, proxies, HTTPS with its own CA.

``nameserver`` (an authoritative DNS server for one zone), ``proxies``
(HTTP CONNECT and SOCKS5 proxies that log every tunnel), ``https`` (names
on one port chosen by SNI, with a test CA).
"""
