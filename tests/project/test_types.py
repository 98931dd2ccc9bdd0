"""mypy over peer, ring and localweb: strict on the cores, lenient on the edges, by folder.

The configuration is pyproject.toml's ``[tool.mypy]``: strict on ``peer.*``
and ``ring.*``, with the I/O folders' strict flags turned off again by glob;
no ``# type: ignore`` is left in a pure core (tests/project/test_purity.py's). mypy keeps its cache in
.mypy_cache, so a second run takes a few seconds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_purity import PURE, _source

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("mypy", reason="mypy comes with the test extra: pip install -e '.[test]'")


def _override_modules(index: int) -> list[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text.split("[[tool.mypy.overrides]]")[index]
    return re.findall(r'"([\w.*]+)"', block.split("]")[0])


def strict_modules() -> list[str]:
    """The strict override's module patterns (the first override)."""
    return _override_modules(1)


def lenient_modules() -> list[str]:
    """The edges' override, which turns the strict flags off again (the second)."""
    return _override_modules(2)


def _matches(module: str, patterns: list[str]) -> bool:
    return any(module == p or (p.endswith(".*") and (module + ".").startswith(p[:-1])) for p in patterns)


def test_mypy_finds_no_errors():
    res = subprocess.run([sys.executable, "-m", "mypy", "--no-color-output"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout, res.stdout


def test_every_pure_core_is_checked_strictly():
    strict, lenient = strict_modules(), lenient_modules()
    missing = [m for m in PURE if m.split(".")[0] in ("peer", "ring")
               and not (_matches(m, strict) and not _matches(m, lenient))]
    assert not missing, f"these pure modules are not checked strictly (pyproject.toml): {missing}"


def test_the_strict_and_lenient_lists_are_globs_not_modules():
    # The layers are folders: a new core is strict because of where it lives,
    # never because someone remembered to list it.
    assert strict_modules() == ["peer.*", "ring.*"]
    assert all(p.endswith(".*") for p in lenient_modules()), lenient_modules()
    assert not _matches("peer.core.crawl.core", lenient_modules())
    assert _matches("peer.net.fetcher", lenient_modules())


@pytest.mark.parametrize("module", [m for m in PURE if m.split(".")[0] in ("peer", "ring")])
def test_no_type_ignore_in_a_pure_core(module):
    path = _source(module)
    lines = [f"{path.name}:{i}" for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if "type: ignore" in line]
    assert not lines, lines
