"""Every test module has a basename of its own across tests/.

pytest imports test modules by basename (rootdir-relative "rootdir/tests"
has no packages), so two files named ``test_x.py`` in two folders cannot
both be collected in one run: the second errors with "import file
mismatch", and a helper who ran each folder alone never sees it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_every_test_module_basename_is_unique() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        where[path.name].append(str(path.relative_to(TESTS)))
    twice = {name: sorted(paths) for name, paths in where.items() if len(paths) > 1}
    assert twice == {}
