"""The scheduler as a part of the frontier (peer/core/frontier/scheduler.py): driven through its
interface alone, with no queue. The rules it keeps are judged through the frontier in
test_frontier.py, test_pacing.py and test_ipbudget.py."""

from peer.core.frontier.frontier import Outcome, Politeness
from peer.core.frontier.scheduler import HostScheduler

A, B, C = "a.test", "b.test", "c.test"


def test_hosts_told_of_work_take_turns_by_their_pace_and_no_queue_is_read():
    # The records' queues stay empty: had the scheduler read them, it would
    # see no work at all.
    s = HostScheduler(Politeness(initial_delay=1.0, host_concurrency=1))
    a, b = s.keep(A, 0.0), s.keep(B, 0.0)
    assert s.next_ready_at() is None
    s.filled(a, 0.0)
    s.filled(b, 0.0)
    assert s.next_ready_at() == 0.0
    assert s.next_host(0.0) is a
    s.start(a, 0.0, "http://a.test/0", more=True)
    assert s.next_host(0.0) is b
    s.start(b, 0.0, "http://b.test/0", more=False)
    assert (s.next_host(0.0), s.in_flight, s.hosts_active) == (None, 2, 2)
    s.end(A, 0.5)
    assert s.next_ready_at() == 1.0  # a's delay runs from its start; b has no work left
    assert s.next_host(0.9) is None
    assert s.next_host(1.0) is a
    s.start(a, 1.0, "http://a.test/1", more=False)
    s.end(A, 1.25)
    s.end(B, 1.25)
    assert (s.next_ready_at(), s.in_flight, s.hosts_active) == (None, 0, 0)
    assert a.items == [] and b.items == [] and a.head == b.head == 0


def test_a_start_not_made_is_taken_back_and_the_host_forgotten_is_reported():
    gone = []
    s = HostScheduler(Politeness(initial_delay=1.0), forgotten=gone.append)
    c = s.keep(C, 0.0)
    s.filled(c, 0.0)
    assert s.next_host(0.0) is c
    s.start(c, 0.0, "http://c.test/0", more=True)
    assert s.recent_starts(C) == (0.0,)
    s.end(C, 0.0, Outcome.NOT_STARTED, url="http://c.test/0")
    assert s.recent_starts(C) == ()
    assert s.next_ready_at() == 0.0  # no request was made: no delay to wait for
    s.emptied(c)  # its queue went to another peer
    assert s.next_ready_at() is None
    s.roll_windows(100.0)
    assert (gone, s.n_known, s.get(C)) == ([C], 0, None)
