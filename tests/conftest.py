import os

from hypothesis import HealthCheck, settings

# Bounded and reproducible in CI: the suite must finish in minutes on 2 cores,
# and a CI failure must replay the same examples locally (CI=true scripts/test).
settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# The files that take longest, first. scripts/test runs --dist loadfile
# without xdist's reordering (which sorts files by how many tests they hold),
# so the two workers take files in this order and the run does not end with
# one long end-to-end file running alone (longest processing time first).
# Measured with the whole suite on 2 cores; a file missing here runs after
# these, in collection order.
_LONGEST_FIRST = (
    "test_partition.py", "test_partition_flaps.py", "test_crash.py", "test_recrawl.py", "test_engine.py",
    "test_cli_ring.py", "test_hostile.py", "test_scripts.py", "test_report.py",
    "test_handoff.py", "test_cluster_node.py", "test_dashboard.py", "test_adopt.py", "test_sitemapweb.py",
    "test_preflight.py", "test_archive.py", "test_proxy.py", "test_tls.py", "test_figures.py",
    "test_hostileweb_fuzz.py", "test_membership.py", "test_hostileweb.py", "test_dedupeweb.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order kept
