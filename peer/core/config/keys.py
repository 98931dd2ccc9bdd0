"""How a cluster.toml key is declared: its type, default, one-line doc and check, in one field.

Apart from ``peer.core.config.cluster`` so that a section may live in a module of
its own (``peer.core.config.sitemaps``) without importing the whole loader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

__all__ = ["Check", "key"]

# A check returns None when the value is fine, else what was expected.
Check = Callable[[Any], "str | None"]


def key(kind: type | tuple[type, ...], default: Any, doc: str, check: Check | None = None) -> Any:
    """A config key: its TOML type, default, documentation and extra check."""
    meta = {"kind": kind, "doc": doc, "check": check}
    if isinstance(default, (list, dict)):
        frozen = tuple(default) if isinstance(default, list) else dict(default)
        return field(default_factory=lambda: frozen, metadata=meta)
    return field(default=default, metadata=meta)
