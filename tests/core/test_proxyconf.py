"""peer.core.config.proxies and peer.core.http.tunnel: proxy keys checked, each host's proxy, a proxy's answer judged."""

from __future__ import annotations

import base64

import pytest

from peer.core.config.cluster import parse_config
from peer.core.config.proxies import (Credentials, Proxy, ProxyRoutes, ProxyScheme, ProxySpec, host_proxy,
                                 parse_credentials, proxy_lines)
from peer.core.config.sites import SiteSettings
from peer.core.http.tunnel import connect_request, connect_verdict, socks_verdict
from peer.errors import ConfigError, ErrorKind

PEER = '[[peer]]\nid = "p1"\n'


def cfg(crawl: str, sites: str = "", path: str = "/srv/crawl/cluster.toml"):
    return parse_config(f"[crawl]\n{crawl}\n{PEER}{sites}", path)


def error(crawl: str, sites: str = "") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        cfg(crawl, sites)
    return info.value


@pytest.mark.parametrize(("text", "scheme", "host", "port"), [
    ("http://proxy.example:3128", ProxyScheme.HTTP, "proxy.example", 3128),
    ("HTTP://Proxy.Example:3128/", ProxyScheme.HTTP, "proxy.example", 3128),
    ("socks5h://p.example:1080", ProxyScheme.SOCKS5H, "p.example", 1080),
    ("socks5://[2001:4860::1]:1080", ProxyScheme.SOCKS5, "2001:4860::1", 1080),
])
def test_a_proxy_url_is_parsed(text, scheme, host, port):
    c = cfg(f'proxy = "{text}"').crawl
    assert c.proxy == text
    [line] = proxy_lines(cfg(f'proxy = "{text}"'))
    shown = f"[{host}]" if ":" in host else host
    assert line.startswith(f"proxy: {scheme.value}://{shown}:{port} (no credentials)")


@pytest.mark.parametrize(("text", "words"), [
    ("proxy.example:3128", "schemes: http, socks5, socks5h"),
    ("https://p.example:443", "schemes: http, socks5, socks5h"),
    ("socks4://p.example:1080", "schemes: http, socks5, socks5h"),
    ("http://p.example", "a port 1-65535"),
    ("http://p.example:0", "a port 1-65535"),
    ("http://p.example:99999", "a port 1-65535"),
    ("http://:3128", "a port 1-65535"),
    ("http://p.example:3128/path", "nothing after the port"),
    ("http://p.example:3128?x=1", "nothing after the port"),
    ("http://p ex:3128", "a port 1-65535"),
])
def test_a_bad_proxy_url_is_one_line_naming_the_key(text, words):
    err = error(f'proxy = "{text}"')
    assert err.key == "crawl.proxy" and words in err.message, err


def test_credentials_in_the_url_are_refused_and_never_repeated():
    err = error('proxy = "socks5h://user:hunter2@p.example:1080"')
    assert err.key == "crawl.proxy"
    assert "hunter2" not in str(err) and "proxy_auth_env" in str(err) and "proxy_auth_file" in str(err)


def test_auth_keys_one_of_two_and_only_with_a_proxy():
    assert error('proxy = "http://p.example:1"\nproxy_auth_env = "A"\nproxy_auth_file = "f"').key == \
        "crawl.proxy_auth_file"
    assert error('proxy_auth_env = "A"').key == "crawl.proxy_auth_env"
    assert "environment variable" in error('proxy = "http://p.example:1"\nproxy_auth_env = "A-B"').message


def test_an_auth_file_is_relative_to_cluster_toml():
    c = cfg('proxy = "http://p.example:1"\nproxy_auth_file = "secrets/auth"').crawl
    assert c.proxy_auth_file == "/srv/crawl/secrets/auth"
    assert cfg('proxy = "http://p.example:1"\nproxy_auth_file = "/etc/auth"').crawl.proxy_auth_file == "/etc/auth"


@pytest.mark.parametrize("host", ["127.0.0.1", "10.1.2.3", "[::1]", "localhost", "squid.lan"])
def test_a_private_proxy_address_is_refused_unless_allowed(host):
    extra = '\n[dns]\nresolve = { "squid.lan" = "192.168.1.5" }\n'
    with pytest.raises(ConfigError) as info:
        parse_config(f'[crawl]\nproxy = "http://{host}:3128"\n{extra}{PEER}')
    assert info.value.key == "crawl.proxy"
    assert "crawl.proxy_allow_private = true" in info.value.message
    ok = parse_config(f'[crawl]\nproxy = "http://{host}:3128"\nproxy_allow_private = true\n{extra}{PEER}')
    assert ok.crawl.proxy_allow_private
    # crawl.allow_private is the targets' switch, not the proxy's.
    with pytest.raises(ConfigError):
        parse_config(f'[crawl]\nproxy = "http://{host}:3128"\nallow_private = true\n{extra}{PEER}')


def test_a_block_says_direct_and_never_empty():
    c = cfg('proxy = "http://p.example:1"', '[[site]]\nhosts = ["*.corp"]\nproxy = "direct"\n')
    assert c.sites[0].proxy == "direct"
    err = error('proxy = "http://p.example:1"', '[[site]]\nhosts = ["*.corp"]\nproxy = ""\n')
    assert err.key == "site[0].proxy" and '"direct"' in err.message
    err = error("", '[[site]]\nhosts = ["*.corp"]\nproxy_auth_env = "X"\n')
    assert err.key == "site[0].proxy_auth_env"
    err = error("", '[[site]]\nhosts = ["*.corp"]\nproxy = "direct"\nproxy_auth_env = "X"\n')
    assert err.key == "site[0].proxy_auth_env"
    err = error("", '[[site]]\nhosts = ["*.corp"]\nproxy = "http://127.0.0.1:1"\n')
    assert err.key == "site[0].proxy" and "proxy_allow_private" in err.message


def routes(c) -> ProxyRoutes:
    sites = SiteSettings(c.sites, c.crawl, c.politeness)
    default = Proxy(ProxySpec(ProxyScheme.HTTP, "p.example", 1))
    other = Proxy(ProxySpec(ProxyScheme.SOCKS5H, "q.example", 2))
    return ProxyRoutes(default, {0: None, 1: other}, sites)


def test_each_host_gets_its_blocks_proxy_or_the_global_one():
    c = cfg('proxy = "http://p.example:1"',
            '[[site]]\nhosts = ["*.corp"]\nproxy = "direct"\n'
            '[[site]]\nhosts = ["*.net"]\nproxy = "socks5h://q.example:2"\n'
            '[[site]]\nhosts = ["*.org"]\nrate = 30\n')
    r = routes(c)
    assert r.for_host("a.corp") is None
    assert r.for_host("b.net:8080").url == "socks5h://q.example:2"
    assert r.for_host("c.org").url == "http://p.example:1"  # a block without proxy: the global one
    assert r.for_host("d.com").url == "http://p.example:1"
    assert [p.url for p in r.proxies()] == ["http://p.example:1", "socks5h://q.example:2"]
    assert host_proxy(c, 0) == "none, direct (site[0]: *.corp)"
    assert host_proxy(c, 1) == "socks5h://q.example:2 (no credentials) (site[1]: *.net)"
    assert host_proxy(c, 2) == host_proxy(c, -1) == "http://p.example:1 (no credentials) (crawl.proxy)"
    assert host_proxy(cfg(""), -1) is None
    lines = proxy_lines(c)
    assert lines[1:] == ["proxy for site[0] (*.corp): direct",
                         "proxy for site[1] (*.net): socks5h://q.example:2 (no credentials)"]


def test_credentials_parse_and_never_show():
    creds = parse_credentials("user:pa:ss\nignored", "$X")
    assert (creds.username, creds.password) == ("user", "pa:ss")
    assert "pa:ss" not in repr(creds) and "pa:ss" not in repr(Proxy(ProxySpec(ProxyScheme.HTTP, "p", 1), creds))
    for bad in ("", "nocolon", ":password", "u:" + "x" * 256):
        with pytest.raises(ConfigError) as info:
            parse_credentials(bad, "$X")
        assert info.value.path == "$X" and "x" * 20 not in str(info.value)


def test_the_connect_request_carries_the_agent_and_basic_credentials():
    plain = connect_request("example.com", 443, "bot/1\r\nX: y", None)
    assert plain == b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: bot/1  X: y\r\n\r\n"
    with_auth = connect_request("2001:db8::1", 80, "bot", Credentials("u", "p\u00e9"))
    assert with_auth.startswith(b"CONNECT [2001:db8::1]:80 HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n")
    token = base64.b64encode("u:p\u00e9".encode()).decode()
    assert f"Proxy-Authorization: Basic {token}\r\n\r\n".encode() in with_auth


@pytest.mark.parametrize(("status", "kind"), [
    (200, None), (204, None), (407, ErrorKind.PROXY_AUTH), (403, ErrorKind.PROXY_REFUSED),
    (502, ErrorKind.PROXY_REFUSED), (503, ErrorKind.PROXY_REFUSED), (504, ErrorKind.PROXY_REFUSED),
    (400, ErrorKind.PROXY), (405, ErrorKind.PROXY), (101, ErrorKind.PROXY), (301, ErrorKind.PROXY),
    (500, ErrorKind.PROXY),
])
def test_a_connect_answer_is_judged_by_its_status(status, kind):
    verdict = connect_verdict(status, "http://p:1", "t:443")
    assert (verdict.kind if verdict else None) == kind


def test_a_socks_failure_is_judged_by_its_reply_code():
    assert socks_verdict(None, True, "s", "t").kind is ErrorKind.PROXY_AUTH
    for code in range(1, 9):
        assert socks_verdict(code, False, "s", "t").kind is ErrorKind.PROXY_REFUSED
    assert socks_verdict(9, False, "s", "t").kind is ErrorKind.PROXY
    assert socks_verdict(None, False, "s", "t").kind is ErrorKind.PROXY
