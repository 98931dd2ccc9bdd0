"""The previous release's tree, from git, for the tests that run today's peers against it.

A ring upgrades one peer at a time, so today's tree must work in one ring
with the release before it (ring/wirecodec.py, "Wire versions"). The
previous release is the git tag :data:`TAG`; a clone without tags (a
``--no-tags`` or mirror fetch of branches only) still has its commit
(:data:`COMMIT`) in main's history, so either will do. Only a shallow clone
has neither: then :func:`find` says why in one line and the tests skip.

- :func:`find`: the commit to use, or the reason there is none.
- :func:`show`: one file of it, as text (``git show``), no tree written.
- :func:`materialise`: the whole tree in a directory (``git archive | tar``),
  to run its ``python -m peer`` and ``python -m ring`` with ``PYTHONPATH``
  set to it; the same virtualenv serves both trees (dependencies change
  with a release, and the test fails loudly if one is missing).

When a release is tagged, :data:`TAG` and :data:`COMMIT` move to it: the
previous release is always the one whose wire version is ``VERSION - 1``
(tests/e2e/test_upgrade_ring.py checks it).
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

__all__ = ["COMMIT", "ROOT", "TAG", "find", "materialise", "show"]

ROOT = Path(__file__).resolve().parents[2]
#: The previous release: its tag, and the commit the tag names.
TAG = "v0.38.0"
COMMIT = "d9d08fa54325661b32863fe9a913100014321461"


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, timeout=60, check=False)


def find() -> tuple[str | None, str]:
    """(the full commit hash of the previous release, "") or (None, why it is not here)."""
    for ref in (f"refs/tags/{TAG}^{{commit}}", f"{COMMIT}^{{commit}}"):
        try:
            got = _git("rev-parse", "-q", "--verify", ref)
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"no git to find the previous release {TAG} with: {exc}"
        if got.returncode == 0:
            return got.stdout.decode().strip(), ""
    return None, (f"the previous release ({TAG}, commit {COMMIT[:10]}) is not in this clone "
                  f"(a shallow clone? `git fetch --tags --unshallow` brings it)")


def show(commit: str, path: str) -> str:
    """File ``path`` of ``commit``, as text."""
    got = _git("show", f"{commit}:{path}")
    if got.returncode != 0:
        raise FileNotFoundError(f"{commit}:{path}: {got.stderr.decode().strip()}")
    return got.stdout.decode()


def materialise(commit: str, dest: Path) -> Path:
    """The tree of ``commit`` written under ``dest`` (created); returns ``dest``."""
    got = _git("archive", "--format=tar", commit)
    if got.returncode != 0:
        raise RuntimeError(f"git archive {commit}: {got.stderr.decode().strip()}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(got.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest
