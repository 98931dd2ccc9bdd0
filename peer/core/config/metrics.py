"""``[metrics]``: how every peer's metrics server is protected (docs/operations.md, Protecting the metrics).

Each peer's own ``[[peer]] metrics_address`` (or a joiner's
``--metrics-address``) says where it listens; this section, shared by all
peers, says how a scrape proves itself and whether the port speaks TLS. It
follows Prometheus's own scrape config: ``authorization: {credentials_file:
...}`` sends ``Authorization: Bearer <token>`` (RFC 6750 §2.1), and a
``scheme: https`` target is served with ``tls_cert`` and ``tls_key``.

Rules:

1. **An address without a host is loopback.** ``"9101"`` and ``":9101"``
   mean ``127.0.0.1:9101``: a routable address must be written out, so a
   port is never opened to the network by leaving a host out
   (:func:`metrics_listen`).
2. **The token is never in cluster.toml** (the file is shared and often
   committed): ``token_file`` names a file, ``token_env`` an environment
   variable, and one of them at most.
3. **The probes stay open.** ``/healthz`` and ``/readyz`` answer without the
   token: a kubelet's httpGet probe sends only fixed headers written in the
   manifest, where a Secret's value cannot go, and their bodies say no
   more than ``ok`` or why the peer is not ready (vouch counts, never ids,
   addresses or figures). ``/metrics`` takes the token when one is set.
4. **Paths** are relative to cluster.toml's directory, as ``data_dir`` is.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peer.core.config.keys import key
from peer.errors import ConfigError

__all__ = ["LOOPBACK", "MetricsConfig", "is_loopback", "metrics_listen", "resolve_metrics"]

#: Where an address without a host listens (rule 1).
LOOPBACK = "127.0.0.1"

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]*):(?P<port>[0-9]{1,5})")


def _env_name(v: Any) -> str | None:
    return None if not v or _ENV_NAME.fullmatch(v) else "an environment variable's name (letters, digits, '_')"


def metrics_listen(address: str) -> tuple[str, int]:
    """``host:port``, ``:port`` or ``port`` -> (host, port), loopback without a host (rule 1).

    ValueError says what was expected.
    """
    text = address.strip()
    if text.isdigit():
        text = ":" + text
    m = _HOST_PORT.fullmatch(text)
    if not m or not 0 <= int(m["port"]) <= 65535:
        raise ValueError(f"expected host:port such as '127.0.0.1:9101', or a port alone for loopback "
                         f"(port 0-65535; empty: off), got {address!r}")
    return m["host"].strip("[]") or LOOPBACK, int(m["port"])


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) stays on this machine: 127/8, ::1 or localhost."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # another name: it may resolve anywhere


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """``[metrics]``: the metrics servers' bearer token and TLS (module docstring)."""

    token_file: str = key(str, "", "file whose first line is the bearer token a scrape of /metrics must send (Authorization: Bearer <token>, as Prometheus's authorization.credentials_file), relative to cluster.toml; empty: no token (/healthz and /readyz stay open either way)")
    token_env: str = key(str, "", "name of the environment variable holding that token instead of a file; empty: none", _env_name)
    tls_cert: str = key(str, "", "PEM certificate (chain) the metrics server presents, serving HTTPS (Prometheus: scheme https), relative to cluster.toml; empty: plain HTTP")
    tls_key: str = key(str, "", "PEM private key of tls_cert, relative to cluster.toml; empty: in tls_cert's file")


def resolve_metrics(m: MetricsConfig, base: Path, where: str) -> MetricsConfig:
    """``[metrics]`` with its paths relative to ``base`` (rule 4), the combinations checked (rule 2)."""
    if m.token_file and m.token_env:
        raise ConfigError(where, "metrics.token_env", "set token_file or token_env, not both: which token counts?")
    if m.tls_key and not m.tls_cert:
        raise ConfigError(where, "metrics.tls_key", "set metrics.tls_cert too: the key is tls_cert's")

    def resolved(value: str) -> str:
        if not value:
            return value
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else base / p)

    return dataclasses.replace(m, token_file=resolved(m.token_file), tls_cert=resolved(m.tls_cert),
                               tls_key=resolved(m.tls_key))
