"""HTTP, sans-IO: a response's bytes read, its head checked, its body inflated, its cookies kept.

``http1`` (HTTP/1.1 framing, RFC 9112), ``head`` (every value of a response
head checked), ``inflate`` (bounded gzip, deflate, br and zstd decoding),
``cookies`` (the cookie jar, RFC 6265), ``tunnel`` (what a proxy is asked
and what its answer means), ``result`` (``FetchResult``: what one fetch
returns to the crawl core).
"""
