"""TLS options against a local HTTPS server with its own CA (localweb/services/https.py).

The server's log judges each case: the SNI name a handshake asked for, the
ALPN protocol it selected, the client certificate it saw. The fetches go
through the real Fetcher and its TlsContexts (peer/net/tls.py); one crawl
runs through the command line, as a user starts it. The config's side
(peer.core.config.tls: paths resolved, combinations refused, the ``tls:`` line
of ``--check``) is judged here too, with the files it names.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from clirun import error_line, run_main
from localweb.services.https import NAMES, HttpsFarm, TestPki
from peer.core.config.cluster import CrawlConfig, DnsConfig, parse_config
from peer.core.config.sites import SiteSettings
from peer.errors import ConfigError
from peer.net.errorkinds import error_kind
from peer.net.fetcher import Fetcher
from peer.net.resolver import Resolver
from peer.net.tls import TlsContexts

DNS = DnsConfig(resolve={"*.tls.test": "127.0.0.1"})


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> TestPki:
    return TestPki.make(tmp_path_factory.mktemp("pki"))


async def farm(nursery, pki: TestPki, *, client_ca: bool = False) -> HttpsFarm:
    server = HttpsFarm({n: pki.cert(n) for n in NAMES}, client_ca=pki.ca if client_ca else None)
    await server.start(nursery)
    return server


def fetcher(crawl: CrawlConfig, sites: SiteSettings | None = None) -> Fetcher:
    return Fetcher(crawl, Resolver(DNS, allow_private=True), sites=sites)


def toml_text(tmp: Path, port: int, extra: str = "", sites: str = "", seeds: str = "") -> str:
    return f"""
[ring]
name = "tls"

[[peer]]
id = "solo"
data_dir = "{tmp / 'solo'}"

[crawl]
seeds = [{seeds or f'"https://a.tls.test:{port}/"'}]
allow_hosts = ["*.tls.test"]
allow_private = true
timeout = 5.0
obey_robots = false
{extra}

[politeness]
rate = 0

[dns]
resolve = {{ "*.tls.test" = "127.0.0.1" }}

[bloom]
capacity = 10000
{sites}
"""


def peer(*args: str):
    from peer.commands.cli import main

    return run_main(main, args)


# -- crawl.ca_file: SNI names on one address, each with its own certificate ------


async def test_names_on_one_address_each_get_their_own_certificate_by_sni(nursery, pki):
    server = await farm(nursery, pki)
    async with fetcher(CrawlConfig(ca_file=str(pki.ca), timeout=5)) as f:
        results = [await f.fetch(f"https://{n}:{server.port}/") for n in ("a.tls.test", "b.tls.test", "c.tls.test")]
    assert [(r.status, r.error) for r in results] == [(200, None)] * 3
    # The server chose each name's own certificate by SNI, and the client
    # (checking host names against the test CA) accepted each.
    assert [(e.sni, e.host.split(":")[0]) for e in server.log] == [
        ("a.tls.test", "a.tls.test"), ("b.tls.test", "b.tls.test"), ("c.tls.test", "c.tls.test")]
    # ALPN offered http/1.1 only: the server, preferring h2, selected http/1.1.
    assert {e.alpn for e in server.log} == {"http/1.1"}


@pytest.mark.parametrize("name, kind, words", [
    ("expired.tls.test", "tls_expired", "expired"),
    ("wrong.tls.test", "tls_hostname", "hostname mismatch"),
    ("self.tls.test", "tls_untrusted", "self-signed"),
])
async def test_each_certificate_failure_is_an_error_kind_of_its_own(nursery, pki, name, kind, words):
    server = await farm(nursery, pki)
    async with fetcher(CrawlConfig(ca_file=str(pki.ca), timeout=5)) as f:
        r = await f.fetch(f"https://{name}:{server.port}/")
        stats = f.stats()
    assert (r.status, r.error, r.body) == (None, kind, b"")
    assert words in r.detail
    assert stats["errors"] == {kind: 1}
    assert server.sni == [name] and server.log == []


async def test_without_ca_file_the_test_ca_is_not_trusted(nursery, pki):
    server = await farm(nursery, pki)
    async with fetcher(CrawlConfig(timeout=5)) as f:
        r = await f.fetch(f"https://a.tls.test:{server.port}/")
    assert r.error == "tls_untrusted"


# -- [[site]] verify = false ----------------------------------------------------


async def test_verify_false_lets_only_its_blocks_hosts_through(nursery, pki, tmp_path):
    from peer.commands.check import config_warnings

    server = await farm(nursery, pki)
    cfg = parse_config(toml_text(tmp_path, server.port, f'ca_file = "{pki.ca}"',
                                 '[[site]]\nhosts = ["self.tls.test"]\nverify = false\n'), tmp_path / "c.toml")
    sites = SiteSettings(cfg.sites, cfg.crawl, cfg.politeness)
    async with fetcher(cfg.crawl, sites) as f:
        got = {n: (await f.fetch(f"https://{n}:{server.port}/")).error
               for n in ("self.tls.test", "a.tls.test", "expired.tls.test", "wrong.tls.test")}
    assert got == {"self.tls.test": None, "a.tls.test": None, "expired.tls.test": "tls_expired",
                   "wrong.tls.test": "tls_hostname"}
    (warning,) = [w for w in config_warnings(cfg) if "verify" in w]
    assert "site[0] (self.tls.test): verify = false" in warning and "NOT checked" in warning


def test_verify_has_no_global_switch(tmp_path):
    with pytest.raises(ConfigError, match="crawl.verify: unknown key"):
        parse_config(toml_text(tmp_path, 1, "verify = false"), tmp_path / "c.toml")


# -- client certificates ----------------------------------------------------------


async def test_a_client_certificate_is_sent_when_configured(nursery, pki):
    server = await farm(nursery, pki, client_ca=True)
    crawl = CrawlConfig(ca_file=str(pki.ca), client_cert=str(pki.client_cert), client_key=str(pki.client_key),
                        timeout=5)
    async with fetcher(crawl) as f:
        r = await f.fetch(f"https://a.tls.test:{server.port}/")
    assert (r.status, r.error) == (200, None)
    assert [(e.sni, e.client_cert) for e in server.log] == [("a.tls.test", "ringcrawl test client")]


async def test_a_server_that_requires_a_client_certificate_refuses_us_without_one(nursery, pki):
    server = await farm(nursery, pki, client_ca=True)
    async with fetcher(CrawlConfig(ca_file=str(pki.ca), timeout=5)) as f:
        r = await f.fetch(f"https://a.tls.test:{server.port}/")
    assert (r.status, r.error) == (None, "tls_client_cert")
    assert server.log == [] and server.sni == ["a.tls.test"]


def _encrypted_key(pki: TestPki, tmp_path: Path, passphrase: bytes) -> Path:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki.client_key.read_bytes(), None)
    out = tmp_path / "client-encrypted.key"
    out.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.BestAvailableEncryption(passphrase)))
    return out


def test_an_encrypted_key_takes_its_passphrase_from_the_named_environment_variable(pki, tmp_path):
    key = _encrypted_key(pki, tmp_path, b"s3cret")
    crawl = CrawlConfig(ca_file=str(pki.ca), client_cert=str(pki.client_cert), client_key=str(key),
                        client_key_password_env="RC_KEY_PASS")
    ctx = TlsContexts(crawl, environ={"RC_KEY_PASS": "s3cret"}).for_host("a.tls.test")
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(ConfigError, match="crawl.client_key_password_env: the environment variable RC_KEY_PASS is not set"):
        TlsContexts(crawl, environ={})
    with pytest.raises(ConfigError, match="crawl.client_key: cannot load .*wrong passphrase"):
        TlsContexts(crawl, environ={"RC_KEY_PASS": "nope"})
    # Without a variable named, never a prompt on the terminal: one line.
    no_env = CrawlConfig(client_cert=str(pki.client_cert), client_key=str(key))
    with pytest.raises(ConfigError, match="the key is encrypted: set crawl.client_key_password_env"):
        TlsContexts(no_env, environ={})


def test_a_der_or_pkcs12_file_is_refused_with_the_way_to_convert_it(pki, tmp_path):
    der = tmp_path / "client.der"
    der.write_bytes(ssl.PEM_cert_to_DER_cert(pki.client_cert.read_text()))
    with pytest.raises(ConfigError, match="crawl.client_cert: expected a PEM file .*openssl pkcs12"):
        TlsContexts(CrawlConfig(client_cert=str(der), client_key=str(pki.client_key)))


def test_combinations_that_mean_nothing_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="crawl.client_key: set crawl.client_cert too"):
        parse_config(toml_text(tmp_path, 1, 'client_key = "k.pem"'), tmp_path / "c.toml")
    with pytest.raises(ConfigError, match="crawl.client_key_password_env: expected the name of an environment"):
        parse_config(toml_text(tmp_path, 1, 'client_cert = "c.pem"\nclient_key_password_env = "hunter2!"'),
                     tmp_path / "c.toml")


# -- contexts: built once per setting; the default path stays lazy --------------


def test_paths_are_relative_to_cluster_toml(tmp_path):
    cfg = parse_config(toml_text(tmp_path, 1, 'ca_file = "pki/ca.pem"',
                                 '[[site]]\nhosts = ["x.tls.test"]\nca_file = "other.pem"\n'),
                       tmp_path / "conf" / "cluster.toml")
    assert cfg.crawl.ca_file == str(tmp_path / "conf" / "pki" / "ca.pem")
    assert cfg.sites[0].ca_file == str(tmp_path / "conf" / "other.pem")


def test_contexts_are_one_per_distinct_setting_and_none_without_options(pki, tmp_path):
    plain = TlsContexts(CrawlConfig())
    assert plain._default is None and not plain._by_setting  # made at the first https URL only
    cfg = parse_config(toml_text(tmp_path, 1, f'ca_file = "{pki.ca}"',
                                 '[[site]]\nhosts = ["self.tls.test"]\nverify = false\n'
                                 '[[site]]\nhosts = ["b.tls.test"]\nrate = 10\n'), tmp_path / "c.toml")
    tls = TlsContexts(cfg.crawl, SiteSettings(cfg.sites, cfg.crawl, cfg.politeness))
    a, b, c, s = (tls.for_host(h) for h in ("a.tls.test", "b.tls.test", "c.tls.test", "self.tls.test"))
    assert a is b is c and s is not a
    assert (s.verify_mode, s.check_hostname) == (ssl.CERT_NONE, False)
    assert (a.verify_mode, a.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert len(tls._by_setting) == 2


def test_alerts_about_our_client_certificate_are_their_own_kind():
    for reason, kind in (("TLSV13_ALERT_CERTIFICATE_REQUIRED", "tls_client_cert"),
                         ("SSLV3_ALERT_BAD_CERTIFICATE", "tls_client_cert"),
                         ("TLSV1_ALERT_UNKNOWN_CA", "tls_client_cert"),
                         ("SSLV3_ALERT_HANDSHAKE_FAILURE", "tls"),
                         ("WRONG_VERSION_NUMBER", "tls")):
        exc = ssl.SSLError(1, reason)
        exc.reason = reason
        assert error_kind(exc) == kind, reason


# -- the command line: --check, try, a crawl ----------------------------------------


def test_a_missing_ca_file_is_one_line_and_exit_2(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(toml_text(tmp_path, 1, 'ca_file = "nowhere/ca.pem"'))
    for args in (("--check",), ()):
        line = error_line(peer("--ring", str(toml), *args))
        assert f"{tmp_path / 'nowhere' / 'ca.pem'}: crawl.ca_file: cannot read it (No such file" in line
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate\n")
    toml.write_text(toml_text(tmp_path, 1, "", f'[[site]]\nhosts = ["a.tls.test"]\nca_file = "{bad}"\n'))
    assert "site[0].ca_file: expected a PEM bundle" in error_line(peer("--ring", str(toml), "--check"))


def test_check_shows_the_tls_settings_and_the_host_settings_show_verify(pki, tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(toml_text(tmp_path, 1, f'ca_file = "{pki.ca}"',
                              '[[site]]\nhosts = ["self.tls.test"]\nverify = false\n'))
    res = peer("--ring", str(toml), "--check")
    assert res.returncode == 0, res.stderr
    (line,) = [ln for ln in res.stdout.splitlines() if ln.strip().startswith("tls:")]
    assert f"CA {pki.ca}" in line and "no client certificate" in line and "verify off: site[0]" in line
    assert "warning: " in res.stdout and "site[0] (self.tls.test): verify = false" in res.stdout
    host = peer("--ring", str(toml), "--check", "--host", "self.tls.test")
    assert "tls verify false: certificate and host name NOT checked (site[0]: self.tls.test)" in host.stdout
    other = peer("--ring", str(toml), "--check", "--host", "a.tls.test")
    assert f"tls verified against {pki.ca} (crawl.ca_file)" in other.stdout


@contextlib.contextmanager
def farm_thread(pki: TestPki) -> Iterator[HttpsFarm]:
    """The HTTPS farm served by a thread (its own trio.run), for a command run in this process."""
    server = HttpsFarm({n: pki.cert(n) for n in NAMES})
    ready = threading.Event()
    token: list[trio.lowlevel.TrioToken] = []
    cancel: list[trio.CancelScope] = []

    async def serve() -> None:
        with trio.CancelScope() as scope:
            cancel.append(scope)
            token.append(trio.lowlevel.current_trio_token())
            async with trio.open_nursery() as nursery:
                await server.start(nursery)
                ready.set()
                await trio.sleep_forever()

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield server
    finally:
        trio.from_thread.run_sync(cancel[0].cancel, trio_token=token[0])
        thread.join(10)


def test_try_shows_the_certificate_and_the_check_that_applied(pki, tmp_path):
    from peer.commands.trial import main

    toml = tmp_path / "cluster.toml"
    with farm_thread(pki) as server:
        toml.write_text(toml_text(tmp_path, server.port, f'ca_file = "{pki.ca}"',
                                  '[[site]]\nhosts = ["self.tls.test"]\nverify = false\n'))
        res = run_main(main, [f"https://a.tls.test:{server.port}/", "--ring", str(toml)])
        own = run_main(main, [f"https://self.tls.test:{server.port}/", "--ring", str(toml)])
        bad = run_main(main, [f"https://expired.tls.test:{server.port}/", "--ring", str(toml)])
    (line,) = [ln for ln in res.stdout.splitlines() if ln.startswith("tls:")]
    assert "verified (certificate and host name)" in line and "ALPN http/1.1" in line
    assert "subject " in line and "names a.tls.test;" in line and "issuer " in line and "expires " in line
    (line,) = [ln for ln in own.stdout.splitlines() if ln.startswith("tls:")]
    assert "NOT verified ([[site]] verify = false)" in line and "commonName=self.tls.test" in line
    (line,) = [ln for ln in bad.stdout.splitlines() if ln.startswith("tls:")]
    assert "handshake failed: tls_expired: certificate has expired" in line


def test_a_crawl_over_https_fetches_each_page_once_with_its_names_certificate(pki, tmp_path):
    import duckdb

    toml = tmp_path / "cluster.toml"
    with farm_thread(pki) as server:
        port = server.port
        seeds = ", ".join(f'"https://{n}:{port}/"' for n in NAMES)
        toml.write_text(toml_text(tmp_path, port, f'ca_file = "{pki.ca}"',
                                  '[[site]]\nhosts = ["self.tls.test"]\nverify = false\n', seeds=seeds))
        res = peer("--ring", str(toml), "--progress", "0.5")
        log = list(server.log)
    assert res.returncode == 0, res.stderr
    assert "site[0] (self.tls.test): verify = false" in res.stderr  # warned at start
    good = ("a.tls.test", "b.tls.test", "c.tls.test", "self.tls.test")
    # The server's log: every page of each good name fetched exactly once, over
    # its own name's SNI and ALPN http/1.1; nothing of the failing names.
    assert sorted((e.sni, e.host, e.path) for e in log) == sorted(
        (n, f"{n}:{port}", p) for n in good for p in ("/", "/a", "/b"))
    assert {e.alpn for e in log} == {"http/1.1"}
    with duckdb.connect(str(tmp_path / "solo" / "pages.duckdb"), read_only=True) as con:
        rows = dict(con.execute("SELECT url, error FROM pages WHERE error IS NOT NULL").fetchall())
    assert rows == {f"https://expired.tls.test:{port}/": "tls_expired",
                    f"https://wrong.tls.test:{port}/": "tls_hostname"}
