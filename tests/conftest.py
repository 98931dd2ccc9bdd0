import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# Bounded and reproducible in CI: the suite must finish in minutes on 2 cores,
# and a CI failure must replay the same examples locally (CI=true scripts/test).
settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# scripts/ holds the local test web (webfarm.py), which the tests import.
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))
