"""Priority rules: which URLs a host's queue serves ahead of their depth, or behind.

``[frontier] priority`` is one list of strings ``"<boost>:<pattern>"``, tried
in order on the whole normalised URL; the first that matches gives the URL
its boost, an integer from -4 to +4 (``"+2:*/docs/*"``, ``"-1:re:/archive/"``).
``<pattern>`` is ``crawl.rules``' (:func:`peer.core.urls.rules.url_matcher`: a
glob where ``*`` crosses ``/``, or ``re:<regex>`` searched). A boost of +1
serves the URL as if it were one level shallower (peer/core/frontier/order.py
rule 1); a sitemap's ``<priority>`` adds its own. A list, like
``crawl.rules``, for the same reason: the order is the meaning. A
``[[site]]`` block's ``priority`` replaces the list for its hosts, whole, as
its ``rules`` replace ``crawl.rules``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from peer.core.frontier.order import MAX_BOOST
from peer.core.urls.rules import parse_pattern
from peer.errors import ConfigError

__all__ = ["PriorityRule", "PriorityRules", "parse_priority_rules"]

_FORMS = f"'<boost>:<glob>' or '<boost>:re:<regex>', the boost an integer from -{MAX_BOOST} to +{MAX_BOOST}"


@dataclass(frozen=True, slots=True)
class PriorityRule:
    """``frontier.priority[index]``: URLs ``pattern`` matches get ``boost``."""

    index: int
    boost: int
    pattern: str
    matches: Callable[[str], object] = field(repr=False, compare=False)
    #: Where the rule is written: ``frontier.priority``, or a ``[[site]]`` block's ``site[i].priority``.
    keypath: str = "frontier.priority"

    def __str__(self) -> str:
        return f"{self.keypath}[{self.index}] {self.pattern!r}"


@dataclass(frozen=True, slots=True)
class PriorityRules:
    """The ``[frontier] priority`` list, parsed."""

    rules: tuple[PriorityRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def first(self, url: str) -> PriorityRule | None:
        """The first rule matching ``url``, or None."""
        for r in self.rules:
            if r.matches(url):
                return r
        return None

    def boost(self, url: str) -> int:
        """``url``'s boost: the first matching rule's, 0 if none matches."""
        rule = self.first(url)
        return rule.boost if rule is not None else 0


def _rule(text: str, index: int, where: str, keypath: str) -> PriorityRule:
    key = f"{keypath}[{index}]"
    num, sep, pattern = text.partition(":")
    if not sep or not re.fullmatch(r"[+-]?[0-9]+", num.strip()):
        raise ConfigError(where, key, f"expected {_FORMS}, got {text!r}")
    boost = int(num)
    if not -MAX_BOOST <= boost <= MAX_BOOST:
        raise ConfigError(where, key, f"expected a boost from -{MAX_BOOST} to +{MAX_BOOST}, got {num!r}")
    return PriorityRule(index, boost, pattern, parse_pattern(pattern, text, where, key, _FORMS), keypath)


def parse_priority_rules(texts: Iterable[str], where: str, keypath: str = "frontier.priority") -> PriorityRules:
    """``[frontier] priority`` (or a ``[[site]]`` block's ``priority``, ``keypath``);
    :class:`ConfigError` names the entry at fault."""
    return PriorityRules(tuple(_rule(t, i, where, keypath) for i, t in enumerate(texts)))
