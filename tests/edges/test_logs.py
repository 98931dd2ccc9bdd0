"""ring.tools.logs: the formatters of ``--log-format text`` and ``json``."""

from __future__ import annotations

import json
import logging

from ring.tools.logs import JsonFormatter, TextFormatter, event, parse_stamp, stamp


def record(msg: str = "member p2: dead (silence), incarnation 3", **extra: object) -> logging.LogRecord:
    r = logging.LogRecord("peer.cluster", logging.WARNING, __file__, 1, msg, (), None)
    r.created = 1_765_119_739.1239  # 2025-12-07T15:02:19.123Z
    r.__dict__.update(extra)
    return r


def test_a_stamp_is_rfc3339_utc_with_a_z_and_reads_back():
    assert stamp(1_765_119_739.1239) == "2025-12-07T15:02:19.123Z"
    assert abs(parse_stamp("2025-12-07T15:02:19.123Z") - 1_765_119_739.123) < 1e-6


def test_a_json_record_has_its_keys_and_its_event_fields_and_never_loses_a_key_to_a_field():
    doc = json.loads(JsonFormatter("p1").format(record(**event(
        "member", member="p2", state="dead", incarnation=3, level="clash"))))
    assert doc == {"ts": "2025-12-07T15:02:19.123Z", "level": "WARNING", "peer": "p1",
                   "logger": "peer.cluster", "event": "member",
                   "msg": "member p2: dead (silence), incarnation 3",
                   "member": "p2", "state": "dead", "incarnation": 3, "fields": {"level": "clash"}}


def test_a_line_without_an_event_is_a_message_and_a_traceback_stays_in_the_one_line():
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        r = record("failed", exc_info=sys.exc_info())
    line = JsonFormatter().format(r)
    assert "\n" not in line
    doc = json.loads(line)
    assert doc["event"] == "message" and "peer" not in doc and "ValueError: boom" in doc["exc"]


def test_a_text_line_starts_with_its_utc_stamp():
    assert TextFormatter().format(record()) == (
        "2025-12-07T15:02:19.123Z WARNING peer.cluster: member p2: dead (silence), incarnation 3")
