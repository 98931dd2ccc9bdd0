"""The log format of every long-running command: ``--log-format text`` or ``json``.

Both formats stamp each record in UTC with its zone, so the lines of peers on
machines in different zones (or a container's UTC and its host's local time)
sort together:

- ``text`` (the default): ``2026-12-07T15:02:19.123Z INFO peer.engine: message``,
  one line a record; a record's fields, if any, are in the message already.
- ``json``: one object a line (JSON Lines, as journald, Docker, Loki and
  Elasticsearch take them), with ``ts`` (RFC 3339, UTC, ``Z``), ``level``,
  ``peer`` (the peer id; absent for a command that is no peer), ``logger``,
  ``event`` (what happened, a short name such as ``member``, ``lease.forming``
  or ``summary``; ``message`` for a line that has no name yet), ``msg`` (the
  text line) and the event's fields as keys of their own.

A record carries a name and fields when it is logged with
``extra=event("name", key=value, ...)``; a field never replaces one of the
keys above (it is put under ``fields`` instead). The standard library's
``logging`` is enough: a :class:`logging.Formatter` of ours is the whole of
it (docs/libraries.md says why no structlog or python-json-logger).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["FORMATS", "JsonFormatter", "TextFormatter", "configure", "event", "parse_stamp", "stamp"]

#: The values of ``--log-format``.
FORMATS = ("text", "json")
#: The keys every JSON record has (or may have: ``peer``); fields never replace them.
_RESERVED = frozenset({"ts", "level", "peer", "logger", "event", "msg", "exc"})
#: The event of a record logged without one.
PLAIN = "message"


def event(name: str, **fields: Any) -> dict[str, Any]:
    """``extra=`` for a record with an event name and fields: ``log.info(..., extra=event("x", n=1))``."""
    return {"event": name, "fields": fields}


def stamp(created: float) -> str:
    """RFC 3339 in UTC with milliseconds and ``Z``: ``2026-12-07T15:02:19.123Z``."""
    whole = int(created)
    ms = int((created - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{ms:03d}Z"


def parse_stamp(text: str) -> float:
    """Epoch seconds of a :func:`stamp` (for tests and benchmarks that read logs)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()


class TextFormatter(logging.Formatter):
    """``<UTC stamp> LEVEL logger: message``, a traceback on the lines after it."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return stamp(record.created)

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")


class JsonFormatter(logging.Formatter):
    """One JSON object a record, on one line (the module docstring's keys)."""

    def __init__(self, peer: str | None = None) -> None:
        super().__init__()
        self.peer = peer

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {"ts": stamp(record.created), "level": record.levelname}
        if self.peer is not None:
            doc["peer"] = self.peer
        doc["logger"] = record.name
        doc["event"] = str(getattr(record, "event", PLAIN))
        doc["msg"] = record.getMessage()
        fields = getattr(record, "fields", None)
        if isinstance(fields, Mapping):
            clash = {k: v for k, v in fields.items() if k in _RESERVED}
            doc.update((str(k), v) for k, v in fields.items() if k not in _RESERVED)
            if clash:
                doc["fields"] = clash
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        # default=str: a field of a type JSON lacks (a Path, an enum) is its text, never a failure.
        return json.dumps(doc, ensure_ascii=False, default=str, separators=(",", ":"))


def configure(level: str | int, fmt: str, *, peer: str | None = None,
              stream: TextIO | None = None) -> logging.Handler:
    """Send the root logger's records at ``level`` to ``stream`` (stderr) in ``fmt``.

    Replaces what :func:`logging.basicConfig` did: it adds one handler, unless
    the root logger has one (pytest's capture, an embedding program), in which
    case only the format of this handler is ours.
    """
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r}: expected one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter(peer) if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(handler)
    root.setLevel(level)
    return handler
