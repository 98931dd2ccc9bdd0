"""mypy over peer, ring and localweb: strict on the pure cores, lenient on the edges.

The configuration is pyproject.toml's ``[tool.mypy]``; the strict list is
tests/test_purity.py's (plus the error and layout modules the cores use), and
no ``# type: ignore`` is left in those modules. mypy keeps its cache in
.mypy_cache, so a second run takes a few seconds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_purity import PURE

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mypy", reason="mypy comes with the test extra: pip install -e '.[test]'")


def strict_modules() -> list[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text.split("[[tool.mypy.overrides]]")[1]
    return re.findall(r'"([\w.]+)"', block.split("]")[0])


def test_mypy_finds_no_errors():
    res = subprocess.run([sys.executable, "-m", "mypy", "--no-color-output"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout, res.stdout


def test_every_pure_core_is_checked_strictly():
    strict = strict_modules()
    missing = [m for m in PURE if m.split(".")[0] in ("peer", "ring") and m not in strict]
    assert not missing, f"add these to the strict list in pyproject.toml: {missing}"


@pytest.mark.parametrize("module", [m for m in PURE if m.split(".")[0] in ("peer", "ring")])
def test_no_type_ignore_in_a_pure_core(module):
    path = ROOT / (module.replace(".", "/") + ".py")
    lines = [f"{path.name}:{i}" for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if "type: ignore" in line]
    assert not lines, lines
