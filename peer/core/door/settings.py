"""The ring's live settings document as the crawl reads it: the ring's ``SettingsPort`` (pure).

The ring carries the document of each config epoch (``ring.membership.epochs``)
as an opaque text, since ``ring`` never imports ``peer``; this module is
the one place that text meets ``peer.core.config.livekeys``' document:

- the text is the document as canonical JSON (keys sorted, no spaces):
  livekeys' documents are flat dicts of floats, ints, strings, booleans and
  lists, which JSON keeps exactly, and a data_dir's ``settings.json`` stays
  readable by a person;
- :class:`LiveSettings` is the steward's ``assign`` (``ring set``'s KEY=VALUE
  checked by the config file's own parsers, ``pause`` and ``resume``), the
  fingerprint (livekeys', over the decoded document, so every member computes
  the same), the keys two documents differ in, and whether one pauses;
- :func:`initial` is a peer's epoch 0: its cluster.toml's live part.

A text from a member that is not a document (a member of another build, a
forgery) is remote input: its fingerprint is 0, which no real document has
in practice (``ring.epochwatch`` drops a record whose fingerprint does not
match its text), and it pauses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from peer.core.config.cluster import ClusterConfig
from peer.core.config.livekeys import assign, differing_keys, fingerprint, live_document, set_paused
from peer.errors import ConfigError
from ring.membership.epochs import ConfigEpoch
from ring.messages import SettingsAction

__all__ = ["LiveSettings", "decode_doc", "encode_doc", "initial"]


def encode_doc(doc: Mapping[str, Any]) -> str:
    """The document as the ring carries it."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def decode_doc(text: str) -> dict[str, Any] | None:
    """The document a text carries, or None when it is not one."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def initial(cfg: ClusterConfig) -> ConfigEpoch:
    """Epoch 0: the live part of this peer's cluster.toml, not paused."""
    doc = set_paused(live_document(cfg), False)
    return ConfigEpoch(0, fingerprint(doc), encode_doc(doc))


class LiveSettings:
    """``ring.crawlport.SettingsPort`` over ``peer.core.config.livekeys`` (module docstring)."""

    def assign(self, doc: str, action: SettingsAction, assignments: Sequence[str]) -> str:
        current = decode_doc(doc)
        if current is None:
            raise ValueError("this peer's settings document is unreadable")
        try:
            if action is not SettingsAction.SET:
                current = set_paused(current, action is SettingsAction.PAUSE)
            if assignments:
                current = assign(current, assignments)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return encode_doc(current)

    def fingerprint(self, doc: str) -> int:
        d = decode_doc(doc)
        if d is None:
            return 0
        try:
            return fingerprint(d)
        except (TypeError, ValueError):  # msgpack refuses a value no document holds
            return 0

    def differing(self, a: str, b: str) -> list[str]:
        da, db = decode_doc(a), decode_doc(b)
        if da is None or db is None:
            return ["(an unreadable document)"]
        return differing_keys(da, db)

    def paused(self, doc: str) -> bool:
        d = decode_doc(doc)
        return bool(d.get("paused", False)) if d is not None else False
