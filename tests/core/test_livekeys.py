"""peer.core.config.livekeys: the live part of cluster.toml as one document, changed by KEY=VALUE (pure)."""

import msgpack
import pytest

from peer.core.config.cluster import parse_config
from peer.core.config.livekeys import (
    LIVE_KEYS,
    assign,
    check_document,
    differing_keys,
    fingerprint,
    live_document,
    set_paused,
    with_live,
)
from peer.errors import ConfigError, LiveSettingError

TOML = """
[crawl]
seeds = ["http://a.test/"]
max_pages = 100
rules = ["exclude:*/private/*"]

[politeness]
rate = 30

[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5701"

[[site]]
hosts = ["slow.test"]
rate = 6
proxy = "direct"

[[site]]
hosts = ["*.fast.test"]
host_concurrency = 2
"""


def cfg():
    return parse_config(TOML, "/etc/rc/cluster.toml")


def refused(doc, *assignments) -> str:
    with pytest.raises(LiveSettingError) as info:
        assign(doc, list(assignments))
    assert isinstance(info.value, ConfigError)  # the CLI's one-line handling applies
    assert "\n" not in str(info.value)
    return str(info.value)


def test_the_document_is_the_live_part_with_paused_false():
    doc = live_document(cfg())
    assert list(doc) == list(LIVE_KEYS) == sorted(doc)
    assert doc["politeness.rate"] == 30.0 and doc["crawl.max_pages"] == 100
    assert doc["crawl.rules"] == ["exclude:*/private/*"]
    # A block holds the live keys it sets, nothing of its proxy.
    assert doc["site"] == [{"hosts": ["slow.test"], "rate": 6.0}, {"host_concurrency": 2, "hosts": ["*.fast.test"]}]
    assert doc["paused"] is False
    assert msgpack.unpackb(msgpack.packb(doc)) == doc


def test_the_fingerprint_is_stable_and_tells_documents_apart():
    doc = live_document(cfg())
    again = live_document(cfg())
    assert fingerprint(doc) == fingerprint(again) == fingerprint(dict(reversed(list(doc.items()))))
    assert 0 <= fingerprint(doc) < 2 ** 64
    assert fingerprint(set_paused(doc, True)) != fingerprint(doc)
    assert fingerprint(assign(doc, ["politeness.rate=31"])) != fingerprint(doc)
    # Through msgpack and back, as the ring carries it.
    assert fingerprint(msgpack.unpackb(msgpack.packb(doc))) == fingerprint(doc)


def test_assignments_take_toml_values_and_are_checked_as_the_file_is():
    doc = live_document(cfg())
    new = assign(doc, ["crawl.max_pages=500", 'crawl.rules=["exclude:*/secret/*", "include:*"]',
                       "politeness.rate=12"])
    assert new["crawl.max_pages"] == 500
    assert new["crawl.rules"] == ["exclude:*/secret/*", "include:*"]
    assert new["politeness.rate"] == 12.0 and isinstance(new["politeness.rate"], float)
    assert doc["crawl.max_pages"] == 100  # the input is not changed
    assert differing_keys(doc, new) == ["crawl.max_pages", "crawl.rules", "politeness.rate"]


def test_site_blocks_are_named_by_position():
    doc = live_document(cfg())
    new = assign(doc, ["site[0].rate=2", 'site[2]={hosts=["new.test"], rate=3, rules=["exclude:*/x/*"]}'])
    assert new["site"][0] == {"hosts": ["slow.test"], "rate": 2.0}
    assert new["site"][2] == {"hosts": ["new.test"], "rate": 3.0, "rules": ["exclude:*/x/*"]}
    assert differing_keys(doc, new) == ["site[0].rate", "site[2]"]
    assert assign(doc, ["site=[]"])["site"] == []
    assert "there are 2 [[site]] blocks: site[2] adds one" in refused(doc, "site[5]={hosts=['x.test']}")
    assert "site[3].rate" in refused(doc, "site[3].rate=1")
    assert "named by its position" in refused(doc, "site.slow.test.rate=2")


def test_a_key_that_cannot_change_live_is_refused_by_name():
    doc = live_document(cfg())
    for key, value in [("ring.lease", "3"), ("crawl.seeds", '["http://b.test/"]'),
                       ("crawl.concurrency", "8"), ("peer.data_dir", '"x"'), ("politeness.window", "30")]:
        msg = refused(doc, f"{key}={value}")
        assert msg.startswith(f"ring set: {key}: cannot change live")
    assert refused(doc, "site[0].proxy='direct'").startswith("ring set: site[0].proxy: cannot change live")
    assert "did you mean 'crawl.max_pages'" in refused(doc, "crawl.max_page=5")


def test_a_bad_value_is_refused_naming_its_key():
    doc = live_document(cfg())
    assert refused(doc, "crawl.max_pages=-1").startswith("ring set: crawl.max_pages: expected a number >= 0")
    assert refused(doc, "crawl.max_pages=lots").startswith("ring set: crawl.max_pages: expected a value written")
    assert refused(doc, 'crawl.rules=["-/private/"]').startswith("ring set: crawl.rules[0]: expected 'include:")
    assert refused(doc, "politeness.rate=true").startswith("ring set: politeness.rate: expected a number")
    assert refused(doc, "site[1].rate=-2").startswith("ring set: site[1].rate:")
    assert refused(doc, "crawl.max_pages").startswith("ring set: crawl.max_pages: expected KEY=VALUE")
    # Checked whole: a slow rate needs a longer max_delay, and both in one change pass.
    assert refused(doc, "politeness.rate=0.5").startswith("ring set: politeness.max_delay: expected at least 60/rate")
    assert assign(doc, ["politeness.rate=0.5", "politeness.max_delay=120"])["politeness.max_delay"] == 120.0


def test_a_document_from_elsewhere_is_checked_too():
    doc = live_document(cfg())
    with pytest.raises(LiveSettingError):
        check_document({**doc, "ring.lease": 3.0})
    with pytest.raises(LiveSettingError):
        check_document({**doc, "paused": "yes"})
    assert check_document(doc) == doc


def test_with_live_replaces_the_live_part_and_keeps_the_rest():
    config = cfg()
    doc = assign(live_document(config), ["crawl.max_pages=7", "site[0].rate=2", "politeness.rate=12",
                                          'site[2]={hosts=["new.test"], rate=3}'])
    new = with_live(config, doc)
    assert new.crawl.max_pages == 7 and new.crawl.seeds == config.crawl.seeds
    assert new.politeness.rate == 12.0 and new.politeness.window == config.politeness.window
    assert new.sites[0].rate == 2.0 and new.sites[0].proxy == config.sites[0].proxy  # rule 4
    assert new.sites[2].hosts == ("new.test",) and new.sites[2].rate == 3.0
    assert live_document(new) == doc
    assert differing_keys(live_document(config), live_document(with_live(config, live_document(config)))) == []
