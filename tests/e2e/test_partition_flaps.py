"""One owner per host through flapping links, one-way cuts and stalled peers: real peers in namespaces.

The cases of tests/e2e/test_partition.py (its docstring says what each asserts)
that change a link or a process more than once, in a file of their own so
that the two run side by side.
"""

from __future__ import annotations

from localweb.netns.partition import flapping
from test_partition import DEAD_AFTER, START, _assert_one_owner, _crawl, _saw_suspect, needs_netns


@needs_netns
def test_d_a_flapping_link(tmp_path):
    # "Up and down every 3 s for 30 s" at dead_after 6 s, scaled to dead_after 2 s.
    schedule = flapping(START, 5 * DEAD_AFTER, DEAD_AFTER / 2, ("isolate", "p1"))
    out = _crawl(tmp_path, 3, schedule)
    assert len(out.done) == len(schedule) == 11
    assert _saw_suspect(out, "p2", "p1"), out.report()
    _assert_one_owner(out)


@needs_netns
def test_e_an_asymmetric_split(tmp_path):
    # p2 and p3 no longer hear p1's ring messages; p1 still hears theirs.
    out = _crawl(tmp_path, 3, [(START, "unheard", "p1"), (START + 3 * DEAD_AFTER, "heal_all")])
    _assert_one_owner(out)


@needs_netns
def test_f_a_peer_that_stands_still_past_dead_after(tmp_path):
    # SIGSTOP: a long GC pause, a paused VM, a starved machine. The others
    # declare p1 dead; when it goes on, its lease has run out by its own
    # clock (dated by its pings, not by the answers waiting in its socket).
    out = _crawl(tmp_path, 3, [(START, "stop", "p1"), (START + 3 * DEAD_AFTER, "cont", "p1")])
    assert _saw_suspect(out, "p2", "p1"), out.report()
    _assert_one_owner(out)
