"""peer.engine.opserver: the metrics server's HTTP edge, over real sockets (TLS, token, a stuck loop)."""

from __future__ import annotations

import ssl
import threading
import time
import urllib.error
import urllib.request

import httpx
import pytest
import trio

from peer.core.config.metrics import MetricsConfig
from peer.core.run.probes import Readiness
from peer.engine.opserver import OpServer, heartbeat, read_token, tls_context
from peer.errors import ConfigError


def metrics_app(environ, start_response):  # type: ignore[no-untyped-def]
    start_response("200 OK", [("Content-Type", "text/plain; version=0.0.4")])
    return [b"ringcrawl_pages_total 7.0\n"]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_a_stuck_event_loop_fails_both_probes_and_a_running_one_passes():
    got: dict[str, tuple[int, str]] = {}

    async def main() -> None:
        server = OpServer("127.0.0.1", 0, metrics_app, token=None, tls=None, stuck_after=0.5)
        server.start()
        base = f"http://127.0.0.1:{server.port}"
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(heartbeat, server, lambda: Readiness(True, "ready"))
                await trio.sleep(0.2)
                got["healthz"] = await trio.to_thread.run_sync(_get, base + "/healthz")
                got["readyz"] = await trio.to_thread.run_sync(_get, base + "/readyz")
                # The loop stands still (a step that never yields): a thread asks meanwhile.
                asker = threading.Thread(target=lambda: (time.sleep(1.0), got.update(
                    stuck=_get(base + "/healthz"), stuck_ready=_get(base + "/readyz"))))
                asker.start()
                time.sleep(1.5)  # noqa: ASYNC251 - the point: the loop does not run
                asker.join()
                await trio.sleep(0.7)  # beating again
                got["after"] = await trio.to_thread.run_sync(_get, base + "/healthz")
                nursery.cancel_scope.cancel()
        finally:
            await trio.to_thread.run_sync(server.shutdown)

    trio.run(main)
    assert got["healthz"] == (200, "ok\n") and got["readyz"] == (200, "ready\n")
    assert got["stuck"][0] == 503 and got["stuck"][1].startswith("event loop stuck: no heartbeat for ")
    assert got["stuck_ready"][0] == 503 and got["stuck_ready"][1].startswith("not ready: event loop stuck")
    assert got["after"] == (200, "ok\n")


def test_tls_and_the_token_as_prometheus_scrapes_with_them(tmp_path):
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    pem = tmp_path / "metrics.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(pem))
    ctx = tls_context(MetricsConfig(tls_cert=str(pem)), "cluster.toml")
    assert ctx is not None
    server = OpServer("127.0.0.1", 0, metrics_app, token="t0k", tls=ctx)
    server.start()
    try:
        client_ctx = ssl.create_default_context()
        ca.configure_trust(client_ctx)
        with httpx.Client(verify=client_ctx, timeout=5) as client:
            url = f"https://127.0.0.1:{server.port}"
            refused = client.get(url + "/metrics")
            assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
            ok = client.get(url + "/metrics", headers={"Authorization": "Bearer t0k"})
            assert ok.status_code == 200 and ok.text == "ringcrawl_pages_total 7.0\n"
            assert client.get(url + "/healthz").status_code == 503  # no heartbeat yet: no loop
            assert client.get(url + "/favicon.ico").status_code == 404
            assert client.post(url + "/metrics").status_code == 405
        with pytest.raises(httpx.HTTPError):  # plain HTTP on the TLS port gets nothing
            httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=2)
    finally:
        server.shutdown()


def test_a_token_named_but_missing_is_one_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"metrics.token_env: the environment variable RC_TOKEN is not set"):
        read_token(MetricsConfig(token_env="RC_TOKEN"), "cluster.toml", environ={})
    assert read_token(MetricsConfig(token_env="RC_TOKEN"), "c", environ={"RC_TOKEN": " abc\n"}) == "abc"
    with pytest.raises(ConfigError, match=r"metrics.token_file: cannot read .*none"):
        read_token(MetricsConfig(token_file=str(tmp_path / "none")), "cluster.toml")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        read_token(MetricsConfig(token_file=str(tmp_path / "empty")), "cluster.toml")
    assert read_token(MetricsConfig(), "cluster.toml") is None
    with pytest.raises(ConfigError, match="metrics.tls_cert: cannot load"):
        tls_context(MetricsConfig(tls_cert=str(tmp_path / "none.pem")), "cluster.toml")
