"""How a cluster.toml key is declared, checked and read: one field per key, a section per table.

``key`` declares a key (its TOML type, default, one-line doc and check) as a
dataclass field; ``build`` makes a section from its TOML table, every value
converted and checked, and an unknown key refused with the likeliest one
meant. Apart from ``peer.core.config.cluster`` so that every section module,
``[[site]]`` blocks included, builds on them without importing the loader.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from peer.errors import ConfigError

__all__ = ["ELSEWHERE", "REQUIRED", "Check", "at_least_one", "build", "key", "non_empty", "non_negative", "positive",
           "reject_unknown", "type_name"]

#: The default of a key that has none: the file must set it.
REQUIRED: Any = dataclasses.MISSING

# A check returns None when the value is fine, else what was expected.
Check = Callable[[Any], "str | None"]


def key(kind: type | tuple[type, ...], default: Any, doc: str, check: Check | None = None) -> Any:
    """A config key: its TOML type, default, documentation and extra check."""
    meta = {"kind": kind, "doc": doc, "check": check}
    if isinstance(default, (list, dict)):
        frozen = tuple(default) if isinstance(default, list) else dict(default)
        return field(default_factory=lambda: frozen, metadata=meta)
    return field(default=default, metadata=meta)


def non_negative(v: Any) -> str | None:
    """The check of a key that may be zero but not below."""
    return None if v >= 0 else "a number >= 0"


def non_empty(v: Any) -> str | None:
    """The check of a string key that must say something."""
    return None if v.strip() else "a non-empty string"


def positive(v: Any) -> str | None:
    """The check of a key that must be above zero."""
    return None if v > 0 else "a number > 0"


def at_least_one(v: Any) -> str | None:
    """The check of a count that must be at least one."""
    return None if v >= 1 else "an integer >= 1"


def build(cls: type, table: Mapping[str, Any], where: str, prefix: str) -> Any:
    """A section (or a ``[[peer]]``/``[[site]]`` entry) of class ``cls`` from its TOML table,
    every key converted and checked; ConfigError names the key path under ``prefix``."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    reject_unknown(table, list(fields), where, prefix)
    values: dict[str, Any] = {}
    for name, f in fields.items():
        keypath = f"{prefix}.{name}"
        if name not in table:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(where, keypath, f"is required ({f.metadata['doc']})")
            continue
        values[name] = _convert(table[name], f.metadata["kind"], where, keypath)
        check = f.metadata["check"]
        if check is not None and (expected := check(values[name])) is not None:
            raise ConfigError(where, keypath, f"expected {expected}, got {table[name]!r}")
    try:
        return cls(**values)
    except ValueError as exc:  # keys checked against each other (a section's __post_init__)
        raise ConfigError(where, prefix, str(exc)) from None


def _convert(value: Any, kind: type, where: str, keypath: str) -> Any:
    # bool is an int in Python; in a config file `true` where a number is
    # expected is a mistake, not 1.
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(where, keypath, f"expected true or false, got {type_name(value)} {value!r}")
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(where, keypath, f"expected an integer, got {type_name(value)} {value!r}")
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise ConfigError(where, keypath, f"expected a number, got {type_name(value)} {value!r}")
    if kind is str:
        if isinstance(value, str):
            return value
        raise ConfigError(where, keypath, f"expected a string, got {type_name(value)} {value!r}")
    if kind is list:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(where, keypath, f"expected a list of strings, got {type_name(value)} {value!r}")
    if kind is dict:
        if isinstance(value, dict):
            out: dict[str, str | tuple[str, ...]] = {}
            for k, v in value.items():
                if isinstance(v, str):
                    out[k] = v
                elif isinstance(v, list) and v and all(isinstance(x, str) for x in v):
                    out[k] = tuple(v)
                else:
                    raise ConfigError(where, f"{keypath}.{k}", f"expected an IP address string or a list of them, got {v!r}")
            return out
        raise ConfigError(where, keypath, f"expected a table of host = IP, got {type_name(value)} {value!r}")
    raise AssertionError(f"unknown config kind {kind!r}")  # pragma: no cover - our bug


#: Keys other crawlers have (Scrapy's settings, Crawlee's options) that a
#: newcomer writes here, and where ringcrawl says the same.
ELSEWHERE = {
    **dict.fromkeys(("allow_paths", "deny_paths", "allow", "deny", "include", "exclude", "allowed_urls"),
                    'scope by URL is crawl.rules, e.g. ["include:*/library/*", "exclude:re:[?&]q="]'),
    **dict.fromkeys(("rate_limit", "download_delay", "delay", "requests_per_second"),
                    "the pace of a host is politeness.rate, in pages per minute"),
    **dict.fromkeys(("robotstxt_obey", "respect_robots", "robots"), "robots.txt is crawl.obey_robots"),
    **dict.fromkeys(("depth", "depth_limit"), "link depth is crawl.max_depth"),
    **dict.fromkeys(("max_requests", "closespider_pagecount"), "the page limit is crawl.max_pages"),
    **dict.fromkeys(("sitemap", "sitemap_urls"), "sitemaps to start from are [sitemaps] seeds"),
}


def reject_unknown(table: Mapping[str, Any], known: list[str], where: str, prefix: str) -> None:
    """ConfigError on the first key of ``table`` not in ``known``, with the likeliest one meant."""
    for key in table:
        if key not in known:
            keypath = f"{prefix}.{key}" if prefix else key
            # 0.8: typos score 0.88-0.97 (concurency, alow_hosts, dead_afer);
            # at difflib's 0.6, allow_paths suggested allow_private (0.75) and
            # rate_limit integral_limit (0.67), keys that do something else.
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            if key.lower() in ELSEWHERE:
                hint = f"; {ELSEWHERE[key.lower()]}"
            raise ConfigError(where, keypath, f"unknown key{hint}")


def type_name(value: Any) -> str:
    """A TOML value's type as an error message says it: "an integer", "a table"."""
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)
