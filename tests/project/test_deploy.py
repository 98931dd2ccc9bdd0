"""deploy/: the systemd unit, the Kubernetes manifests and the compose file, checked as their tools would.

- The unit passes ``systemd-analyze verify`` (where the command is; skipped
  elsewhere) with no warning, and asks for what a crawl needs: restarted after
  a crash, never after a config error, never --fresh.
- The manifests validate against the Kubernetes API schemas
  (``kubernetes-validate``, strict: an unknown field is an error, offline),
  and agree with each other and with the ConfigMap's cluster.toml: one
  [[peer]] a replica, named as the pods are, reachable by the headless
  Service's names, probed on its metrics port.
- The compose file's services run real flags, mount files that exist, and
  sit at the addresses its cluster.toml gives them.

Every RINGCRAWL_* variable any of them sets names a real flag of
``python -m peer`` (peer/commands/envflags.py), and every image runs as the
Containerfile's user.
"""

from __future__ import annotations

import configparser
import copy
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from localweb.webfarm import _arg_parser as webfarm_parser
from peer.commands import envflags
from peer.commands.cli import _parser as peer_parser
from peer.core.config.cluster import parse_address
from peer.state.configfile import load_config

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "ringcrawl@.service"
K8S = DEPLOY / "kubernetes"
COMPOSE = DEPLOY / "compose.yaml"
#: The Kubernetes version the manifests are checked against (kubernetes-validate's schemas).
K8S_VERSION = "1.30.0"


def _flags(parser) -> set[str]:  # type: ignore[no-untyped-def]
    return {s for a in parser._actions for s in a.option_strings}


PEER_FLAGS = _flags(peer_parser())
PEER_VARIABLES = {envflags.variable(f) for f in PEER_FLAGS if f.startswith("--")} - {
    envflags.variable(f) for f in ("--fresh", "--yes", "--help")}


def _image_user() -> str:
    users = re.findall(r"^USER\s+(\S+)", (DEPLOY / "Containerfile").read_text(), re.M)
    assert len(users) == 1
    return users[0]


def _load_toml_text(text: str, tmp_path: Path, name: str = "cluster.toml"):  # type: ignore[no-untyped-def]
    """load_config of ``text``."""
    path = tmp_path / name
    path.write_text(text)
    return load_config(str(path))


# -- systemd ------------------------------------------------------------------------------------


def _unit() -> configparser.ConfigParser:
    unit = configparser.ConfigParser(strict=False, interpolation=None, empty_lines_in_values=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(UNIT.read_text())
    return unit


def _unit_values(key: str) -> list[str]:
    """Every value of ``key`` in [Service] (systemd allows repeats; configparser keeps the last)."""
    return re.findall(rf"^{key}=(.*)$", UNIT.read_text(), re.M)


def test_the_unit_restarts_a_crash_not_a_config_error_and_never_starts_fresh():
    service = _unit()["Service"]
    argv = shlex.split(service["ExecStart"])
    assert argv[0] == "/opt/ringcrawl/bin/ringcrawl"
    given = {a for a in argv[1:] if a.startswith("--")}
    assert given <= PEER_FLAGS, given - PEER_FLAGS
    assert "--fresh" not in argv and "--yes" not in argv
    assert argv[argv.index("--id") + 1] == "%i"
    assert service["Restart"] == "on-failure"
    assert "2" in service["RestartPreventExitStatus"].split()
    assert int(service["TimeoutStopSec"]) >= 60  # a leave's hand-off
    env = dict(v.split("=", 1) for line in _unit_values("Environment") for v in shlex.split(line))
    assert {k for k in env if k.startswith("RINGCRAWL_")} <= PEER_VARIABLES
    assert env["RINGCRAWL_LEAVE"] == "1"
    assert service["ProtectSystem"] == "strict" and service["NoNewPrivileges"] == "yes"
    assert "/var/lib/ringcrawl" in service["ReadWritePaths"].split()
    assert service["StateDirectory"] == "ringcrawl"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_unit_passes_systemd_analyze_verify_without_a_warning(tmp_path):
    # verify wants ExecStart's binary to exist: a copy points at this venv's.
    exe = shutil.which("ringcrawl") or str(Path(__import__("sys").executable))
    text = UNIT.read_text().replace("/opt/ringcrawl/bin/ringcrawl", exe)
    (tmp_path / "ringcrawl@.service").write_text(text)
    done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "ringcrawl@p1.service")],
                          capture_output=True, text=True, timeout=60)
    ours = [line for line in (done.stdout + done.stderr).splitlines() if "ringcrawl@" in line]
    assert done.returncode == 0 and ours == [], done.stdout + done.stderr
    # It does find what is wrong: a misspelt option is a warning.
    (tmp_path / "ringcrawl@.service").write_text(text.replace("ProtectHome=yes", "ProtectHome=yess"))
    done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "ringcrawl@p1.service")],
                          capture_output=True, text=True, timeout=60)
    assert "ringcrawl@.service:" in done.stderr and "yess" in done.stderr


# -- Kubernetes -----------------------------------------------------------------------------------


def _manifests() -> dict[str, dict[str, Any]]:
    """Each resource of the kustomization, by kind."""
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(kustomization["resources"]) == files  # none left out of `kubectl apply -k`
    docs = [d for f in files for d in yaml.safe_load_all((K8S / f).read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs)
    return by_kind


def test_the_manifests_validate_against_the_kubernetes_schemas():
    for kind, doc in _manifests().items():
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    bad = copy.deepcopy(_manifests()["StatefulSet"])
    bad["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"httpGet": {"path": "/readyz"}}
    with pytest.raises(kubernetes_validate.ValidationError):  # a typo is caught
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_one_peer_a_replica_named_as_the_pods_reached_through_the_headless_service(tmp_path):
    m = _manifests()
    sts, svc, pdb, cm = m["StatefulSet"], m["Service"], m["PodDisruptionBudget"], m["ConfigMap"]
    name, spec = sts["metadata"]["name"], sts["spec"]
    pod = spec["template"]["spec"]
    peer = next(c for c in pod["containers"] if c["name"] == "peer")
    labels = spec["template"]["metadata"]["labels"]
    # Stable names: a headless Service whose names resolve before the pods are ready.
    assert spec["serviceName"] == svc["metadata"]["name"]
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"].items() <= labels.items()
    assert spec["podManagementPolicy"] == "Parallel"
    assert pdb["spec"]["maxUnavailable"] == 1 and pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # cluster.toml: one [[peer]] a replica, id = the pod's name, address = its DNS name.
    cfg = _load_toml_text(cm["data"]["cluster.toml"], tmp_path)
    assert [p.id for p in cfg.peers] == [f"{name}-{i}" for i in range(spec["replicas"])]
    ports = {p["name"]: p["containerPort"] for p in peer["ports"]}
    mounts = {v["name"]: v["mountPath"] for v in peer["volumeMounts"]}
    claim = spec["volumeClaimTemplates"][0]["metadata"]["name"]
    for p in cfg.peers:
        host, port = parse_address(p.address)
        assert host == f"{p.id}.{svc['metadata']['name']}" and port == ports["ring"]
        assert Path(p.data_dir).parent == Path(mounts[claim])
        assert int(p.metrics_address.rsplit(":", 1)[1]) == ports["metrics"]
    if cfg.ring.curve_keys:
        assert mounts["keys"] == str(Path(mounts["config"]).parent / cfg.ring.curve_keys)
    # The peer id from the pod's name; every variable a real flag, or the
    # metrics token the ConfigMap's [metrics] token_env names, from the Secret.
    env = {e["name"]: e for e in peer["env"]}
    assert env["RINGCRAWL_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert cfg.metrics.token_env, "the pods' /metrics is on a routable address: it needs a token"
    token = env[cfg.metrics.token_env]["valueFrom"]["secretKeyRef"]
    assert token["name"] == pod["volumes"][[v["name"] for v in pod["volumes"]].index("secret")]["secret"]["secretName"]
    assert set(env) - {cfg.metrics.token_env} <= PEER_VARIABLES
    # Probes on the metrics port: /healthz keeps it alive, /readyz says it is ready.
    assert peer["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert peer["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    # Not root, as the image's user.
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True
    assert f"{security['runAsUser']}:{security['runAsGroup']}" == _image_user()
    assert "limits" in peer["resources"] and "requests" in peer["resources"]
    secrets = [v for v in pod["volumes"] if "secret" in v]
    assert [v["secret"]["secretName"] for v in secrets] == ["ringcrawl-keys"]


# -- compose --------------------------------------------------------------------------------------


def test_the_compose_ring_runs_real_flags_on_real_files_at_its_config_addresses(tmp_path):
    doc = yaml.safe_load(COMPOSE.read_text())
    services = doc["services"]
    peers = {n: s for n, s in services.items() if "RINGCRAWL_ID" in s.get("environment", {})}
    assert sorted(peers) == ["p1", "p2", "p3"]
    web = services["web"]
    assert web["entrypoint"][-1] == "ringcrawl-webfarm"
    webfarm_parser().parse_args(web["command"])  # SystemExit (2) on a flag it lacks
    configs = set()
    for name, s in peers.items():
        assert s["environment"]["RINGCRAWL_ID"] == name
        assert set(s["environment"]) <= PEER_VARIABLES
        assert not set(s.get("command", [])) - PEER_FLAGS and "--fresh" not in s.get("command", [])
        assert s["image"] == "localhost/ringcrawl:latest"  # deploy/build-image's default
        sources = {}
        for v in s["volumes"]:
            source, target = v.split(":")[:2]
            sources[target] = source
            if source.startswith("."):
                assert (COMPOSE.parent / source).is_file(), v
            else:
                assert source in doc["volumes"], v
        assert sources["/data"] == name
        configs.add(sources["/etc/ringcrawl/cluster.toml"])
    assert len(configs) == 1  # one file for the ring
    text = (COMPOSE.parent / configs.pop()).read_text()
    cfg = _load_toml_text(text, tmp_path)
    for p in cfg.peers:
        host, _ = parse_address(p.address)
        assert host == peers[p.id]["networks"]["ring"]["ipv4_address"]
        assert Path(p.data_dir).parent == Path("/data")
    web_ip = web["networks"]["ring"]["ipv4_address"]
    assert web["command"][web["command"].index("--host") + 1] == web_ip
    assert tomllib.loads(text)["dns"]["resolve"]["*.web.test"] == web_ip
