"""A peer's network edge: one HTTP attempt and DNS, each a thin driver of a pure core.

- ``resolver``  DNS lookups under ``peer.core.dns.cache``'s policy and
  ``peer.core.dns.guard``'s address checks
- ``fetcher``   one HTTP attempt on trio streams, with ``peer.core.http.http1``
  framing the response, ``peer.core.http.head`` reading its head,
  ``peer.core.http.inflate`` decoding its body, and every cap applied while it streams
- ``connections`` an origin's addresses connected to, TLS, the idle keep-alive pool
- ``proxy``     connections through a proxy: a CONNECT tunnel or a SOCKS5 handshake,
  the proxy's credentials read at start
- ``tls``       the TLS contexts: one per distinct setting (CA file, verify, client
  certificate), chosen per host
- ``errorkinds`` foreign exceptions to the ``error`` column's kinds, and their words
"""
