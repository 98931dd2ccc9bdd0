"""TLS contexts for the fetcher: one per distinct setting, built once, chosen per host.

A host's setting is its ``[[site]]`` block's ``verify`` and ``ca_file`` over
``crawl.ca_file`` (peer/core/config/sites.py, peer/core/config/tls.py); the client
certificate is ``crawl.client_cert``'s for every context. Rules:

1. **Nothing set, nothing paid.** Without a TLS option the one context is
   httpx's defaults (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), made at the
   first https URL as before (loading a CA bundle costs ~20 ms, httpx's
   import 60 ms more), and a host costs no lookup.
2. **Options set: built at start.** Every distinct (ca_file, verify) pair's
   context is built when the fetcher is made, so a missing, unreadable or
   malformed file is one line naming its key before anything is fetched
   (:class:`peer.errors.ConfigError`, the file as its path), never a
   ``tls`` row per URL. A host then costs its block's memoised lookup.
3. **ALPN offers http/1.1 only**: the fetcher speaks nothing else (as
   httpcore did: no h2 offered).
4. **A passphrase comes from the environment** (``client_key_password_env``);
   an encrypted key without one is refused, never prompted for on a
   terminal (OpenSSL's default when no password is given), and a PKCS#12 or
   DER file is refused with the openssl command that converts it.
5. ``verify = false`` is ``CERT_NONE`` without the host-name check, for its
   block's hosts only; each such block is a warning of ``--check`` and of a
   run's start (``peer.commands.check.config_warnings``).

:func:`check_tls` builds them once for the command line, before a run or
``--check`` says anything else, so a bad file is one line and exit 2.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping

from peer.core.config.cluster import ClusterConfig, CrawlConfig
from peer.core.config.sites import SiteSettings
from peer.core.config.tls import tls_options_set
from peer.errors import ConfigError

__all__ = ["ALPN", "TlsContexts", "check_tls"]

#: What ALPN offers (rule 3).
ALPN = ["http/1.1"]


class TlsContexts:
    """The context for each host: ``contexts.for_host(host) -> ssl.SSLContext``."""

    __slots__ = ("_crawl", "_sites", "_environ", "_default", "_by_setting", "_by_block", "_fixed")

    def __init__(self, crawl: CrawlConfig, sites: SiteSettings | None = None, *,
                 ssl_context: ssl.SSLContext | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self._crawl = crawl
        self._environ = os.environ if environ is None else environ
        self._default: ssl.SSLContext | None = None
        self._by_setting: dict[tuple[str, bool], ssl.SSLContext] = {}
        self._by_block: dict[int, ssl.SSLContext] = {}
        # A caller's context (tests, scripts) is used for every host, as given.
        self._fixed = ssl_context is not None
        if ssl_context is not None:
            ssl_context.set_alpn_protocols(ALPN)
            self._default = ssl_context
        options = not self._fixed and tls_options_set(crawl, sites.blocks if sites else ())
        # Without options no host needs its block looked up (rule 1).
        self._sites = sites if options and sites else None
        if options:
            self.build_all(sites)

    def build_all(self, sites: SiteSettings | None) -> None:
        """Build every distinct setting's context now (rule 2)."""
        crawl = self._crawl
        self._context(crawl.ca_file, True)
        if sites:
            for i, block in enumerate(sites.blocks):
                verify = block.verify is not False
                if block.ca_file is None:
                    self._by_block[i] = self._context(crawl.ca_file, verify)
                else:
                    self._by_block[i] = self._context(block.ca_file, verify, f"site[{i}].ca_file")

    def for_host(self, host: str) -> ssl.SSLContext:
        """The context for ``host`` (a name, no port)."""
        sites = self._sites
        if sites is None:
            if self._default is None:
                self._default = self._context(self._crawl.ca_file, True)
            return self._default
        block = sites.for_host(host).block
        if block < 0:
            return self._context(self._crawl.ca_file, True)
        return self._by_block[block]

    def _context(self, ca_file: str, verify: bool, key: str = "crawl.ca_file") -> ssl.SSLContext:
        ctx = self._by_setting.get((ca_file, verify))
        if ctx is None:
            ctx = self._by_setting[(ca_file, verify)] = self._build(ca_file, verify, key)
        return ctx

    def _build(self, ca_file: str, verify: bool, key: str) -> ssl.SSLContext:
        crawl = self._crawl
        if not verify:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif ca_file:
            _readable(ca_file, key)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname, CERT_REQUIRED
            try:
                ctx.load_verify_locations(cafile=ca_file)
            except ssl.SSLError as exc:
                raise ConfigError(ca_file, key, f"expected a PEM bundle of CA certificates ({exc.reason or exc})") from None
        else:
            import httpx

            ctx = httpx.create_ssl_context()
        if crawl.client_cert:
            self._load_client_cert(ctx)
        ctx.set_alpn_protocols(ALPN)
        return ctx

    def _load_client_cert(self, ctx: ssl.SSLContext) -> None:
        crawl = self._crawl
        cert = crawl.client_cert
        key = crawl.client_key or cert
        cert_text = _readable(cert, "crawl.client_cert")
        key_text = _readable(key, "crawl.client_key") if key != cert else cert_text
        key_name = "crawl.client_key" if crawl.client_key else "crawl.client_cert"
        for path, text, name in ((cert, cert_text, "crawl.client_cert"), (key, key_text, key_name)):
            if "-----BEGIN" not in text:
                raise ConfigError(path, name, "expected a PEM file (-----BEGIN ...); a PKCS#12 (.p12, .pfx) "
                                  "or DER file is not supported: convert it with openssl pkcs12 -in FILE "
                                  "-out FILE.pem, or openssl x509 -inform der")
        encrypted = "ENCRYPTED" in key_text
        env = crawl.client_key_password_env
        if encrypted and not env:
            raise ConfigError(key, key_name, "the key is encrypted: set crawl.client_key_password_env to "
                              "the name of an environment variable holding its passphrase")
        password = b""  # never None: OpenSSL would prompt on the terminal (rule 4)
        if env:
            if env not in self._environ:
                raise ConfigError(key, "crawl.client_key_password_env", f"the environment variable {env} is not set")
            password = self._environ[env].encode()
        try:
            ctx.load_cert_chain(cert, crawl.client_key or None, password=password)
        except ssl.SSLError as exc:
            why = "wrong passphrase, or " if encrypted else ""
            raise ConfigError(key, key_name, f"cannot load the client certificate and key: {why}"
                              f"a key that is not client_cert's ({exc.reason or exc})") from None


def _readable(path: str, key: str) -> str:
    """The file's text; a ConfigError naming ``key`` if it cannot be read (rule 2)."""
    try:
        with open(path, encoding="latin-1") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(path, key, f"cannot read it ({exc.strerror or exc})") from None


def check_tls(cfg: ClusterConfig) -> None:
    """Build the config's TLS contexts once, if any option is set: a ConfigError
    naming the key and the file if one cannot be read or used (rule 2)."""
    if tls_options_set(cfg.crawl, cfg.sites):
        TlsContexts(cfg.crawl, SiteSettings(cfg.sites, cfg.crawl, cfg.politeness))
