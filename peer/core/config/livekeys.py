"""The live part of cluster.toml: the settings a running ring may change, as one document (pure).

``ringcrawl-ring set KEY=VALUE`` changes a running crawl without a restart;
``ring pause`` and ``resume`` stop and start it. What they change is one
document, the same on every member (the ring carries it as a versioned
epoch), made of the keys below and nothing else:

=============================  ===============================================
``politeness.rate``            pages per minute per host (the PID's setpoint)
``politeness.host_concurrency``  fetches in flight per host
``politeness.min_delay``,      the PID's clamps and a new host's first delay
``max_delay``, ``initial_delay``
``crawl.max_pages``            the cluster-wide page limit
``crawl.rules``                the include/exclude URL rules
``site``                       the ``[[site]]`` blocks: ``hosts``, the five
                               politeness keys above, ``rules``
``paused``                     whether any request may start
=============================  ===============================================

Rules:

1. **The document** (:func:`live_document`) is a flat dict, dotted key ->
   value, keys sorted, values as the config holds them after its checks
   (floats for numbers, lists for lists): msgpack-able, and equal for two
   configs exactly when their live parts are. ``site`` is a list of blocks,
   each a dict of the keys the block sets (a key it does not set falls back
   to the global one, as in the file: peer/core/config/sites.py rule 2).
2. **Assignments** (:func:`assign`) are ``KEY=VALUE``, VALUE in TOML
   syntax, as it would be written in cluster.toml: ``politeness.rate=30``,
   ``crawl.max_pages=500``, ``crawl.rules=["exclude:*/private/*"]``. A
   ``[[site]]`` block is named as error messages and ``--check --host``
   name it, by its position: ``site[0].rate=6`` changes a key of the first
   block; ``site[2]={hosts=["*.example.org"], rate=6}`` replaces the third,
   or adds it when there are two; ``site=[...]`` replaces them all (``[]``:
   none). The assignments of one command are one change: each is applied
   in order, then the result is checked as a whole, so
   ``politeness.rate=0.5 politeness.max_delay=120`` passes where either alone
   would not.
3. **Checks** are the config file's own (``peer.core.config.keys.build``,
   ``check_politeness``, ``parse_rules``, ``parse_sites``), so a live value
   is refused exactly where the same value in cluster.toml would be. A key
   that exists but cannot change live (``ring.lease``, ``crawl.seeds``, a
   block's ``proxy``...) is refused by name, as is an unknown key:
   :class:`peer.errors.LiveSettingError`, one line, the key first.
4. **What stays put.** A block's keys that cannot change live (its
   ``user_agent``, ``headers``, store options, proxy, TLS and cookies) are
   not in the document: :func:`with_live` keeps them with the block's
   position in cluster.toml, so a block added live has none, and replacing
   the list keeps each position's. They shape connections and files made at
   start (TLS contexts, proxy credentials, the results' columns), which is
   why they are not live.
5. **The fingerprint** (:func:`fingerprint`) is mmh3's 64-bit hash of the
   document's msgpack form, keys sorted at every level: two members compare
   eight bytes, not documents.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import mmh3
import msgpack

from peer.core.config.cluster import SECTIONS, ClusterConfig, check_politeness
from peer.core.config.keys import build
from peer.core.config.sections import CrawlConfig, PeerSpec, PolitenessConfig
from peer.core.config.sites import POLITENESS_KEYS, SiteBlock, parse_sites
from peer.core.urls.rules import parse_rules
from peer.errors import ConfigError, LiveSettingError

__all__ = ["LIVE_KEYS", "LIVE_SITE_KEYS", "WHERE", "assign", "check_document", "differing_keys",
           "fingerprint", "is_live", "live_document", "set_paused", "with_live"]

#: How a live change's errors name their source (``ring set: crawl.max_pages: ...``).
WHERE = "ring set"

_POLITENESS = tuple(f"politeness.{k}" for k in POLITENESS_KEYS)
#: The top-level keys of the document, sorted (rule 1).
LIVE_KEYS = tuple(sorted((*_POLITENESS, "crawl.max_pages", "crawl.rules", "site", "paused")))
#: The keys of a ``[[site]]`` block that can change live (rule 4).
LIVE_SITE_KEYS = ("hosts", *POLITENESS_KEYS, "rules")

_SITE_KEY = re.compile(r"site\[(\d+)\](?:\.(\w+))?")
_HOW = ("change it in every peer's cluster.toml and restart them; live keys: "
        + ", ".join(k for k in LIVE_KEYS if k not in ("site", "paused")) + ", site[N].KEY, paused")


def is_live(key: str) -> bool:
    """Whether a key of the config reference (``politeness.rate``, ``site.rules``) can change live."""
    return key in LIVE_KEYS or (key.startswith("site.") and key[5:] in LIVE_SITE_KEYS)


# ---------------------------------------------------------------------------
# The document (rule 1)
# ---------------------------------------------------------------------------


def live_document(config: ClusterConfig) -> dict[str, Any]:
    """The live part of ``config``, ``paused`` false: the document a ring starts from."""
    pol, crawl = config.politeness, config.crawl
    doc: dict[str, Any] = {f"politeness.{k}": getattr(pol, k) for k in POLITENESS_KEYS}
    doc["crawl.max_pages"] = crawl.max_pages
    doc["crawl.rules"] = list(crawl.rules)
    doc["site"] = [_block_entry(b) for b in config.sites]
    doc["paused"] = False
    return _canonical_doc(doc)


def _block_entry(block: SiteBlock) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v)
            for k in LIVE_SITE_KEYS if (v := getattr(block, k)) is not None}


def _canonical_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _canonical(doc[k]) for k in sorted(doc)}


def _canonical(value: Any) -> Any:
    """Dicts with their keys sorted, tuples as lists, at every level."""
    if isinstance(value, Mapping):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def fingerprint(doc: Mapping[str, Any]) -> int:
    """A stable unsigned 64-bit fingerprint of a document (rule 5)."""
    packed = msgpack.packb(_canonical(doc), use_bin_type=True)
    return int(mmh3.hash64(packed, 0, signed=False)[0])


def set_paused(doc: Mapping[str, Any], paused: bool) -> dict[str, Any]:
    """``doc`` with ``paused`` set (``ring pause`` / ``ring resume``)."""
    out = copy.deepcopy(dict(doc))
    out["paused"] = bool(paused)
    return _canonical_doc(out)


# ---------------------------------------------------------------------------
# Assignments (rules 2, 3)
# ---------------------------------------------------------------------------


def assign(doc: Mapping[str, Any], assignments: Sequence[str]) -> dict[str, Any]:
    """``doc`` with ``KEY=VALUE`` assignments applied in order, then checked whole (rules 2, 3).

    :class:`LiveSettingError` names the key of a refused assignment or of
    the value that fails the checks; ``doc`` itself is never changed.
    """
    out = copy.deepcopy(dict(doc))
    for text in assignments:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise LiveSettingError(WHERE, key or text, f"expected KEY=VALUE (VALUE as in cluster.toml), got {text!r}")
        _put(out, key, _toml_value(key, raw))
    return check_document(out)


def _toml_value(key: str, raw: str) -> Any:
    try:
        table = tomllib.loads(f"v = {raw.strip()}")
    except tomllib.TOMLDecodeError:
        table = {}
    if list(table) != ["v"]:
        raise LiveSettingError(WHERE, key, "expected a value written as in cluster.toml (a string in quotes, a "
                               f"list in [...], a table in {{...}}), got {raw!r}")
    return table["v"]


def _put(doc: dict[str, Any], key: str, value: Any) -> None:
    if key in LIVE_KEYS:
        doc[key] = value
        return
    m = _SITE_KEY.fullmatch(key)
    if m is None:
        raise LiveSettingError(WHERE, key, _refusal(key))
    blocks = doc.setdefault("site", [])
    if not isinstance(blocks, list):
        raise LiveSettingError(WHERE, "site", f"expected a list of [[site]] blocks, got {blocks!r}")
    i, sub = int(m[1]), m[2]
    if sub is None:
        if i > len(blocks):
            raise LiveSettingError(WHERE, key, f"{_blocks(blocks)}: site[{len(blocks)}] adds one")
        if i == len(blocks):
            blocks.append(value)
        else:
            blocks[i] = value
        return
    if i >= len(blocks):
        raise LiveSettingError(WHERE, key, f"{_blocks(blocks)}: add one with "
                               f"site[{len(blocks)}]={{hosts=[\"...\"], {sub}=...}}")
    if sub not in LIVE_SITE_KEYS:
        raise LiveSettingError(WHERE, key, _refusal(f"site.{sub}", block=True))
    if not isinstance(blocks[i], dict):
        raise LiveSettingError(WHERE, f"site[{i}]", f"expected a table, got {blocks[i]!r}")
    blocks[i][sub] = value


def _blocks(blocks: list[Any]) -> str:
    n = len(blocks)
    return "there is 1 [[site]] block" if n == 1 else f"there are {n} [[site]] blocks"


def _refusal(key: str, *, block: bool = False) -> str:
    """Why ``key`` cannot be set live: a key of the config that is not live, or no key at all."""
    if block:
        if key.removeprefix("site.") in {f.name for f in dataclasses.fields(SiteBlock)}:
            return ("cannot change live (a block's " + ", ".join(LIVE_SITE_KEYS)
                    + " can); change it in every peer's cluster.toml and restart them")
        return "unknown key of a [[site]] block; live ones: " + ", ".join(LIVE_SITE_KEYS)
    section, _, name = key.partition(".")
    cls = PeerSpec if section == "peer" else SECTIONS.get(section)
    if cls is not None and name in {f.name for f in dataclasses.fields(cls)}:
        return f"cannot change live; {_HOW}"
    if section == "site" or section.startswith("site["):
        return ("a [[site]] block is named by its position, as --check --host HOST shows it: site[0].rate=6, "
                "site[N]={hosts=[...], ...} adds one; its live keys: " + ", ".join(LIVE_SITE_KEYS))
    if section in ("extract", "peer") or section.startswith("peer["):
        return f"cannot change live; {_HOW}"
    close = difflib.get_close_matches(key, [*LIVE_KEYS, *_all_keys()], n=1, cutoff=0.8)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key; {hint}live keys: " + ", ".join(k for k in LIVE_KEYS if k != "site") + ", site[N].KEY"


def _all_keys() -> list[str]:
    return [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)]


def check_document(doc: Mapping[str, Any], where: str = WHERE) -> dict[str, Any]:
    """A document checked as cluster.toml's keys are (rule 3), in its canonical form (rule 1).

    :class:`LiveSettingError` names the first key at fault; a document that
    came from elsewhere (the ring) is checked the same way.
    """
    for key in doc:
        if key not in LIVE_KEYS:
            raise LiveSettingError(where, str(key), _refusal(str(key)))
    try:
        pol = build(PolitenessConfig, {k.partition(".")[2]: doc[k] for k in _POLITENESS if k in doc},
                    where, "politeness")
        check_politeness(pol, where)
        crawl = build(CrawlConfig, {k.partition(".")[2]: doc[k] for k in ("crawl.max_pages", "crawl.rules")
                                     if k in doc}, where, "crawl")
        parse_rules(crawl.rules, where, "crawl.rules")
        raw_sites = doc.get("site", [])
        if isinstance(raw_sites, list):
            for i, table in enumerate(raw_sites):
                for k in table if isinstance(table, dict) else ():
                    if k not in LIVE_SITE_KEYS:
                        raise LiveSettingError(where, f"site[{i}].{k}", _refusal(f"site.{k}", block=True))
        sites = parse_sites(raw_sites, crawl, pol, where)
        paused = doc.get("paused", False)
        if not isinstance(paused, bool):
            raise LiveSettingError(where, "paused", f"expected true or false, got {paused!r}")
    except LiveSettingError:
        raise
    except ConfigError as exc:  # the file's own checks, named as a live change's
        raise LiveSettingError(where, exc.key, exc.message) from None
    out: dict[str, Any] = {f"politeness.{k}": getattr(pol, k) for k in POLITENESS_KEYS}
    out["crawl.max_pages"] = crawl.max_pages
    out["crawl.rules"] = list(crawl.rules)
    out["site"] = [_block_entry(b) for b in sites]
    out["paused"] = paused
    return _canonical_doc(out)


# ---------------------------------------------------------------------------
# Comparing and applying
# ---------------------------------------------------------------------------


def differing_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The dotted keys whose values differ between two documents, sorted; a block by its position.

    ``site[1].rate`` for a key of a block both have, ``site[2]`` for a block
    only one has.
    """
    out: list[str] = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if key == "site" and isinstance(va, list) and isinstance(vb, list):
            for i in range(max(len(va), len(vb))):
                if i >= len(va) or i >= len(vb):
                    out.append(f"site[{i}]")
                    continue
                ba, bb = va[i], vb[i]
                if not isinstance(ba, dict) or not isinstance(bb, dict):
                    if ba != bb:
                        out.append(f"site[{i}]")
                    continue
                out += [f"site[{i}].{k}" for k in sorted(set(ba) | set(bb)) if ba.get(k) != bb.get(k)]
        elif _canonical(va) != _canonical(vb):
            out.append(key)
    return out


def with_live(config: ClusterConfig, doc: Mapping[str, Any]) -> ClusterConfig:
    """``config`` with its live part replaced by ``doc``'s, checked first (rules 3, 4).

    ``paused`` is not part of a config: the caller reads it from the document.
    """
    doc = check_document(doc)
    pol = dataclasses.replace(config.politeness, **{k: doc[f"politeness.{k}"] for k in POLITENESS_KEYS})
    crawl = dataclasses.replace(config.crawl, max_pages=doc["crawl.max_pages"], rules=tuple(doc["crawl.rules"]))
    blocks = []
    for i, entry in enumerate(doc["site"]):
        live: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in entry.items()}
        unset: dict[str, Any] = {k: None for k in LIVE_SITE_KEYS if k not in live and k != "hosts"}
        if i < len(config.sites):
            blocks.append(dataclasses.replace(config.sites[i], **unset, **live))
        else:
            blocks.append(SiteBlock(**live))
    cfg = dataclasses.replace(config, politeness=pol, crawl=crawl, sites=tuple(blocks))
    # A block's own checks against the global values it falls back to (its max_delay
    # against a global rate, say) ran in check_document with the document's
    # politeness, the same as these.
    return cfg
