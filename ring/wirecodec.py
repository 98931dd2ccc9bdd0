"""The wire codec's machinery: field codecs, a record's spec with the wire version of each field, and frames (pure).

``ring.messages`` holds the messages and their tables (one :class:`Spec` a
message type, its fields in dataclass order with their codecs); this module
holds what those tables are made of and what turns them into frames. A frame
is one msgpack array, positional for compactness::

    [version, type code, field1, field2, ...]

Wire versions (docs/membership.md, "Wire versions and upgrades"):

1. **This build speaks two.** :data:`VERSION` is the newest layout, and a
   peer also reads and writes the one before, :data:`MIN_VERSION` =
   ``VERSION - 1``, so a ring upgrades one peer at a time: peers one version
   apart run in one ring. A frame of any other version is refused and
   counted (``DropKind.VERSION``): two versions apart is a full stop.
2. **A field says when it came.** A field added after version
   :data:`BASE_VERSION` is written ``added("name", codec, since=N)`` in its
   table; every other field was there in :data:`BASE_VERSION`. Added fields
   go at the end of their record, in version order, and each has a default
   in its dataclass (:class:`Spec` checks both at import). A frame of an
   older version simply lacks them: decoded, they take their defaults; encoded
   for an older version, they are left out. Nested records
   (``Member`` in a digest, ``MemberStatus`` in a status reply) follow the
   frame's version too. So an added field's default must mean "not said",
   and whoever reads it must keep what it knew rather than take the default
   as news: an older frame comes from an older peer, from a newer one that
   has not heard from us yet (``ring.wireversion`` rule 3), or carries a
   record relayed by an older peer (gossip is transitive), and none of them
   says the field (protobuf's field presence, for the same reason).
   **Unsaid is left out.** Since a default says nothing, a frame of version
   V also leaves out the fields added in V that trail it at their defaults
   (the record ends at its last said field, as proto3 writes no field at its
   default): a renewal's ``PingAck`` with no recent ring and nothing to
   settle is the bytes of version 3's. A frame of V may so carry any count
   from the fields of the version before (all of its type's own, for a type
   of V) to all of V's; a version 3 frame, what older peers read, is exact.
3. **A message type says when it came.** ``Spec(..., since=N)``: a type of
   a later version than a peer speaks is never sent to it (the sender counts
   ``wire.withheld.<type>``; an older peer would only drop it), and a frame of
   version V carrying a type newer than V is an unknown type.
4. **The version of a frame is the receiver's.** A sender encodes at the
   version its receiver speaks (``ring.wireversion``: learned from the
   receiver's routing id), never at its own when that is newer.

A frame's version applies to every record in it, so the codec keeps it in a
:class:`~contextvars.ContextVar` for the length of one :func:`encode_frame`
or :func:`decode_frame` (set and reset around the call: no state survives
it, and tasks or threads encoding at once never see each other's).

Field codecs are pairs ``(to_wire, from_wire)``: each checks and converts one
value and raises :class:`Invalid`; :class:`Spec` adds the field's name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import MISSING, fields
from enum import StrEnum
from operator import attrgetter
from typing import Any, NamedTuple

import msgpack

from ring.errors import DecodeError, DropKind, EncodeError

__all__ = ["VERSION", "MIN_VERSION", "BASE_VERSION", "VERSIONS", "MAX_FRAME", "MAX_STR", "MAX_ARRAY",
           "MAX_NAME", "MAX_UINT", "Invalid", "Check", "Codec", "Field", "Spec", "added", "what",
           "name_codec", "uint", "boolean", "float_out", "float_in", "enum_codec", "pairs_out", "pairs_in",
           "seen_out", "seen_in", "start_out", "start_in", "array_codec", "counter_out", "counter_in",
           "busy_out", "busy_in", "record_codec", "NAME", "UINT", "BOOL", "FLOAT", "encode_frame",
           "decode_frame", "frame_version"]

# 3: a Member record carries its page-budget grants (ring.membership.budget); a peer
# of version 2 would read a 10-field record and could not know the caps.
# An entry's URL may carry a sitemap tail (peer.core.sitemaps.hints), which a
# peer of version 2 would take for part of the URL.
# 4: a peer reads and writes version 3 as well (rule 1); its routing id names
# its version (ring.wireversion); a MemberStatus row says its member's version.
VERSION = 4
#: The oldest version this build reads and writes (rule 1): one upgrade step.
MIN_VERSION = VERSION - 1
#: The version every field not marked ``added`` was there in (rule 2): the
#: last layout before fields said when they came.
BASE_VERSION = 3
#: The versions this build speaks, oldest first.
VERSIONS = tuple(range(MIN_VERSION, VERSION + 1))
MAX_FRAME = 8 * 1024 * 1024
MAX_STR = 8 * 1024
MAX_ARRAY = 10_000
MAX_NAME = 256
MAX_UINT = 2**64 - 1

#: The version of the frame being encoded or decoded (module docstring).
_AT: ContextVar[int] = ContextVar("ring_wire_version", default=VERSION)


def frame_version() -> int:
    """The wire version of the frame being encoded or decoded now (:data:`VERSION` outside one):
    for a value whose form, not its presence, differs between versions (a new enum member)."""
    return _AT.get()

# --------------------------------------------------------------------------
# Field codecs


class Invalid(Exception):
    pass


Check = Callable[[Any], Any]


def what(v: object) -> str:
    return type(v).__name__


def name_codec(max_len: int = MAX_NAME) -> tuple[Check, Check]:
    def check(v: Any) -> str:
        if type(v) is not str:
            raise Invalid(f"expected str, got {what(v)}")
        if len(v) > max_len:
            raise Invalid(f"longer than {max_len}")
        return v

    return check, check


def uint(v: Any) -> int:
    if type(v) is not int:
        raise Invalid(f"expected int, got {what(v)}")
    if not 0 <= v <= MAX_UINT:
        raise Invalid(f"{v} out of range 0..2**64-1")
    return v


def boolean(v: Any) -> bool:
    if type(v) is not bool:
        raise Invalid(f"expected bool, got {what(v)}")
    return v


def float_out(v: Any) -> float:
    if type(v) is not float and type(v) is not int:
        raise Invalid(f"expected float, got {what(v)}")
    try:
        return float_in(float(v))
    except OverflowError:
        raise Invalid("int too large for a float") from None


def float_in(v: Any) -> float:
    if type(v) is not float:
        raise Invalid(f"expected float, got {what(v)}")
    if not (v >= 0.0 and math.isfinite(v)):
        raise Invalid(f"{v} is not a finite float >= 0")
    return v



def enum_codec(cls: type[StrEnum]) -> tuple[Check, Check]:
    """A StrEnum as its index in the enum's order (new members go at the end)."""
    members = tuple(cls)
    codes: dict[str, int] = {m: i for i, m in enumerate(members)}

    def out(v: Any) -> int:
        if type(v) is not cls and type(v) is not str:
            raise Invalid(f"expected {cls.__name__}, got {what(v)}")
        code = codes.get(v)
        if code is None:
            raise Invalid(f"unknown {cls.__name__} {v[:20]!r}")
        return code

    def in_(v: Any) -> Any:
        if type(v) is not int or not 0 <= v < len(members):
            raise Invalid(f"unknown {cls.__name__} code")
        return members[v]

    return out, in_


def _urls_check(urls: Any, decoding: bool) -> None:
    # C-speed passes over the whole array; one Python step per URL would
    # dominate decoding a batch. join() raises TypeError on a non-str.
    if len(urls) > MAX_ARRAY:
        raise Invalid(f"more than {MAX_ARRAY} URLs")
    if not urls:
        return
    try:
        ascii_ = "".join(urls).isascii()
    except TypeError:
        ascii_ = False
    # max_str_len already bounds a decoded string; an encoded one must fit it.
    if not ascii_ or (not decoding and max(map(len, urls)) > MAX_STR):
        raise Invalid("URLs must be ASCII strings (normalised), at most 8 KiB")


def _depths_check(depths: Any, decoding: bool) -> None:
    # msgpack ints fit 64 bits, so a decoded depth needs no upper bound check.
    if depths and (
        set(map(type, depths)) != {int}
        or min(depths) < 0
        or (not decoding and max(depths) > MAX_UINT)
    ):
        raise Invalid("depths must be ints >= 0")


def pairs_out(v: Any) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if type(v) is not tuple and type(v) is not list:
        raise Invalid(f"expected tuple of (url, depth), got {what(v)}")
    if not v:
        return (), ()
    if not set(map(type, v)) <= {tuple, list} or set(map(len, v)) != {2}:
        raise Invalid("expected (url, depth) pairs")
    urls, depths = zip(*v)
    _urls_check(urls, False)
    _depths_check(depths, False)
    return urls, depths


def pairs_in(v: Any) -> tuple[tuple[str, int], ...]:
    if type(v) is not tuple or len(v) != 2:
        raise Invalid("expected [urls, depths]")
    urls, depths = v
    if type(urls) is not tuple or type(depths) is not tuple or len(urls) != len(depths):
        raise Invalid("expected two arrays of the same length")
    _urls_check(urls, True)
    _depths_check(depths, True)
    return tuple(zip(urls, depths))


def seen_out(v: Any) -> tuple[str, ...]:
    if type(v) is not tuple and type(v) is not list:
        raise Invalid(f"expected tuple of str, got {what(v)}")
    _urls_check(v, False)
    return tuple(v)


def seen_in(v: Any) -> tuple[str, ...]:
    if type(v) is not tuple:
        raise Invalid(f"expected array of str, got {what(v)}")
    _urls_check(v, True)
    return v


def start_out(v: Any) -> tuple[str, float]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 2:
        raise Invalid("expected (host, start) pairs")
    return NAME[0](v[0]), float_out(v[1])


def start_in(v: Any) -> tuple[str, float]:
    if type(v) is not tuple or len(v) != 2:
        raise Invalid("expected [host, start] pairs")
    return NAME[1](v[0]), float_in(v[1])



def array_codec(item: tuple[Check, Check], max_len: int) -> tuple[Check, Check]:
    item_out, item_in = item

    def out(v: Any) -> list[Any]:
        if type(v) is not tuple and type(v) is not list:
            raise Invalid(f"expected tuple, got {what(v)}")
        if len(v) > max_len:
            raise Invalid(f"more than {max_len} entries")
        return [item_out(x) for x in v]

    def in_(v: Any) -> tuple[Any, ...]:
        if type(v) is not tuple:
            raise Invalid(f"expected array, got {what(v)}")
        if len(v) > max_len:
            raise Invalid(f"more than {max_len} entries")
        return tuple([item_in(x) for x in v])

    return out, in_


def counter_out(v: Any) -> tuple[str, int]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 2:
        raise Invalid("expected (name, count) pairs")
    return NAME[0](v[0]), uint(v[1])


def counter_in(v: Any) -> tuple[str, int]:
    if type(v) is not tuple or len(v) != 2:
        raise Invalid("expected [name, count] pairs")
    return NAME[1](v[0]), uint(v[1])


def busy_out(v: Any) -> tuple[str, float, float]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 3:
        raise Invalid("expected (host, rate, setpoint) triples")
    return NAME[0](v[0]), float_out(v[1]), float_out(v[2])


def busy_in(v: Any) -> tuple[str, float, float]:
    if type(v) is not tuple or len(v) != 3:
        raise Invalid("expected [host, rate, setpoint] triples")
    return NAME[1](v[0]), float_in(v[1]), float_in(v[2])


NAME = name_codec()
UINT = (uint, uint)
BOOL = (boolean, boolean)
FLOAT = (float_out, float_in)


# --------------------------------------------------------------------------
# A record's spec: its fields in dataclass order, their codecs and versions

Codec = tuple[Check, Check]


class Field(NamedTuple):
    """One field of a table: its name, its codec, the wire version it came in."""

    name: str
    codec: Codec
    since: int = BASE_VERSION


def added(name: str, codec: Codec, *, since: int) -> Field:
    """A field added in wire version ``since`` (module docstring, rule 2)."""
    return Field(name, codec, since)


class Spec:
    """How one message type (or nested record) travels: ``code``, fields, versions (rules 2 and 3).

    ``fields`` are ``(name, codec)`` pairs or :func:`added` fields, in
    dataclass order; ``since`` is the version the type came in.
    """

    __slots__ = ("cls", "code", "since", "names", "sinces", "outs", "ins", "get", "versioned",
                 "_counts", "_least", "_defaults", "_unsaid")

    def __init__(self, cls: type, code: int, spec: tuple[tuple[str, Codec] | Field, ...], *,
                 since: int = BASE_VERSION):
        table = tuple(f if isinstance(f, Field) else Field(f[0], f[1]) for f in spec)
        names = tuple(f.name for f in table)
        # The table must follow the dataclass, or the wire order silently shifts.
        assert names == tuple(f.name for f in fields(cls)), cls
        assert BASE_VERSION <= since <= VERSION, (cls, since)
        self.cls = cls
        self.code = code
        self.since = since
        self.names = names
        self.sinces = tuple(max(f.since, since) for f in table)
        self.outs = tuple(f.codec[0] for f in table)
        self.ins = tuple(f.codec[1] for f in table)
        self.get = attrgetter(*names)
        defaults: list[Any] = []
        for i, (f, dc) in enumerate(zip(table, fields(cls))):
            later = self.sinces[i] > since
            # Rule 2: an added field trails every older one and has a default.
            assert not later or (dc.default is not MISSING or dc.default_factory is not MISSING), \
                f"{cls.__name__}.{f.name}: a field added in version {f.since} needs a default"
            assert f.since <= VERSION and (i == 0 or self.sinces[i - 1] <= self.sinces[i]), \
                f"{cls.__name__}.{f.name}: added fields go last, in version order"
            defaults.append(dc.default if dc.default is not MISSING else dc.default_factory)
        self._defaults = tuple(defaults)
        #: Each field's default as a value (a factory's product), to tell an unsaid field (rule 2).
        self._unsaid = tuple(d() if callable(d) else d for d in defaults)
        #: Fields a frame of each version carries (a prefix of the table: they trail).
        self._counts: Mapping[int, int] = {v: sum(s <= v for s in self.sinces) for v in VERSIONS}
        #: The fewest it may carry: the fields of the versions before, and the type's own
        #: (rule 2, "unsaid is left out": only fields added in the frame's version may be).
        self._least: Mapping[int, int] = {v: sum(s < v or s == since for s in self.sinces) for v in VERSIONS}
        self.versioned = any(s > MIN_VERSION for s in self.sinces)

    def count(self, version: int) -> int:
        """How many fields a frame of ``version`` carries (0: the type is not in it)."""
        return self._counts.get(version, 0) if version >= self.since else 0

    def _blame(self, convs: tuple[Check, ...], values: Any, e: Invalid) -> Invalid:
        # Off the fast path: find which field failed, to name it.
        for name, conv, v in zip(self.names, convs, values):
            try:
                conv(v)
            except Invalid as err:
                return Invalid(f"{self.cls.__name__}.{name}: {err}")
        return Invalid(f"{self.cls.__name__}: {e}")  # pragma: no cover

    def to_wire(self, obj: Any) -> list[Any]:
        values = self.get(obj)
        outs = self.outs
        if self.versioned:
            at = _AT.get()
            n, least, unsaid = self._counts[at], self._least[at], self._unsaid
            while n > least:  # rule 2: trailing fields of this version at their defaults are left out
                v, d = values[n - 1], unsaid[n - 1]
                if v is not d and (type(v) is not type(d) or v != d):
                    break
                n -= 1
            values, outs = values[:n], outs[:n]
        try:
            return [conv(v) for conv, v in zip(outs, values)]
        except Invalid as e:
            raise self._blame(outs, values, e) from None

    def from_wire(self, values: tuple[Any, ...]) -> Any:
        if self.versioned:
            at = _AT.get()
            want, least = self._counts[at], self._least[at]
        else:
            want = least = len(self.names)
        if not least <= len(values) <= want:
            expected = f"{least}-{want}" if least < want else f"{want}"
            raise Invalid(f"{self.cls.__name__}: {len(values)} fields, expected {expected}")
        try:
            got = [conv(v) for conv, v in zip(self.ins, values)]
        except Invalid as e:
            raise self._blame(self.ins, values, e) from None
        if len(got) < len(self.names):  # rule 2: fields the frame's version lacks or left unsaid
            got += [d() if callable(d) else d for d in self._defaults[len(got):]]
        return self.cls(*got)


def record_codec(spec: Spec) -> Codec:
    """A nested record (``Member``, ``MemberStatus``...) as the array of its fields."""
    def out(v: Any) -> list[Any]:
        if type(v) is not spec.cls:
            raise Invalid(f"expected {spec.cls.__name__}, got {what(v)}")
        return spec.to_wire(v)

    def in_(v: Any) -> Any:
        if type(v) is not tuple:
            raise Invalid(f"expected {spec.cls.__name__} array, got {what(v)}")
        return spec.from_wire(v)

    return out, in_


# --------------------------------------------------------------------------
# Frames

_UNPACK_LIMITS: dict[str, Any] = dict(
    use_list=False,  # tuples: the dataclasses' field types, no conversion pass
    raw=False,  # invalid UTF-8 raises
    strict_map_key=True,
    max_str_len=MAX_STR,
    max_bin_len=0,
    max_array_len=MAX_ARRAY,
    max_map_len=0,
    max_ext_len=0,
)


def encode_frame(spec: Spec, msg: Any, version: int) -> bytes:
    """``msg`` as a frame of ``version``; :class:`EncodeError` if it cannot be one."""
    if version not in VERSIONS:
        raise EncodeError(f"wire version {version}: this build speaks {MIN_VERSION}-{VERSION}")
    if spec.since > version:
        raise EncodeError(f"{spec.cls.__name__} is not in wire version {version} (since {spec.since})")
    token = _AT.set(version)
    try:
        wire = spec.to_wire(msg)
    except Invalid as e:
        raise EncodeError(str(e)) from None
    finally:
        _AT.reset(token)
    try:
        frame: bytes = msgpack.packb([version, spec.code, *wire], use_bin_type=True)
    except (ValueError, TypeError, OverflowError) as e:  # a lone surrogate in a str
        raise EncodeError(f"{spec.cls.__name__}: {e}") from None
    if len(frame) > MAX_FRAME:
        name = spec.cls.__name__
        raise EncodeError(f"{name}: frame of {len(frame)} bytes > {MAX_FRAME}; split it")
    return frame


def decode_frame(data: bytes | bytearray | memoryview, by_code: Mapping[int, Spec]) -> tuple[int, Any]:
    """(the frame's version, its message) for a frame of a type of ``by_code``; :class:`DecodeError` else."""
    if type(data) is not bytes and not isinstance(data, (bytearray, memoryview)):
        raise DecodeError(f"not bytes: {what(data)}")
    size = len(data) if type(data) is bytes else memoryview(data).nbytes
    if size > MAX_FRAME:
        raise DecodeError(f"frame of {size} bytes > {MAX_FRAME}", DropKind.OVERSIZED)
    try:
        obj = msgpack.unpackb(data, **_UNPACK_LIMITS)
    except (ValueError, TypeError, OverflowError, msgpack.UnpackException) as e:
        raise DecodeError(f"not a msgpack frame: {str(e)[:80]}", DropKind.NOT_MSGPACK) from None
    if type(obj) is not tuple or len(obj) < 2:
        raise DecodeError("not a message array")
    version, code = obj[0], obj[1]
    if type(version) is not int or not MIN_VERSION <= version <= VERSION:
        raise DecodeError(f"wire version {str(version)[:20]}, expected {MIN_VERSION}-{VERSION}",
                          DropKind.VERSION)
    spec = by_code.get(code) if type(code) is int else None
    if spec is None or spec.since > version:
        raise DecodeError(f"unknown message type {str(code)[:20]}", DropKind.UNKNOWN_TYPE)
    token = _AT.set(version)
    try:
        return version, spec.from_wire(obj[2:])
    except Invalid as e:
        raise DecodeError(str(e)) from None
    finally:
        _AT.reset(token)
