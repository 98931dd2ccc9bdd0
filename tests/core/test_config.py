"""peer.core.config.cluster: cluster.toml parsing, defaults, and one clear line per mistake (pure: text in).

The sections are declared in peer.core.config.sections, each key with
peer.core.config.keys; three live in modules of their own, peer.core.config.sitemaps,
peer.core.config.warc and peer.core.config.metrics (the metrics server's token, TLS
and loopback rule), tested at the end.

Reading the file is tested in tests/edges/test_configfile.py, the command line's
exit 2 in tests/e2e/test_cli.py, and the docs and the shipped cluster.toml against
the declarations in tests/project/test_reference.py.
"""

import dataclasses

import pytest

from peer.core.config.cluster import (
    SECTIONS,
    ClusterConfig,
    PeerSpec,
    PolitenessConfig,
    parse_config,
    reference,
)
from peer.core.config.sites import SiteBlock
from peer.errors import ConfigError

MINIMAL = """
[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5701"
"""


def parse(text: str, path: str = "/etc/rc/cluster.toml") -> ClusterConfig:
    return parse_config(text, path)


def error_of(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse(text)
    return info.value


def test_defaults_fill_every_missing_key():
    cfg = parse(MINIMAL)
    assert cfg.ring.vnodes == 256 and cfg.ring.dead_after == 6.0
    assert cfg.crawl.concurrency == 64 and cfg.crawl.obey_robots is True
    assert cfg.crawl.allow_private is False and cfg.crawl.max_body == 2_097_152
    assert cfg.politeness == PolitenessConfig()
    assert (cfg.politeness.kp, cfg.politeness.ki, cfg.politeness.kd) == (-0.05, -0.01, 0.0)
    assert cfg.bloom.capacity == 10_000_000 and cfg.bloom.error_rate == 0.001
    assert cfg.bloom.growth == 2 and cfg.bloom.max_capacity == 320_000_000
    assert cfg.peers[0].weight == 1.0
    assert cfg.peers[0].data_dir == "/etc/rc/data/p1"


def test_config_objects_are_frozen():
    cfg = parse(MINIMAL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.crawl.concurrency = 1  # type: ignore[misc]


def test_ints_are_accepted_where_numbers_are_expected():
    cfg = parse(MINIMAL + "[politeness]\nrate = 30\n")
    assert cfg.politeness.rate == 30.0 and isinstance(cfg.politeness.rate, float)
    assert cfg.politeness.setpoint == 30.0


def test_setpoint_is_pages_per_window():
    cfg = parse(MINIMAL + "[politeness]\nrate = 40\nwindow = 30\n")
    assert cfg.politeness.setpoint == 20.0


def test_politeness_delays_follow_the_rate_unless_set():
    pol = parse(MINIMAL + "[politeness]\nrate = 600\n").politeness
    assert pol.nominal_delay == pytest.approx(0.1)
    assert pol.start_delay == pytest.approx(0.1)  # initial_delay 0: the nominal delay
    assert pol.floor_delay == pytest.approx(0.1 / 1.1)  # min_delay 0: nominal/1.1
    pol = parse(MINIMAL + "[politeness]\nrate = 600\ninitial_delay = 2.0\nmin_delay = 0.5\n").politeness
    assert (pol.start_delay, pol.floor_delay) == (2.0, 0.5)
    assert parse(MINIMAL + "[politeness]\nrate = 0\n").politeness.nominal_delay == 0.0


def test_absolute_data_dir_is_kept():
    cfg = parse(MINIMAL.replace('"\n', '"\ndata_dir = "/srv/crawl/p1"\n', 1))
    assert cfg.peers[0].data_dir == "/srv/crawl/p1"


# --- one clear line per mistake ------------------------------------------------


def test_unknown_key_suggests_the_right_one():
    err = error_of(MINIMAL + "[crawl]\nconcurency = 8\n")
    assert str(err) == "/etc/rc/cluster.toml: crawl.concurency: unknown key; did you mean 'concurrency'?"


@pytest.mark.parametrize(("section", "key", "other"), [("crawl", "allow_paths", "allow_private"),
                                                     ("politeness", "rate_limit", "integral_limit")])
def test_an_unknown_key_is_not_matched_to_a_key_that_does_something_else(section, key, other):
    err = str(error_of(MINIMAL + f"[{section}]\n{key} = 1\n"))
    assert f"{section}.{key}: unknown key; " in err and "did you mean" not in err and other not in err


@pytest.mark.parametrize(("section", "key", "where"), [("crawl", "allow_paths", "crawl.rules"),
                                                       ("politeness", "rate_limit", "politeness.rate"),
                                                       ("crawl", "depth_limit", "crawl.max_depth")])
def test_a_key_of_another_crawler_is_pointed_at_ours(section, key, where):
    # A newcomer from Scrapy or Crawlee writes their keys: the line says where ours is.
    err = str(error_of(MINIMAL + f"[{section}]\n{key} = 1\n"))
    assert f"{section}.{key}: unknown key; " in err and where in err


def test_unknown_section_suggests_the_right_one():
    err = error_of(MINIMAL + "[politenes]\nrate = 1\n")
    assert "politenes: unknown key; did you mean 'politeness'?" in str(err)


def test_unknown_key_without_near_match_lists_known_keys():
    err = error_of(MINIMAL + "[bloom]\nzzz = 1\n")
    assert "bloom.zzz: unknown key (known: capacity, error_rate, growth, max_capacity, disk_after, sieve_batch, sieve_wait, sieve_ram)" in str(err)


@pytest.mark.parametrize(
    ("snippet", "key", "expected"),
    [
        ("[crawl]\nconcurrency = \"64\"", "crawl.concurrency", "expected an integer, got a string '64'"),
        ("[crawl]\nconcurrency = 6.5", "crawl.concurrency", "expected an integer"),
        ("[crawl]\nobey_robots = 1", "crawl.obey_robots", "expected true or false"),
        ("[politeness]\nrate = true", "politeness.rate", "expected a number, got a boolean"),
        ("[crawl]\nseeds = \"http://a.test/\"", "crawl.seeds", "expected a list of strings"),
        ("[dns]\nresolve = [\"x\"]", "dns.resolve", "expected a table of host = IP"),
        ("[ring]\nname = 5", "ring.name", "expected a string"),
    ],
)
def test_wrong_type_names_key_and_expectation(snippet, key, expected):
    err = error_of(MINIMAL + snippet + "\n")
    assert err.key == key
    assert expected in str(err)
    assert str(err).startswith("/etc/rc/cluster.toml: " + key + ": ")


@pytest.mark.parametrize(
    ("snippet", "key"),
    [
        ("[politeness]\nrate = -1.0", "politeness.rate"),
        ("[politeness]\nwindow = 0", "politeness.window"),
        ("[politeness]\nmin_delay = -0.5", "politeness.min_delay"),
        ("[politeness]\nhost_concurrency = 0", "politeness.host_concurrency"),
        ("[crawl]\nmax_pages = -3", "crawl.max_pages"),
        ("[crawl]\ntimeout = 0", "crawl.timeout"),
        ("[bloom]\nerror_rate = 1.5", "bloom.error_rate"),
        ("[bloom]\ngrowth = 1", "bloom.growth"),
        ("[bloom]\nmax_capacity = 0", "bloom.max_capacity"),
        ("[bloom]\ndisk_after = -1", "bloom.disk_after"),
        ("[bloom]\nsieve_batch = 0", "bloom.sieve_batch"),
        ("[bloom]\nsieve_wait = 0", "bloom.sieve_wait"),
        ("[bloom]\nsieve_ram = 0", "bloom.sieve_ram"),
        ("[bloom]\ncapacity = 1000\nmax_capacity = 999", "bloom.max_capacity"),
        ("[frontier]\nhead_per_host = -1", "frontier.head_per_host"),
        ("[frontier]\nhead_per_host = 2000000", "frontier.head_per_host"),
        ("[frontier]\nsegment_mb = 0", "frontier.segment_mb"),
        ("[frontier]\ncheckpoint_mb = 0", "frontier.checkpoint_mb"),
        ("[ring]\nvnodes = 0", "ring.vnodes"),
        ("[ring]\ndead_after = 6.0\ntombstone_ttl = 11.0", "ring.tombstone_ttl"),
        ("[ring]\ntombstone_ttl = 0", "ring.tombstone_ttl"),
        ("[ring]\nrecv_queue = 0", "ring.recv_queue"),
        ("[ring]\nseed_grace = -1.0", "ring.seed_grace"),
        ("[ring]\njoin_seeds = 0", "ring.join_seeds"),
        ("[ring]\nretransmit_mult = 0", "ring.retransmit_mult"),
        ("[ring]\nbatch_age = -0.1", "ring.batch_age"),
        ("[ring]\nmax_batch_age = 0", "ring.max_batch_age"),
        ("[ring]\nbatch_age = 0.5\nmax_batch_age = 0.2", "ring.max_batch_age"),
        ("[ring]\nmessage_budget = -5", "ring.message_budget"),
        ("[ring]\nsend_window = -1", "ring.send_window"),
        ('[[peer]]\nid = "p2"\naddress = "tcp://127.0.0.1:5702"\nweight = 11.0', "peer[1].weight"),
        ("[ring]\nsuspect_after = 5.0\ndead_after = 4.0", "ring.dead_after"),
        ("[politeness]\nmin_delay = 5.0\nmax_delay = 1.0", "politeness.max_delay"),
        ("[politeness]\ninitial_delay = 90.0", "politeness.initial_delay"),
        ("[politeness]\nip_rate = -1.0", "politeness.ip_rate"),
        ("[politeness]\nip_concurrency = -1", "politeness.ip_concurrency"),
        # 0.5 pages/min needs 120 s between starts, more than max_delay allows.
        ("[politeness]\nrate = 0.5", "politeness.max_delay"),
        ("[dns]\nmin_ttl = 100\nmax_ttl = 10", "dns.max_ttl"),
        ("[crawl]\nseeds = [\"mailto:a@b.test\"]", "crawl.seeds[0]"),
        ("[crawl]\nallow_hosts = [\"http://x.test/\"]", "crawl.allow_hosts[0]"),
        ("[dns]\nresolve = { \"*.test\" = \"not-an-ip\" }", "dns.resolve.*.test"),
        ("[dns]\nnameservers = [\"ns1.example\"]", "dns.nameservers[0]"),
        ("[crawl]\nmax_links_per_page = -1", "crawl.max_links_per_page"),
        ("[crawl]\nmax_urls_per_host = -1", "crawl.max_urls_per_host"),
        ("[crawl]\nmax_url_length = 5000", "crawl.max_url_length"),
        ("[crawl]\nmax_path_repeat = -2", "crawl.max_path_repeat"),
        ("[politeness]\nmax_retry_after = 0", "politeness.max_retry_after"),
    ],
)
def test_out_of_range_values_are_refused(snippet, key):
    err = error_of(MINIMAL + snippet + "\n")
    assert err.key == key
    assert "expected" in err.message


def test_negative_rate_message():
    err = error_of(MINIMAL + "[politeness]\nrate = -1.0\n")
    assert str(err) == "/etc/rc/cluster.toml: politeness.rate: expected a number >= 0, got -1.0"


@pytest.mark.parametrize("seed, host", [
    ("www.sqlite-docs.local:8080/", "www.sqlite-docs.local"),  # read as scheme, cut to 16 characters
    ("localhost:8080/", "localhost"),
    ("example.com/docs/", None),                              # read as a relative URL
])
def test_a_seed_without_its_scheme_is_named_whole_with_the_fix(seed, host):
    err = error_of(MINIMAL + f'[crawl]\nseeds = ["{seed}"]\n')
    assert err.key == "crawl.seeds[0]"
    assert err.message.endswith(f"; write it as 'http://{seed}')")
    if host is not None:
        assert f"no scheme: '{host}' is a host, not a scheme" in err.message


def test_a_seed_of_another_scheme_gets_no_http_hint():
    err = error_of(MINIMAL + '[crawl]\nseeds = ["mailto:a@b.test"]\n')
    assert err.message.endswith("(not an http(s) URL: scheme 'mailto')")


def test_bloom_limit_below_capacity_message():
    err = error_of(MINIMAL + "[bloom]\ncapacity = 1000\nmax_capacity = 999\n")
    assert str(err) == (
        "/etc/rc/cluster.toml: bloom.max_capacity: expected at least bloom.capacity "
        "(1000; equal for a filter that never grows), got 999"
    )
    fixed = parse(MINIMAL + "[bloom]\ncapacity = 1000\nmax_capacity = 1000\ngrowth = 4\n")
    assert (fixed.bloom.capacity, fixed.bloom.max_capacity, fixed.bloom.growth) == (1000, 1000, 4)


def test_duplicate_peer_ids():
    err = error_of(MINIMAL + '[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:5702"\n')
    assert str(err) == (
        "/etc/rc/cluster.toml: peer[1].id: duplicate id 'p1', already used by peer[0]; each peer needs its own"
    )


def test_duplicate_peer_addresses():
    err = error_of(MINIMAL + '[[peer]]\nid = "p2"\naddress = "tcp://127.0.0.1:5701"\n')
    assert err.key == "peer[1].address" and "duplicate address" in err.message


def test_duplicate_data_dirs():
    err = error_of(
        MINIMAL.replace('"\n', '"\ndata_dir = "d"\n', 1)
        + '[[peer]]\nid = "p2"\naddress = "tcp://127.0.0.1:5702"\ndata_dir = "d"\n'
    )
    assert err.key == "peer[1].data_dir"


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1:5701", "tcp://127.0.0.1", "tcp://127.0.0.1:0", "tcp://127.0.0.1:70000",
     "udp://127.0.0.1:5701", "tcp://:5701", "tcp://a b:1"],
)
def test_malformed_address(address):
    err = error_of(f'[[peer]]\nid = "p1"\naddress = "{address}"\n')
    assert err.key == "peer[0].address"
    assert "tcp://host:port" in err.message and repr(address) in err.message
    assert err.message.count("got ") == 1, err.message


def test_ipv6_address_is_accepted():
    cfg = parse('[[peer]]\nid = "p1"\naddress = "tcp://[::1]:5701"\n')
    assert cfg.peers[0].address == "tcp://[::1]:5701"


def test_missing_required_peer_keys():
    err = error_of('[[peer]]\naddress = "tcp://127.0.0.1:1"\n')
    assert err.key == "peer[0].id" and "is required" in err.message


def test_a_solo_peer_needs_no_address():
    cfg = parse('[[peer]]\nid = "p1"\n')
    assert cfg.peers[0].address == ""


def test_a_peer_of_a_ring_of_several_needs_an_address():
    err = error_of('[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:1"\n\n[[peer]]\nid = "p2"\n')
    assert err.key == "peer[1].address" and "is required when cluster.toml lists several peers" in err.message


def test_no_peers():
    err = error_of("[ring]\nname = \"x\"\n")
    assert err.key == "peer" and "at least one [[peer]]" in err.message


def test_bad_peer_id():
    err = error_of('[[peer]]\nid = "p 1"\naddress = "tcp://127.0.0.1:1"\n')
    assert err.key == "peer[0].id"


def test_invalid_toml_names_the_file():
    err = error_of("[ring\nname=1")
    assert str(err).startswith("/etc/rc/cluster.toml: is not valid TOML")


def test_unknown_peer_id_lists_known_ones():
    cfg = parse(MINIMAL)
    with pytest.raises(ConfigError, match=r"no peer with id 'p9' \(known: p1\)"):
        cfg.peer("p9")


# --- the reference table is every field -------------------------------------------


def all_keys() -> list[str]:
    return [key for key, *_ in reference()]


def test_reference_covers_every_field():
    expected = {f"peer.{f.name}" for f in dataclasses.fields(PeerSpec)}
    for name, cls in SECTIONS.items():
        expected |= {f"{name}.{f.name}" for f in dataclasses.fields(cls)}
    expected |= {f"site.{f.name}" for f in dataclasses.fields(SiteBlock)}
    assert set(all_keys()) == expected


@pytest.mark.parametrize("gain", ["kp", "ki", "kd"])
def test_positive_pid_gain_is_refused(gain):
    err = error_of(MINIMAL + f"[politeness]\n{gain} = 0.1\n")
    assert err.key == f"politeness.{gain}" and "a number <= 0" in err.message


def test_metrics_address_is_host_and_port_a_port_alone_is_loopback_or_empty():
    from peer.core.config.metrics import is_loopback, metrics_listen

    assert parse(MINIMAL).peers[0].metrics_address == ""
    assert parse(MINIMAL + 'metrics_address = "127.0.0.1:0"\n').peers[0].metrics_address == "127.0.0.1:0"
    # A host left out is loopback: a routable address must be written out.
    assert metrics_listen("9101") == metrics_listen(":9101") == ("127.0.0.1", 9101)
    assert metrics_listen("0.0.0.0:9101") == ("0.0.0.0", 9101) and metrics_listen("[::1]:0") == ("::1", 0)
    assert parse(MINIMAL + 'metrics_address = ":9101"\n').peers[0].metrics_address == ":9101"
    # What warns at start without a token: an address other machines can reach.
    assert [h for h in ("127.0.0.1", "127.3.0.1", "::1", "localhost", "0.0.0.0", "10.0.0.5", "127.example.com",
                        "::") if not is_loopback(h)] == ["0.0.0.0", "10.0.0.5", "127.example.com", "::"]
    for bad in ("http://127.0.0.1:9101", "127.0.0.1:99999", "tcp://127.0.0.1:9101", "x:y"):
        err = error_of(MINIMAL + f'metrics_address = "{bad}"\n')
        assert err.key == "peer[0].metrics_address", bad
        assert "host:port such as '127.0.0.1:9101'" in err.message and repr(bad) in err.message


def test_the_metrics_section_takes_a_token_from_a_file_or_the_environment_and_tls_paths():
    cfg = parse(MINIMAL + '[metrics]\ntoken_file = "secrets/metrics.token"\ntls_cert = "/etc/m.pem"\n',
                path="/srv/ring/cluster.toml")
    assert cfg.metrics.token_file == "/srv/ring/secrets/metrics.token"  # relative to cluster.toml
    assert cfg.metrics.tls_cert == "/etc/m.pem" and cfg.metrics.token_env == ""
    err = error_of(MINIMAL + '[metrics]\ntoken_file = "t"\ntoken_env = "T"\n')
    assert err.key == "metrics.token_env" and "not both" in err.message
    err = error_of(MINIMAL + '[metrics]\ntls_key = "k.pem"\n')
    assert err.key == "metrics.tls_key" and "tls_cert" in err.message
    err = error_of(MINIMAL + '[metrics]\ntoken_env = "not a name"\n')
    assert err.key == "metrics.token_env"


# --- sections in modules of their own: [sitemaps], [warc] (declared with peer.core.config.keys) ---


def test_the_sitemaps_section_defaults_to_the_protocol_s_limits_and_names_a_bad_seed():
    from peer.core.sitemaps.document import SitemapLimits

    cfg = parse(MINIMAL)
    assert cfg.sitemaps.from_robots and cfg.sitemaps.seeds == ()
    assert cfg.sitemaps.limits() == SitemapLimits()  # 50,000 URLs and 50 MiB a file
    cfg = parse(MINIMAL + '[sitemaps]\nseeds = ["http://a.test/sitemap.xml"]\nmax_urls = 10\nmax_depth = 0\n')
    assert cfg.sitemaps.seeds == ("http://a.test/sitemap.xml",) and cfg.sitemaps.limits().max_urls == 10
    err = error_of(MINIMAL + '[sitemaps]\nseeds = ["not a url"]\n')
    assert err.key == "sitemaps.seeds" and "'not a url' is not one" in err.message
    assert error_of(MINIMAL + "[sitemaps]\nmax_depth = -1\n").key == "sitemaps.max_depth"


def test_the_warc_section_reads_its_enums_from_strings_and_checks_what_code_builds_too():
    from peer.core.config.warc import OverMaxBody, WarcConfig
    from peer.core.warc.record import DigestAlgorithm

    cfg = parse(MINIMAL + '[warc]\nenabled = true\ndigest = "sha256"\nover_max_body = "skip"\n').warc
    assert cfg.enabled and cfg.algorithm is DigestAlgorithm.SHA256 and cfg.over_body is OverMaxBody.SKIP
    err = error_of(MINIMAL + '[warc]\ndigest = "md5"\n')
    assert err.key == "warc.digest" and "sha1" in err.message
    assert error_of(MINIMAL + "[warc]\ngzip_level = 10\n").key == "warc.gzip_level"
    with pytest.raises(ValueError, match="gzip_level"):
        WarcConfig(gzip_level=10)


def test_a_peer_binds_one_address_and_advertises_another():
    from peer.core.config.cluster import bind_address

    cfg = parse('[[peer]]\nid = "p1"\naddress = "tcp://ringcrawl-0.ringcrawl:5555"\nbind = "tcp://0.0.0.0:5555"\n'
                '[[peer]]\nid = "p2"\naddress = "tcp://ringcrawl-1.ringcrawl:5555"\n'
                '[[peer]]\nid = "p3"\naddress = "tcp://[::1]:5703"\n')
    p1, p2, p3 = cfg.peers
    assert p1.address == "tcp://ringcrawl-0.ringcrawl:5555"  # what the others connect to
    assert bind_address(p1) == "tcp://0.0.0.0:5555"
    assert bind_address(p2) == "tcp://*:5555"  # a name: every interface on its port
    assert bind_address(p3) == "tcp://[::1]:5703"  # a literal: itself


@pytest.mark.parametrize("bind", ["5555", "tcp://0.0.0.0", "tcp://[::g]:5555", "tcp://a..b:1"])
def test_a_bad_bind_is_refused(bind):
    err = error_of(f'[[peer]]\nid = "p1"\naddress = "tcp://10.0.0.1:5555"\nbind = "{bind}"\n')
    assert err.key == "peer[0].bind" and repr(bind) in err.message


def test_a_bind_needs_an_address():
    err = error_of('[[peer]]\nid = "p1"\nbind = "tcp://0.0.0.0:5555"\n')
    assert err.key == "peer[0].bind" and "address" in err.message
