"""``[revisit]``: continuous crawling, each key with its default and check (pure).

A section of cluster.toml in a module of its own (``peer.core.config.keys``),
listed in ``peer.core.config.cluster.SECTIONS``. The rules the keys govern are
:mod:`peer.core.revisit.policy`'s (intervals, validators) and
:mod:`peer.core.revisit.hostmix`'s (``revisit_share``); how the crawl runs them is
:mod:`peer.core.revisit.recrawl`'s. ``__post_init__`` checks the keys against each
other (``max_interval >= min_interval``), which one key's check cannot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from peer.core.config.keys import at_least_one, key

__all__ = ["RevisitConfig"]

_HOUR = 3600.0
_DAY = 86400.0


def _positive(v: Any) -> str | None:
    return None if math.isfinite(v) and v > 0 else "a number of seconds > 0"


def _share(v: Any) -> str | None:
    return None if 0.0 <= v <= 1.0 else "a number within 0.0-1.0"


def _above_one(v: Any) -> str | None:
    return None if math.isfinite(v) and v > 1.0 else "a number > 1"


def _below_one(v: Any) -> str | None:
    return None if 0.0 < v < 1.0 else "a number within (0, 1)"


def _jitter(v: Any) -> str | None:
    return None if 0.0 <= v <= 0.5 else "a number within 0.0-0.5"


def _non_negative(v: Any) -> str | None:
    return None if math.isfinite(v) and v >= 0 else "a number of seconds >= 0"


@dataclass(frozen=True, slots=True)
class RevisitConfig:
    """``[revisit]``: continuous crawling: fetched pages come due again and are fetched again."""

    enabled: bool = key(bool, False, "revisit fetched pages; the crawl then runs until stopped or run_for, not until its frontier is empty")
    min_interval: float = key(float, _HOUR, "seconds: no page is revisited sooner than this after its last visit", _positive)
    max_interval: float = key(float, 30 * _DAY, "seconds: no page waits longer than this between visits (>= min_interval)", _positive)
    initial_interval: float = key(float, _DAY, "seconds: a page's first interval when no sitemap <changefreq> seeds it", _positive)
    revisit_share: float = key(float, 0.5, "the share of a host's starts that go to due revisits while new URLs wait too", _share)
    inc_factor: float = key(float, 1.5, "the interval's factor after a visit that found the page unchanged", _above_one)
    dec_factor: float = key(float, 0.5, "the interval's factor after a visit that found the page changed", _below_one)
    jitter: float = key(float, 0.1, "a due time's relative jitter, so pages fetched in one burst do not come due in one", _jitter)
    max_validator_length: int = key(int, 256, "bytes: an ETag or Last-Modified longer than this is not stored (counted)", at_least_one)
    run_for: float = key(float, 0.0, "seconds a continuous crawl runs before it stops by itself; 0: until stopped (SIGINT/SIGTERM)", _non_negative)
    memory_window: float = key(float, 6 * _HOUR, "seconds: revisit records due within this (and one window more) stay in RAM, the rest wait on disk in data_dir/state/revisits; 0: all in RAM", _non_negative)

    def __post_init__(self) -> None:
        problems = [why for name, check in (
            ("min_interval", _positive), ("max_interval", _positive), ("initial_interval", _positive),
            ("revisit_share", _share), ("inc_factor", _above_one), ("dec_factor", _below_one),
            ("jitter", _jitter), ("max_validator_length", at_least_one), ("run_for", _non_negative),
            ("memory_window", _non_negative),
        ) if (why := _problem(name, getattr(self, name), check))]
        if not problems and self.max_interval < self.min_interval:
            problems.append(f"max_interval must be >= min_interval, not {self.max_interval!r}")
        if problems:
            raise ValueError("[revisit] " + "; ".join(problems))

    def clamp(self, interval: float) -> float:
        """``interval`` within ``[min_interval, max_interval]``."""
        return min(self.max_interval, max(self.min_interval, interval))


def _problem(name: str, value: Any, check: Any) -> str | None:
    expected = check(value)
    return None if expected is None else f"{name} must be {expected}, not {value!r}"
