"""Every script under scripts/ that takes options answers ``--help``: a usage, exit 0, no traceback.

A script's options are checked only when it runs, and most scripts are run by
hand, seldom: two merges that each added a ``--down`` to
scripts/bench_membership.py made it fail at its first line
(``argparse.ArgumentError: argument --down: conflicting option string``), and
nothing ran it. One subprocess runs them all (``runpy``, as ``python
scripts/X.py --help`` would): argparse prints the usage and exits before any
work starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Run in a fresh interpreter: each script as __main__ with ``--help``; what it printed and how it ended.
DRIVER = r"""
import contextlib, io, json, runpy, sys, traceback
out = {}
for path in sys.argv[1:]:
    buf, err = io.StringIO(), io.StringIO()
    code = None
    sys.argv = [path, "--help"]
    sys.path.insert(0, path.rsplit("/", 1)[0])  # as python puts a script's folder first
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        code, err = "raised", io.StringIO(traceback.format_exc(limit=3))
    sys.path.pop(0)
    out[path] = (code, buf.getvalue()[:300], err.getvalue()[-600:])
print(json.dumps(out))
"""


def option_scripts() -> list[Path]:
    """The scripts that parse options with argparse (the others take none, or a fixed form)."""
    return sorted(p for p in (ROOT / "scripts").glob("*.py") if "ArgumentParser(" in p.read_text())


def help_of(paths: list[Path]) -> dict[str, tuple[object, str, str]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", DRIVER, *map(str, paths)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return {Path(k).name: tuple(v) for k, v in json.loads(res.stdout.splitlines()[-1]).items()}


def test_every_script_with_options_prints_its_usage_on_help():
    scripts = option_scripts()
    assert len(scripts) > 20 and any(p.name == "bench_membership.py" for p in scripts)
    bad = {name: got for name, got in help_of(scripts).items()
           if got[0] != 0 or "usage:" not in got[1]}
    assert not bad, bad


def test_the_check_catches_a_conflicting_option(tmp_path):
    # What the merge did: two add_argument calls of one option string.
    script = tmp_path / "twice.py"
    script.write_text("import argparse\nap = argparse.ArgumentParser()\nap.add_argument('--down')\n"
                      "ap.add_argument('--down')\nap.parse_args()\n")
    code, _, err = help_of([script])["twice.py"]
    assert code == "raised" and "conflicting option string" in err
