"""Registered domains (peer/core/urls/domains.py) from the Public Suffix List."""

from __future__ import annotations

import pytest

from peer.core.urls.domains import in_domains, registered_domain


@pytest.mark.parametrize(("host", "domain"), [
    ("a.example.com", "example.com"),
    ("example.com", "example.com"),
    ("www.example.co.uk", "example.co.uk"),
    ("a.foo.github.io", "foo.github.io"),   # a private suffix: each user its own owner
    ("s001.web.test", "web.test"),          # unknown TLD: the default rule "*"
    ("WWW.Example.COM.", "example.com"),
    ("127.0.0.1", "127.0.0.1"),             # an address is its own group, not "0.1"
    ("[::1]", "[::1]"),
    ("localhost", "localhost"),
    ("co.uk", "co.uk"),                     # a public suffix has no registrant
])
def test_registered_domain(host: str, domain: str) -> None:
    assert registered_domain(host) == domain


def test_in_domains_covers_the_domain_and_names_below_it_only() -> None:
    domains = frozenset({"example.com"})
    assert in_domains("example.com", domains)
    assert in_domains("a.b.example.com", domains)
    assert not in_domains("badexample.com", domains)
    assert not in_domains("example.com.evil.net", domains)
