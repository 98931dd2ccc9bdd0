"""``crawl.allow_domains``: the scope by registered domain (peer/core/urls/scope.py), beside allow_hosts."""

from __future__ import annotations

import pytest

from peer.core.config.cluster import parse_config
from peer.core.crawl.core import CrawlCore, Origin, Queued, Refused
from peer.core.urls.scope import Scope, domain_name
from peer.errors import ConfigError, URLError

MINIMAL = '[[peer]]\nid = "p1"\n'


def test_a_domain_covers_itself_and_every_name_below_it_only():
    s = Scope((), allow_domains=("example.com",))
    for host in ("example.com", "www.example.com", "a.b.example.com:8080", "EXAMPLE.COM."):
        assert s.allows_host(host), host
    for host in ("badexample.com", "example.com.evil.net", "example.org", "com"):
        assert not s.allows_host(host), host
    assert s.covering_domain("a.docs.example.com") == "example.com"


def test_the_longest_listed_domain_is_named_and_deny_still_wins():
    s = Scope(("*.other.org",), ("private.example.com",), allow_domains=("example.com", "docs.example.com"))
    assert s.covering_domain("a.docs.example.com") == "docs.example.com"
    assert s.allows_host("x.other.org")  # allow_hosts still holds, beside the domains
    assert not s.allows_host("private.example.com") and s.allows_host("public.example.com")


def test_an_address_is_never_in_a_domain():
    # "0.1" would cover 10.0.0.1 by its labels, were digits names.
    s = Scope((), allow_domains=("0.1",))
    assert not s.allows_host("10.0.0.1") and not s.allows_host("[::1]")


def test_with_domains_and_no_allow_hosts_the_seeds_hosts_are_not_added():
    s = Scope.from_seeds(["http://www.other.org/"], (), (), 0, ("example.com",))
    assert not s.allows_host("www.other.org") and s.allows_host("www.example.com")
    plain = Scope.from_seeds(["http://www.other.org/"])
    assert plain.allows_host("www.other.org") and not plain.allows_host("www.example.com")


@pytest.mark.parametrize("value, says", [
    ("com", "a public suffix"),
    ("co.uk", "a public suffix"),
    ("github.io", "a public suffix"),  # a private suffix of the list: each user its own domain
    ("*.example.com", "not a glob"),
    ("http://example.com/", "not a URL"),
    ("example.com:80", "not a URL or host:port"),
    ("10.0.0.1", "an IP address"),
    ("", "empty"),
    ("a..example.com", "an empty label"),
    (5, "a string"),
])
def test_a_bad_domain_is_refused(value, says):
    with pytest.raises(URLError, match=says):
        domain_name(value)


def test_domains_are_normalised():
    assert domain_name(" Example.COM. ") == "example.com"
    assert domain_name("bücher.de") == "xn--bcher-kva.de"
    assert domain_name("foo.github.io") == "foo.github.io"


def test_a_bad_value_in_cluster_toml_is_one_line_naming_the_entry():
    with pytest.raises(ConfigError) as info:
        parse_config(MINIMAL + '[crawl]\nallow_domains = ["example.com", "co.uk"]\n', "/etc/rc/cluster.toml")
    err = info.value
    assert err.key == "crawl.allow_domains[1]" and "a public suffix" in err.message and "\n" not in str(err)
    with pytest.raises(ConfigError) as info:
        parse_config(MINIMAL + '[crawl]\nallow_domains = "example.com"\n', "/etc/rc/cluster.toml")
    assert info.value.key == "crawl.allow_domains"


def test_the_crawl_core_follows_links_into_the_domain_and_refuses_others():
    cfg = parse_config(MINIMAL + '[crawl]\nseeds = ["http://www.example.com/"]\n'
                       'allow_domains = ["example.com"]\n', "/etc/rc/cluster.toml")
    core = CrawlCore(cfg, "p1")
    verdicts = {}
    for url in ("http://docs.example.com/a", "http://example.com/b", "http://example.org/c"):
        effects = core.discover(url, 1, 0.0, Origin.LINK)
        verdicts[url] = type(next(e for e in effects if isinstance(e, Queued | Refused))).__name__
    assert verdicts == {"http://docs.example.com/a": "Queued", "http://example.com/b": "Queued",
                        "http://example.org/c": "Refused"}
