"""[[peer]] workers = N and machine (peer/core/config/workers.py), and the per-machine politeness
rule (peer/core/politeness/machines.py): pure, on config text and share tables."""

from __future__ import annotations

import pytest

from peer.core.config.cluster import parse_config
from peer.core.config.workers import machines, user_agent_for
from peer.core.politeness.machines import crowded, machine_shares
from peer.errors import ConfigError
from ring.hashring import HashRing


def cfg(peers: str, extra: str = ""):
    return parse_config(f"{peers}\n{extra}", "/etc/rc/cluster.toml")


ONE_MACHINE = """
[[peer]]
id = "m1"
address = "tcp://10.0.0.1:5701"
metrics_address = "10.0.0.1:9100"
workers = 3

[[peer]]
id = "m2"
address = "tcp://[2001:db8::2]:5701"
data_dir = "/srv/crawl"
workers = 2
machine = "box"

[[peer]]
id = "m3"
address = "tcp://10.0.0.3:5701"
"""


def test_an_entry_of_n_workers_is_n_peers_on_consecutive_ports_with_their_own_directories():
    c = cfg(ONE_MACHINE)
    assert [(p.id, p.address, p.data_dir, p.metrics_address, p.machine) for p in c.peers] == [
        ("m1-0", "tcp://10.0.0.1:5701", "/etc/rc/data/m1/0", "10.0.0.1:9100", "m1"),
        ("m1-1", "tcp://10.0.0.1:5702", "/etc/rc/data/m1/1", "10.0.0.1:9101", "m1"),
        ("m1-2", "tcp://10.0.0.1:5703", "/etc/rc/data/m1/2", "10.0.0.1:9102", "m1"),
        ("m2-0", "tcp://[2001:db8::2]:5701", "/srv/crawl/0", "", "box"),
        ("m2-1", "tcp://[2001:db8::2]:5702", "/srv/crawl/1", "", "box"),
        ("m3", "tcp://10.0.0.3:5701", "/etc/rc/data/m3", "", "m3"),
    ]
    assert c.groups == {"m1": ("m1-0", "m1-1", "m1-2"), "m2": ("m2-0", "m2-1")}
    assert [p.id for p in c.workers("m1")] == ["m1-0", "m1-1", "m1-2"]
    assert c.workers("m3") == () and c.workers("m1-0") == ()
    assert c.machine("m2-1") == "box" and c.machine("m3") == "m3" and c.machine("joiner") == "joiner"
    assert machines(c.peers)["m1-2"] == "m1"
    # Each worker is a peer of the ring, with the entry's weight.
    assert set(HashRing.of_members(c.peers).peers) == {p.id for p in c.peers}


def test_a_workers_bind_moves_with_its_address_and_a_dns_name_stays_a_name():
    c = cfg('[[peer]]\nid = "m"\naddress = "tcp://box.example:5701"\nbind = "tcp://*:6701"\nworkers = 2\n'
            '[[peer]]\nid = "n"\naddress = "tcp://[2001:db8::3]:5701"\nbind = "tcp://[::]:5701"\nworkers = 2\n'
            '[[peer]]\nid = "o"\naddress = "tcp://10.0.0.4:5701"\nworkers = 2\n')
    assert [(p.address, p.bind) for p in c.peers] == [
        ("tcp://box.example:5701", "tcp://*:6701"), ("tcp://box.example:5702", "tcp://*:6702"),
        ("tcp://[2001:db8::3]:5701", "tcp://[::]:5701"), ("tcp://[2001:db8::3]:5702", "tcp://[::]:5702"),
        ("tcp://10.0.0.4:5701", ""), ("tcp://10.0.0.4:5702", ""),
    ]


def test_metrics_port_0_stays_any_free_port_for_every_worker():
    c = cfg('[[peer]]\nid = "m"\naddress = "tcp://127.0.0.1:5701"\nmetrics_address = "127.0.0.1:0"\nworkers = 2\n')
    assert [p.metrics_address for p in c.peers] == ["127.0.0.1:0", "127.0.0.1:0"]


@pytest.mark.parametrize("peers, message", [
    ('[[peer]]\nid = "m"\naddress = "tcp://127.0.0.1:65535"\nworkers = 2\n',
     "peer[0].address: expected a port of at most 65534 with workers = 2 (worker k listens on port + k), "
     "got 'tcp://127.0.0.1:65535'"),
    ('[[peer]]\nid = "m"\naddress = "tcp://127.0.0.1:5701"\nworkers = 0\n',
     "peer[0].workers: expected an integer from 1 to 256, got 0"),
    ('[[peer]]\nid = "m"\naddress = "tcp://127.0.0.1:5701"\nworkers = 2\n'
     '[[peer]]\nid = "n"\naddress = "tcp://127.0.0.1:5702"\n',
     "peer[1].address: duplicate address 'tcp://127.0.0.1:5702', already used by peer[0] (its worker m-1); "
     "each peer needs its own"),
    ('[[peer]]\nid = "m"\naddress = "tcp://127.0.0.1:5701"\nworkers = 2\n'
     '[[peer]]\nid = "m-1"\naddress = "tcp://127.0.0.1:5801"\n',
     "peer[1].id: duplicate id 'm-1', already used by peer[0] (its worker m-1); each peer needs its own"),
    ('[[peer]]\nid = "m"\naddress = "tcp://127.0.0.1:5701"\nworkers = 2\n'
     '[[peer]]\nid = "m"\naddress = "tcp://127.0.0.1:5801"\n',
     "peer[0].id: duplicate id 'm': it names this entry's workers and another peer"),
    ('[[peer]]\nid = "' + "x" * 63 + '"\naddress = "tcp://127.0.0.1:5701"\nworkers = 2\n',
     "peer[0].id: expected an id of at most 62 characters with workers = 2"),
    ('[[peer]]\nid = "m"\naddress = "tcp://127.0.0.1:5701"\nmachine = "a b"\n',
     "peer[0].machine: expected 1-64 characters"),
])
def test_a_bad_worker_entry_is_one_line_naming_the_entry_and_key(peers, message):
    with pytest.raises(ConfigError) as e:
        cfg(peers)
    assert str(e.value).startswith(f"/etc/rc/cluster.toml: {message}"), str(e.value)


def test_the_machine_placeholder_of_a_user_agent_is_each_peers_machine():
    c = cfg(ONE_MACHINE, '[crawl]\nuser_agent = "rc/1 ({machine}; +https://x.test/bot)"\n'
                         '[[site]]\nhosts = ["a.test"]\nuser_agent = "rc-a/1 {machine}"\n')
    assert c.for_peer("m2-0").crawl.user_agent == "rc/1 (box; +https://x.test/bot)"
    assert c.for_peer("m1-2").sites[0].user_agent == "rc-a/1 m1"
    assert c.for_peer("m3").crawl.user_agent == "rc/1 (m3; +https://x.test/bot)"
    assert cfg(ONE_MACHINE).for_peer("m1-0").crawl.user_agent == "ringcrawl/0.1 (+https://example.invalid/bot)"
    assert user_agent_for("a {machine} {machine}", "m") == "a m m"


def test_a_machines_workers_pace_an_ip_at_the_share_of_one_peer_of_their_weight():
    # Rule 1: the ring's shares sum to 1 over peers, so a machine's workers sum to
    # the machine's share: the ip_rate a site sees from it is what one peer of that
    # weight would send, and never more than ip_rate.
    workers = HashRing({"m1-0": 1.0, "m1-1": 1.0, "m1-2": 1.0, "m2": 1.0})
    one_peer = HashRing({"m1": 3.0, "m2": 1.0})
    per_machine = machine_shares(workers.shares(), {"m1-0": "m1", "m1-1": "m1", "m1-2": "m1"})
    assert set(per_machine) == {"m1", "m2"}
    assert per_machine["m1"] == pytest.approx(one_peer.shares()["m1"], abs=0.05)
    assert sum(per_machine.values()) == pytest.approx(1.0)


def test_workers_whose_one_slot_each_exceeds_the_machines_ip_concurrency_are_named():
    # Rule 2: 4 workers alone in the ring, ip_concurrency 2: each keeps 1 slot,
    # 4 in flight to one IP where one peer would hold 2.
    shares = {f"m-{k}": 0.25 for k in range(4)}
    machine_of = {p: "m" for p in shares}
    (c,) = crowded(2, shares, machine_of)
    assert (c.machine, c.workers, c.in_flight, c.share_cap, c.enough) == ("m", 4, 4, 2, 4)
    assert crowded(4, shares, machine_of) == []   # 1 slot each: 4 = one peer's 4
    assert crowded(0, shares, machine_of) == []   # no cap, nothing to exceed
    # The same shares on four machines are four clients: none is crowded.
    assert crowded(2, shares, {}) == []


def test_check_warns_of_a_machine_whose_stop_leaves_no_majority_and_of_crowded_ip_slots():
    from peer.commands.check import machine_warnings

    two_and_one = ('[[peer]]\nid = "a"\naddress = "tcp://10.0.0.1:5701"\nworkers = 2\n'
                   '[[peer]]\nid = "b"\naddress = "tcp://10.0.0.2:5701"\n')
    (w,) = machine_warnings(cfg(two_and_one))
    assert w.startswith("/etc/rc/cluster.toml: machine 'a' runs 2 of the ring's 3 peers: when it stops, "
                        "the other 1 are no majority and pause")
    # Three machines of two: any one stopping leaves 4 of 6, a majority.
    three = "".join(f'[[peer]]\nid = "{m}"\naddress = "tcp://10.0.0.{i}:5701"\nworkers = 2\n'
                    for i, m in enumerate("abc", 1))
    assert machine_warnings(cfg(three)) == []
    crowd = machine_warnings(cfg(three, "[politeness]\nip_concurrency = 2\n"))
    assert [w.split("'")[1] for w in crowd] == ["a", "b", "c"]
    w = crowd[0]
    assert "its 2 peers may hold 2 fetches to one IP address at once where one peer of their weight holds 1" in w
    assert machine_warnings(cfg(three, "[politeness]\nip_concurrency = 12\n")) == []
