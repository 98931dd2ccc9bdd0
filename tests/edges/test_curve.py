"""CurveZMQ between peers: key files, scripts/keys.py, and who gets through.

Every socket test runs on 127.0.0.1 in its own zmq context, so each has its
own ZAP endpoint. "Delivers nothing" is checked over a bounded wait (1 s)
while an allowed client on the same ROUTER does get through, so a refusal
cannot pass for a slow network.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import trio
import zmq
import zmq.auth

from ring.__main__ import keys_main  # scripts/keys.py, ringcrawl-keys
from ring.io.curve import UNAUTHENTICATED_WARNING, CurveKeys, resolve_keys_dir, write_keypair
from ring.errors import RingError
from ring.io.zap import CurveAuthenticator, curve_client, curve_keypair, curve_server
from ring.io.zmqio import SocketType, open_socket

ANY_PORT = "tcp://127.0.0.1:*"
WAIT = 1.0  # seconds a refused client is given to (not) get a message through

CLUSTER = """\
[ring]
name = "t"
curve_keys = "{curve_keys}"

[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5701"

[[peer]]
id = "p2"
address = "tcp://127.0.0.1:5702"

[[peer]]
id = "p3"
address = "tcp://127.0.0.1:5703"
"""


def cluster_toml(tmp_path: Path, curve_keys: str = "keys") -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER.format(curve_keys=curve_keys))
    return path


def make_keys(directory: Path, *peer_ids: str) -> None:
    for peer_id in peer_ids:
        write_keypair(directory, peer_id, *curve_keypair())


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


# ------------------------------------------------------------- scripts/keys.py


def test_keys_script_writes_a_pair_per_peer_with_private_secrets(tmp_path, capsys):
    assert keys_main(["--ring", str(cluster_toml(tmp_path))]) == 0
    d = tmp_path / "keys"
    assert sorted(p.name for p in d.iterdir()) == [
        "p1.key", "p1.key_secret", "p2.key", "p2.key_secret", "p3.key", "p3.key_secret"]
    publics = set()
    for peer_id in ("p1", "p2", "p3"):
        assert stat.S_IMODE((d / f"{peer_id}.key_secret").stat().st_mode) == 0o600
        # The layout and format zmq.auth reads (czmq's zcert).
        public, secret = zmq.auth.load_certificate(d / f"{peer_id}.key_secret")
        assert zmq.auth.load_certificate(d / f"{peer_id}.key") == (public, None)
        assert zmq.curve_public(secret) == public
        publics.add(public)
    assert len(publics) == 3
    assert "p3: wrote" in capsys.readouterr().out


def test_keys_script_keeps_existing_keys_unless_forced(tmp_path, capsys):
    toml = str(cluster_toml(tmp_path))
    assert keys_main(["--ring", toml]) == 0
    secret = tmp_path / "keys" / "p1.key_secret"
    before = secret.read_bytes()
    capsys.readouterr()

    assert keys_main(["--ring", toml]) == 0
    assert secret.read_bytes() == before
    assert "p1: kept the existing" in capsys.readouterr().out

    assert keys_main(["--ring", toml, "--id", "p1", "--force"]) == 0
    assert secret.read_bytes() != before
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_keys_script_id_adds_a_joiner_only(tmp_path):
    toml = str(cluster_toml(tmp_path))
    assert keys_main(["--ring", toml, "--id", "p4"]) == 0
    assert sorted(p.name for p in (tmp_path / "keys").iterdir()) == ["p4.key", "p4.key_secret"]


def test_keys_script_adds_pairs_for_new_peers_and_keeps_every_existing_one(tmp_path, capsys):
    """On a peer's machine (its own pair, the others' public keys only), a [[peer]] added to
    cluster.toml gets a pair; nothing a running peer holds is replaced, and no --force is needed."""
    toml = cluster_toml(tmp_path)
    d = tmp_path / "keys"
    make_keys(d, "p1", "p2")
    (d / "p2.key_secret").unlink()  # p2's secret is on p2's machine
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    capsys.readouterr()
    assert keys_main(["--ring", str(toml)]) == 0
    assert {p.name: p.read_bytes() for p in d.iterdir() if p.name in before} == before
    assert sorted(p.name for p in d.iterdir()) == ["p1.key", "p1.key_secret", "p2.key", "p3.key", "p3.key_secret"]
    out = capsys.readouterr().out
    assert "made 1 pair(s) (p3), kept 2 (p1, p2)" in out
    assert "p2: kept the existing" in out and "p3: wrote" in out


def test_keys_script_writes_back_the_public_half_of_a_lone_secret(tmp_path, capsys):
    d = tmp_path / "keys"
    make_keys(d, "p1")
    public = (d / "p1.key").read_bytes()
    (d / "p1.key").unlink()
    assert keys_main(["--dir", str(d), "--id", "p1"]) == 0
    # The same public key line as the pair had, and the pair loads as a whole again.
    assert (d / "p1.key").read_bytes().splitlines()[-1] == public.splitlines()[-1]
    assert CurveKeys.load(d, "p1").public == zmq.auth.load_certificate(d / "p1.key")[0]
    assert "wrote its missing public half" in capsys.readouterr().out


def test_keys_script_refuses_a_half_pair_that_is_no_key(tmp_path, capsys):
    d = tmp_path / "keys"
    d.mkdir()
    (d / "p1.key").write_text("not mine")
    assert keys_main(["--dir", str(d), "--id", "p1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "p1.key" in err and "public-key" in err
    assert (d / "p1.key").read_text() == "not mine"


def test_keys_script_without_curve_keys_says_to_set_it(tmp_path, capsys):
    toml = str(cluster_toml(tmp_path, curve_keys=""))
    assert keys_main(["--ring", toml]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "curve_keys" in err and "--dir" in err
    assert not (tmp_path / "keys").exists()

    assert keys_main(["--ring", toml, "--dir", str(tmp_path / "elsewhere")]) == 0
    assert (tmp_path / "elsewhere" / "p2.key_secret").exists()
    assert "curve_keys" in capsys.readouterr().out  # reminds that Curve is still off


def test_keys_script_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as exit_:
        keys_main(["--help"])
    assert exit_.value.code == 0
    assert "python scripts/keys.py --ring cluster.toml" in capsys.readouterr().out


def test_keys_dir_is_relative_to_cluster_toml(tmp_path):
    assert resolve_keys_dir("", tmp_path / "cluster.toml") is None
    assert resolve_keys_dir("keys", tmp_path / "cluster.toml") == tmp_path.resolve() / "keys"
    assert resolve_keys_dir("/abs/keys", tmp_path / "cluster.toml") == Path("/abs/keys")
    assert "curve_keys" in UNAUTHENTICATED_WARNING


# ---------------------------------------------------------------- key loading


def test_load_gives_own_pair_and_every_member(tmp_path):
    d = tmp_path / "keys"
    make_keys(d, "p1", "p2")
    keys = CurveKeys.load(d, "p1")
    public, secret = zmq.auth.load_certificate(d / "p1.key_secret")
    assert (keys.public, keys.secret) == (public, secret)
    assert keys.public_key("p2") == zmq.auth.load_certificate(d / "p2.key")[0]
    assert dict(keys.members()) == {keys.public: "p1", keys.public_key("p2"): "p2"}
    assert secret.decode() not in repr(keys)


def _no_secret(d: Path) -> str:
    (d / "p1.key_secret").unlink()
    return "p1.key_secret: no such key file"


def _bad_public(d: Path) -> str:
    (d / "p2.key").write_text('curve\n    public-key = "too short"\n')
    return "p2.key: public-key is not a 40-character Z85"


def _open_secret(d: Path) -> str:
    (d / "p1.key_secret").chmod(0o644)
    return "chmod 600"


def _secret_in_public(d: Path) -> str:
    (d / "p2.key").write_text((d / "p2.key_secret").read_text())
    return "p2.key: holds a secret key"


def _mismatched(d: Path) -> str:
    (d / "p1.key").write_text((d / "p2.key").read_text())
    return "p1.key: does not match p1.key_secret"


def _no_public_line(d: Path) -> str:
    (d / "p2.key").write_text("# nothing here\n")
    return "p2.key: no public-key line"


@pytest.mark.parametrize("spoil", [_no_secret, _bad_public, _open_secret, _secret_in_public,
                                   _mismatched, _no_public_line])
def test_a_broken_key_file_is_one_clear_line(tmp_path, spoil):
    d = tmp_path / "keys"
    make_keys(d, "p1", "p2")
    expected = spoil(d)
    with pytest.raises(RingError) as err:
        CurveKeys.load(d, "p1")
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_keys_dir_and_unknown_peer_key_are_clear(tmp_path):
    with pytest.raises(RingError, match="no such keys directory"):
        CurveKeys.load(tmp_path / "nowhere", "p1")
    make_keys(tmp_path, "p1")
    with pytest.raises(RingError, match=r"p9\.key: no such key file"):
        CurveKeys.load(tmp_path, "p1").public_key("p9")


# -------------------------------------------------------------------- sockets


async def test_allowed_client_gets_through_encrypted(tmp_path, ctx):
    make_keys(tmp_path, "p1", "p2")
    server, client = CurveKeys.load(tmp_path, "p1"), CurveKeys.load(tmp_path, "p2")
    with trio.fail_after(10):
        async with CurveAuthenticator(server, ctx=ctx) as auth:
            async with open_socket(SocketType.ROUTER, identity=b"p1", configure=curve_server(server),
                                   ctx=ctx) as router:
                endpoint = router.bind(ANY_PORT)
                async with open_socket(SocketType.DEALER, connect=endpoint, identity=b"p2", ctx=ctx,
                                       configure=curve_client(client, client.public_key("p1"))) as dealer:
                    await dealer.send_multipart([b"hello"])
                    assert await router.recv_multipart() == [b"p2", b"hello"]
                    await router.send_multipart([b"p2", b"back"])
                    assert await dealer.recv_multipart() == [b"back"]
                    assert (router.mechanism, dealer.mechanism) == ("CURVE", "CURVE")
            assert auth.accepted == 1 and auth.denied == 0


async def test_unknown_plain_and_misdirected_clients_deliver_nothing(tmp_path, ctx):
    make_keys(tmp_path, "p1", "p2")
    server, member = CurveKeys.load(tmp_path, "p1"), CurveKeys.load(tmp_path, "p2")
    # A stranger: a valid key pair that is not in the keys directory.
    make_keys(tmp_path / "elsewhere", "p2")
    stranger = CurveKeys.load(tmp_path / "elsewhere", "p2")
    wrong_server = curve_keypair()[0]  # an impostor's key: the member must not talk to it
    got: list[list[bytes]] = []
    with trio.fail_after(10):
        async with CurveAuthenticator(server, ctx=ctx) as auth:
            async with open_socket(SocketType.ROUTER, configure=curve_server(server), ctx=ctx) as router:
                endpoint = router.bind(ANY_PORT)
                intruders = [
                    open_socket(SocketType.DEALER, connect=endpoint, identity=b"stranger", ctx=ctx,
                                configure=curve_client(stranger, server.public)),
                    open_socket(SocketType.DEALER, connect=endpoint, identity=b"plain", ctx=ctx),
                    open_socket(SocketType.DEALER, connect=endpoint, identity=b"misdirected", ctx=ctx,
                                configure=curve_client(member, wrong_server)),
                ]
                async with intruders[0] as a, intruders[1] as b, intruders[2] as c:
                    for sock in (a, b, c):
                        for i in range(3):
                            await sock.send_multipart([b"intrusion %d" % i])
                    async with open_socket(SocketType.DEALER, connect=endpoint, identity=b"member",
                                           ctx=ctx, configure=curve_client(member, server.public)) as ok:
                        await ok.send_multipart([b"welcome"])
                        with trio.move_on_after(WAIT):
                            while True:
                                got.extend(await router.recv_batch())
            # The stranger reached ZAP and was refused there, repeatedly as it retried.
            assert auth.denied >= 1
    assert got == [[b"member", b"welcome"]]


async def test_curve_server_refuses_to_open_without_an_authenticator(tmp_path, ctx):
    make_keys(tmp_path, "p1")
    keys = CurveKeys.load(tmp_path, "p1")
    with pytest.raises(RingError, match="CurveAuthenticator"):
        async with open_socket(SocketType.ROUTER, bind=ANY_PORT, configure=curve_server(keys), ctx=ctx):
            pass


async def test_one_authenticator_per_context(tmp_path, ctx):
    make_keys(tmp_path, "p1")
    keys = CurveKeys.load(tmp_path, "p1")
    async with CurveAuthenticator(keys, ctx=ctx):
        with pytest.raises(RingError, match="already running"):
            async with CurveAuthenticator(keys, ctx=ctx):
                pass
    # Once left, the context can get a new one (the ZAP endpoint was released).
    async with CurveAuthenticator(keys, ctx=ctx):
        pass


async def test_a_joiner_key_copied_in_later_is_admitted_without_restart(tmp_path, ctx):
    d = tmp_path / "keys"
    make_keys(d, "p1")
    server = CurveKeys.load(d, "p1")
    with trio.fail_after(10):
        async with CurveAuthenticator(server, ctx=ctx):
            async with open_socket(SocketType.ROUTER, configure=curve_server(server), ctx=ctx) as router:
                endpoint = router.bind(ANY_PORT)
                make_keys(d, "p4")  # scripts/keys.py --id p4, then p4.key copied in
                joiner = CurveKeys.load(d, "p4")
                async with open_socket(SocketType.DEALER, connect=endpoint, identity=b"p4", ctx=ctx,
                                       configure=curve_client(joiner, joiner.public_key("p1"))) as dealer:
                    await dealer.send_multipart([b"join"])
                    assert await router.recv_multipart() == [b"p4", b"join"]


async def test_plain_sockets_beside_an_authenticator_still_work(tmp_path, ctx):
    # libzmq asks ZAP only for sockets with a mechanism (or a ZAP domain):
    # an unauthenticated socket of the same process is not refused.
    make_keys(tmp_path, "p1")
    with trio.fail_after(10):
        async with CurveAuthenticator(CurveKeys.load(tmp_path, "p1"), ctx=ctx) as auth:
            async with open_socket(SocketType.ROUTER, ctx=ctx) as router:
                endpoint = router.bind(ANY_PORT)
                async with open_socket(SocketType.DEALER, connect=endpoint, identity=b"x", ctx=ctx) as d:
                    await d.send_multipart([b"plain"])
                    assert await router.recv_multipart() == [b"x", b"plain"]
                    assert router.mechanism == "NULL"
            assert auth.denied == 0


def test_secret_files_are_not_group_readable_even_with_a_loose_umask(tmp_path):
    old = os.umask(0)
    try:
        make_keys(tmp_path, "p1")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "p1.key_secret").stat().st_mode) == 0o600


def test_a_secret_of_another_pair_is_refused_before_any_handshake(tmp_path):
    make_keys(tmp_path, "p1", "p2")
    # Same format, same public-key line, but p2's secret: only the key math can tell.
    p1 = (tmp_path / "p1.key_secret").read_text().splitlines()
    p2_secret = next(line for line in (tmp_path / "p2.key_secret").read_text().splitlines()
                     if "secret-key" in line)
    (tmp_path / "p1.key_secret").write_text(
        "\n".join(p2_secret if "secret-key" in line else line for line in p1) + "\n")
    keys = CurveKeys.load(tmp_path, "p1")
    for hook in (lambda: curve_server(keys), lambda: curve_client(keys, keys.public)):
        with pytest.raises(RingError, match="does not belong to its public key"):
            hook()


async def test_a_message_carries_the_member_id_of_its_key_as_user_id(tmp_path, ctx):
    # The ZAP reply's User-Id is the member id the key file names (RFC 27),
    # so the receiver can check that a sender speaks as itself.
    make_keys(tmp_path, "p1", "p2", "p3")
    server = CurveKeys.load(tmp_path, "p1")
    with trio.fail_after(10):
        async with CurveAuthenticator(server, ctx=ctx):
            async with open_socket(SocketType.ROUTER, configure=curve_server(server), ctx=ctx) as router:
                endpoint = router.bind(ANY_PORT)
                for peer, route in (("p2", b"p2/01"), ("p3", b"p2/02")):
                    keys = CurveKeys.load(tmp_path, peer)
                    async with open_socket(SocketType.DEALER, connect=endpoint, identity=route, ctx=ctx,
                                           configure=curve_client(keys, keys.public_key("p1"))) as d:
                        await d.send_multipart([b"hello from " + peer.encode()])
                        (got,) = await router.recv_routed(user_id=True)
                        assert (got.route, bytes(got.frames[0]), got.user_id) == (
                            route, b"hello from " + peer.encode(), peer)
            # A plain ROUTER's messages have no User-Id.
            async with open_socket(SocketType.ROUTER, ctx=ctx) as router:
                endpoint = router.bind(ANY_PORT)
                async with open_socket(SocketType.DEALER, connect=endpoint, ctx=ctx) as d:
                    await d.send_multipart([b"plain"])
                    (got,) = await router.recv_routed(user_id=True)
                    assert got.user_id is None


def test_the_unauthenticated_warning_is_quiet_for_a_loopback_ring():
    from ring.io.curve import unauthenticated_warning

    assert unauthenticated_warning(["tcp://127.0.0.1:5701", "tcp://127.0.0.3:5702", "tcp://[::1]:5703",
                                    "tcp://localhost:5704"]) is None
    assert unauthenticated_warning(["tcp://127.0.0.1:5701", "tcp://10.0.0.2:5701"]) == UNAUTHENTICATED_WARNING
    assert unauthenticated_warning(["tcp://crawler-2.lan:5701"]) == UNAUTHENTICATED_WARNING  # a name may be remote
    assert "\n" not in UNAUTHENTICATED_WARNING
