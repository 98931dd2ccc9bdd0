"""peer.core.door.settings: the ring's settings document as the crawl reads it (pure); and
peer.core.door.ringgate's rule that no request starts before the settings are confirmed as the
ring's (ring.membership.epochs rule 5). Its journal is tests/edges/test_settingsfile.py's."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from peer.core.config.cluster import parse_config
from peer.core.config.livekeys import fingerprint, live_document, set_paused
from peer.core.door.ringgate import RingGate
from peer.core.door.settings import LiveSettings, decode_doc, encode_doc, initial
from ring.membership.lease import LeaseState
from ring.messages import SettingsAction

TOML = """
[crawl]
seeds = ["http://a.test/"]
max_pages = 100

[politeness]
rate = 30

[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5701"

[[site]]
hosts = ["slow.test"]
rate = 6
"""
PORT = LiveSettings()


def cfg(text: str = TOML):  # type: ignore[no-untyped-def]
    return parse_config(text, Path("/x/cluster.toml"))


def test_epoch_zero_is_the_files_live_part_and_its_fingerprint_is_livekeys():
    e = initial(cfg())
    doc = decode_doc(e.doc)
    assert e.epoch == 0 and doc == set_paused(live_document(cfg()), False)
    assert e.fingerprint == fingerprint(doc) == PORT.fingerprint(e.doc)
    # Canonical text: the same config gives the same text at every peer.
    assert encode_doc(doc) == e.doc and initial(cfg()).doc == e.doc


def test_assign_pause_and_resume_change_the_document_and_a_refused_key_is_a_value_error_naming_it():
    e = initial(cfg())
    slower = PORT.assign(e.doc, SettingsAction.SET, ["politeness.rate=12", "site[0].rate=3"])
    assert PORT.differing(e.doc, slower) == ["politeness.rate", "site[0].rate"]
    assert PORT.fingerprint(slower) != e.fingerprint
    paused = PORT.assign(slower, SettingsAction.PAUSE, [])
    assert PORT.paused(paused) and not PORT.paused(slower) and PORT.differing(slower, paused) == ["paused"]
    assert not PORT.paused(PORT.assign(paused, SettingsAction.RESUME, []))
    with pytest.raises(ValueError, match="ring.lease"):
        PORT.assign(e.doc, SettingsAction.SET, ["ring.lease=3"])
    with pytest.raises(ValueError, match="crawl.max_pages"):
        PORT.assign(e.doc, SettingsAction.SET, ["crawl.max_pages=-1"])


def test_a_text_that_is_no_document_is_data_not_an_exception():
    for bad in ("", "[1, 2]", "{not json", '{"a": {"b": [1, {"c": null}]}}'):
        assert isinstance(PORT.fingerprint(bad), int) and not PORT.paused(bad)
    assert PORT.fingerprint("{oops") == 0
    assert PORT.differing("{oops", initial(cfg()).doc) == ["(an unreadable document)"]


def test_no_request_starts_before_the_settings_are_confirmed_even_with_the_lease_held():
    held = LeaseState(True, 3, 2, 3, None, 0.0, 100.0)
    gate_open = SimpleNamespace(open=True, until=100.0, may=lambda host: True)  # every host's lease holds
    node = SimpleNamespace(membership=SimpleNamespace(lease=None), settings_confirmed=False,
                           lease_state=lambda now: held, host_gate=lambda now: gate_open)
    gate = RingGate(node, lambda: False, lambda: 0.0)  # type: ignore[arg-type]
    assert not gate.may_start(1.0)
    node.settings_confirmed = True
    assert gate.may_start(1.01)
