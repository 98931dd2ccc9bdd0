"""``pip install`` of the project, and the user's commands run from the installed copy.

A user who installs ringcrawl with pip has no checkout: the commands must be
the entry points of ``[project.scripts]``, the code must be in the wheel
(``[tool.setuptools.packages.find]``) and so must the dashboard's files
(``[tool.setuptools.package-data]``). Tests run from the checkout would not
notice any of these missing, since they import the tree itself.

So the tree is copied out of the repository, built and installed
(non-editable) into a fresh venv, and each command runs from another
directory, its output judged as a user reads it. No download: the venv
sees this test environment's packages through a ``.pth`` file (the
dependencies, and setuptools as the build backend: ``--no-deps
--no-build-isolation``). That path file is a plain directory line, so the
test environment's own editable install of ringcrawl (a ``.pth`` that
*runs* a finder) is not loaded, and the import check below proves that the
code came from the venv: it would fail if it came from the checkout.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import trio

from localweb.processes.peerrun import free_ports
from peer.results.store import PageRow, ResultStore

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ("ringcrawl", "ringcrawl-ring", "ringcrawl-merge", "ringcrawl-report", "ringcrawl-adopt",
            "ringcrawl-keys", "ringcrawl-webfarm")
#: What a wheel needs of the checkout: the packages and the files pyproject.toml names.
SOURCES = ("pyproject.toml", "README.md", "peer", "ring", "localweb")


class Installed:
    """A venv outside the repository with ringcrawl installed from a copy of the tree."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.venv = base / "venv"
        self.bin = self.venv / "bin"
        self.home = base / "home"  # where the user runs the commands: neither the repo nor the venv
        self.home.mkdir()

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        return env

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``argv`` as a user types it, in ``home``, with the venv's bin first on PATH."""
        exe = shutil.which(argv[0], path=self.env["PATH"])
        assert exe is not None, f"{argv[0]}: not on PATH"
        return subprocess.run([exe, *argv[1:]], cwd=self.home, env=self.env, capture_output=True,
                              text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    inst = Installed(tmp_path_factory.mktemp("install"))
    assert ROOT not in inst.base.parents, "the venv must be outside the repository"
    src = inst.base / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(inst.venv)], check=True, capture_output=True, timeout=120)
    purelib = subprocess.run([str(inst.venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # This environment's packages (the dependencies, setuptools) as plain path lines.
    (Path(purelib) / "ringcrawl-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    res = subprocess.run([sys.executable, "-m", "pip", "--python", str(inst.venv / "bin" / "python"),
                          "install", "--no-deps", "--no-build-isolation", "--no-index",
                          "--disable-pip-version-check", str(src)],
                         capture_output=True, text=True, timeout=300, cwd=inst.base)
    assert res.returncode == 0, res.stdout + res.stderr
    return inst


def test_every_command_is_the_venvs_and_imports_the_installed_package(installed):
    for name in COMMANDS:
        exe = shutil.which(name, path=installed.env["PATH"])
        assert exe is not None and Path(exe).parent == installed.bin, (name, exe)
        assert Path(exe).read_text().startswith(f"#!{installed.bin}/python"), name  # pip's launcher
    site_packages = installed.run("python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    where = Path(site_packages.stdout.strip())
    res = installed.run("python", "-c", "import localweb, peer, ring; "
                        "print(peer.__file__); print(ring.__file__); print(localweb.__file__)")
    assert res.returncode == 0, res.stderr
    for line in res.stdout.splitlines():
        assert Path(line).is_relative_to(where) and not Path(line).is_relative_to(ROOT), line


def test_the_dashboards_files_are_installed(installed):
    # ring dashboard serves these; a wheel without package-data would lack them.
    want = sorted(p.name for p in (ROOT / "ring" / "tools" / "static").iterdir() if p.is_file())
    res = installed.run("python", "-c", "from importlib.resources import files; "
                        "print('\\n'.join(sorted(p.name for p in (files('ring.tools') / 'static').iterdir())))")
    assert res.returncode == 0, res.stderr
    assert "dashboard.js" in want and res.stdout.split() == want


def test_help_of_every_command(installed):
    # Each names itself and the others as installed: a user without a checkout has no
    # python -m peer to run (from the checkout: tests/edges/test_commandnames.py).
    for name in COMMANDS:
        res = installed.run(name, "--help")
        assert res.returncode == 0 and res.stderr == "", (name, res.stderr)
        assert res.stdout.startswith(f"usage: {name} "), (name, res.stdout[:200])
        assert "python -m" not in res.stdout and "scripts/" not in res.stdout, (name, res.stdout)
    usage = installed.run("ringcrawl", "--help").stdout.split("\n\n")[0]
    assert "\n       ringcrawl try URL --ring PATH" in usage


def write_cluster(home: Path) -> tuple[Path, int]:
    port = free_ports(1)[0]  # nothing listens there
    toml = home / "cluster.toml"
    toml.write_text(f'[ring]\nname = "installed"\n\n[crawl]\nseeds = ["http://s001.web.test:8080/"]\n\n'
                    f'[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:{port}"\ndata_dir = "data/p1"\n')
    return toml, port


def test_check_table_and_status_of_a_ring(installed):
    toml, port = write_cluster(installed.home)
    res = installed.run("ringcrawl", "--check", "--ring", "cluster.toml")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("cluster.toml: ok: ring 'installed', 1 peer(s)")
    assert f"tcp://127.0.0.1:{port}" in res.stdout and str(installed.home / "data" / "p1") in res.stdout

    res = installed.run("ringcrawl-ring", "table", "--ring", "cluster.toml")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("ring 'installed': 1 peers")
    assert "s001.web.test:8080                       p1" in res.stdout

    # No peer runs: what the user sees is one line and exit status 1.
    res = installed.run("ringcrawl-ring", "status", "--ring", "cluster.toml", "--timeout", "0.5")
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr == (f"error: no peer of ring 'installed' answered at tcp://127.0.0.1:{port}; "
                          "are the peers running?\n")

    # A user's mistake: one line, exit 2, no traceback.
    res = installed.run("ringcrawl", "--check", "--ring", "missing.toml")
    assert res.returncode == 2 and res.stderr.startswith("error: ") and res.stderr.count("\n") == 1


T0 = datetime(2025, 3, 1, 12, 0, 0).timestamp()


def write_results(path: Path, peer: str, urls: list[str]) -> None:
    """A peer's pages.duckdb, written by the store a crawling peer uses."""

    async def main() -> None:
        store = ResultStore(path, peer, store_links=False, store_body=False)
        async with store:
            for i, url in enumerate(urls):
                host = url.split("/")[2]
                store.add_page(PageRow.of(url, None, host, 200, "text/html", 1000, f"page {i}", 3, i % 3,
                                       T0 + i, 20.0 + i, None))

    trio.run(main)


def test_merge_and_report_of_two_peers_files(installed):
    home = installed.home
    (home / "p1").mkdir()
    (home / "p2").mkdir()
    write_results(home / "p1" / "pages.duckdb", "p1", [f"http://a.web.test/{i}" for i in range(6)])
    # p2 fetched one of p1's URLs later: it wins the merge, one row per URL.
    write_results(home / "p2" / "pages.duckdb", "p2",
                  [f"http://b.web.test/{i}" for i in range(4)] + ["http://a.web.test/0"])

    # The peers' data directories, as the README says to copy them.
    res = installed.run("ringcrawl-merge", "p1", "p2", "-o", "crawl.duckdb")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "merged 2 file(s) into crawl.duckdb"
    assert lines[1:3] == ["input      p1: 6 pages from pages.duckdb; stats.json not found",
                          "input      p2: 5 pages from pages.duckdb; stats.json not found"]
    assert lines[3] == "pages      10 (11 rows read, 1 duplicates dropped)"
    assert lines[4] == "hosts      2"
    assert "peers      p1: 5  p2: 5" in lines

    res = installed.run("ringcrawl-merge", "p1/pages.duckdb", "-o", "crawl.duckdb")
    assert res.returncode == 2 and "--force" in res.stderr  # never over an existing file unasked

    res = installed.run("ringcrawl-report", "crawl.duckdb", "-o", "report")
    assert res.returncode == 0, res.stderr
    index = home / "report" / "index.html"
    assert res.stdout.splitlines()[-1] == f"report: {index}"
    page = index.read_text()
    assert ('<tr id="s-pages"><th>pages fetched (requests made for pages: an answer of any status, '
            'or a failure; robots.txt apart)</th><td>10</td></tr>') in page
    assert (home / "report" / "rate.png").read_bytes().startswith(b"\x89PNG")


def test_keys_and_webfarm(installed):
    res = installed.run("ringcrawl-keys", "--dir", "keys", "--id", "p1")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"p1: wrote {Path('keys') / 'p1.key'} (public)")
    assert sorted(p.name for p in (installed.home / "keys").iterdir()) == ["p1.key", "p1.key_secret"]
    res = installed.run("ringcrawl-webfarm", "--help")
    assert res.returncode == 0 and "--hosts" in res.stdout
