"""Crawler traps end at their budget: a calendar and a ``/a/a/a/...`` path on the hostile web (smoke).

``trap.test`` (localweb/hostile/farm.py) serves an infinite calendar
(``/cal/2026/12`` links the months before and after, for ever) and a path
that deepens (``/a/``, ``/a/a/``, ...). With ``crawl.max_path_repeat`` off
and no depth limit, only a budget ends them (peer/core/crawl/budgets.py).
The peer runs in this process; the crawl is judged from the server's log, as
a site owner would: at most the budget of page requests (robots.txt apart),
the crawl ended by itself, and the summary counts the budget.
A second run of a crawl stopped midway resumes it: the budget counts what
the first run spent.
"""

from __future__ import annotations

import re
from pathlib import Path

from localweb import HostileWeb, serve_in_thread
from localweb.processes.peerrun import cluster_toml, run_in_process

TRAP = "trap.test"
BUDGET = 25


def toml_for(tmp: Path, web: HostileWeb, **crawl: object) -> Path:
    return cluster_toml(tmp, [web.url(TRAP, "/cal/2026/12"), web.url(TRAP, "/a/")], sections={
        "crawl": {"max_path_repeat": 0, "max_pages_per_host": BUDGET, **crawl},
        # 20 pages a second: a run stopped after a few pages is stopped midway.
        "politeness": {"rate": 1200.0, "initial_delay": 0.05, "min_delay": 0.05, "max_delay": 0.2}})


def test_a_calendar_and_a_path_trap_end_at_the_host_budget_with_the_budget_counted(tmp_path: Path):
    web = HostileWeb()
    with serve_in_thread(web):
        run = run_in_process(toml_for(tmp_path, web), timeout=60.0)
    assert not run.timed_out and not run.stopped and run.codes == [0], run.stderr()  # ended by itself
    pages = web.fetched(TRAP)
    assert sum(pages.values()) == BUDGET and max(pages.values()) == 1, pages  # the budget, none twice
    paths = {u.split(str(web.port), 1)[1] for u in pages}
    assert any(p.startswith("/cal/") for p in paths) and "/a/a/a/a/a/" in paths, sorted(paths)  # both traps ran
    summary = run.peers[0].out.read_text()
    dropped = re.search(r"^  not requested: budget_host (\d+)$", summary, re.M)
    assert dropped and int(dropped[1]) >= 1, summary
    assert f"  limits: budgets spent 1 (not requested: budget_host {dropped[1]})" in summary, summary
    assert "  failed: none" in summary  # a budget is never a failure
    assert len(run.rows) == BUDGET and all(r["status"] == 200 for r in run.rows)


def test_a_stopped_crawl_resumed_spends_only_what_is_left_of_the_budget(tmp_path: Path):
    web = HostileWeb()
    with serve_in_thread(web):
        toml = toml_for(tmp_path, web)
        first = run_in_process(toml, timeout=60.0, stop_when=lambda: sum(web.fetched(TRAP).values()) >= 8)
        assert first.stopped, first.stderr()
        spent = sum(web.fetched(TRAP).values())
        assert spent < BUDGET
        second = run_in_process(toml, timeout=60.0)
    assert not second.timed_out and second.codes == [0], second.stderr()
    pages = web.fetched(TRAP)
    assert sum(pages.values()) == BUDGET, (spent, pages)  # before: the second run spent a whole budget
    assert "budgets spent 1" in second.peers[0].out.read_text()
