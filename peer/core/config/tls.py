"""TLS options in the config: paths resolved, combinations checked, what ``--check`` says.

The keys are ``crawl.ca_file``, ``crawl.client_cert``, ``crawl.client_key``,
``crawl.client_key_password_env`` and a ``[[site]]`` block's ``verify`` and
``ca_file`` (peer/core/config/sites.py). peer/net/tls.py reads the files and builds
the contexts; this module only decides, reading no file.

Rules:

1. **Paths** are relative to cluster.toml's directory, as ``data_dir`` is,
   so a peer started from any working directory reads the same files.
2. **A passphrase is never in cluster.toml** (the file is shared by every
   peer, and often committed): ``client_key_password_env`` names the
   environment variable that holds it.
3. **Combinations** that cannot mean anything are a ConfigError naming the
   key: a ``client_key`` or a passphrase without a ``client_cert``, a
   ``client_key_password_env`` that is not an environment variable's name.
4. **No global ``verify``.** Turning the checks off is per ``[[site]]`` block,
   for named hosts, and each such block is a warning at start
   (:func:`unverified_warnings`): a crawler that trusts every certificate
   stores an attacker's pages under the site's name.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING

from peer.errors import ConfigError

if TYPE_CHECKING:
    from peer.core.config.sections import CrawlConfig
    from peer.core.config.sites import SiteBlock

__all__ = ["TLS_KEYS", "describe_tls", "resolve_tls_paths", "tls_options_set", "unverified_warnings"]

#: The ``[crawl]`` keys of TLS: any of them set, the contexts are built at start.
TLS_KEYS = ("ca_file", "client_cert", "client_key", "client_key_password_env")
_PATH_KEYS = ("ca_file", "client_cert", "client_key")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _resolved(value: str, base: Path) -> str:
    if not value:
        return value
    p = Path(value).expanduser()
    return str(p if p.is_absolute() else base / p)


def resolve_tls_paths(c: CrawlConfig, blocks: tuple[SiteBlock, ...], base: Path,
                      where: str) -> tuple[CrawlConfig, tuple[SiteBlock, ...]]:
    """``[crawl]`` and the blocks with their TLS paths relative to ``base`` (rule 1), the
    combinations checked (rule 3)."""
    if c.client_key and not c.client_cert:
        raise ConfigError(where, "crawl.client_key", "set crawl.client_cert too: the key is client_cert's")
    if c.client_key_password_env and not c.client_cert:
        raise ConfigError(where, "crawl.client_key_password_env", "set crawl.client_cert too: the passphrase is its key's")
    if c.client_key_password_env and not _ENV_NAME.fullmatch(c.client_key_password_env):
        raise ConfigError(where, "crawl.client_key_password_env",
                          f"expected the name of an environment variable (letters, digits, _), got "
                          f"{c.client_key_password_env!r}; the passphrase itself never goes in cluster.toml")
    if not any(getattr(c, k) for k in _PATH_KEYS) and not any(b.ca_file for b in blocks):
        return c, blocks
    crawl = dataclasses.replace(c, ca_file=_resolved(c.ca_file, base), client_cert=_resolved(c.client_cert, base),
                                client_key=_resolved(c.client_key, base))
    sites = tuple(dataclasses.replace(b, ca_file=_resolved(b.ca_file, base)) if b.ca_file else b
                  for b in blocks)
    return crawl, sites


def tls_options_set(crawl: CrawlConfig, blocks: tuple[SiteBlock, ...]) -> bool:
    """Whether any TLS option is set; if not, the fetcher's default context is made lazily."""
    return any(getattr(crawl, k) for k in TLS_KEYS) or any(
        b.verify is False or b.ca_file is not None for b in blocks)  # verify = true is the default


def unverified_warnings(blocks: tuple[SiteBlock, ...]) -> list[str]:
    """One warning per block with ``verify = false`` (rule 4), naming the block and its hosts."""
    return [f"site[{i}] ({b.label}): verify = false: certificates and host names of these hosts "
            "are NOT checked; anyone on the path can serve their pages"
            for i, b in enumerate(blocks) if b.verify is False]


def describe_tls(crawl: CrawlConfig, blocks: tuple[SiteBlock, ...]) -> str:
    """The TLS settings in one line, for ``--check``."""
    parts = [f"CA {crawl.ca_file}" if crawl.ca_file else "the default CA store"]
    if crawl.client_cert:
        key = crawl.client_key or "in the certificate's file"
        parts.append(f"client certificate {crawl.client_cert} (key {key}"
                     + (f", passphrase from ${crawl.client_key_password_env})" if crawl.client_key_password_env else ")"))
    else:
        parts.append("no client certificate")
    off = [f"site[{i}]" for i, b in enumerate(blocks) if b.verify is False]
    own = [f"site[{i}]" for i, b in enumerate(blocks) if b.ca_file is not None and b.verify is not False]
    if own:
        parts.append("own CA: " + ", ".join(own))
    parts.append("verify off: " + ", ".join(off) if off else "verify on for every host")
    return "tls: " + "; ".join(parts) + "; ALPN http/1.1"
