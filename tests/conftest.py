import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from runorder import COMMAND, DurationRecorder, load, sort_items

ROOT = Path(__file__).resolve().parents[1]
#: Each test file's seconds in the last full run that recorded them (tests/support/runorder.py).
DURATIONS = ROOT / "tests" / "durations.json"

# Bounded and reproducible in CI: the suite must finish in minutes on 2 cores,
# and a CI failure must replay the same examples locally (CI=true scripts/test).
settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_addoption(parser):
    parser.addoption("--record-durations", action="store_true",
                     help=f"write each test file's seconds to {DURATIONS.relative_to(ROOT)} at the end "
                          f"(the run order's record: {COMMAND})")


def pytest_configure(config):
    # In the controlling process only: under xdist the workers' reports reach it.
    if config.getoption("record_durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(DURATIONS, ROOT), "record-durations")


def pytest_collection_modifyitems(session, config, items):
    # The longest files first, as the last full run measured them: scripts/test runs
    # --dist loadfile without xdist's reordering (which sorts files by how many tests
    # they hold), so the workers take files in this order and the run does not end
    # with one long end-to-end file running alone (longest processing time first).
    sort_items(items, load(DURATIONS), ROOT)
