"""peer.core.run.probes: what /healthz, /readyz and /metrics answer, without a socket."""

from __future__ import annotations

from ring.membership.lease import LeaseState, PauseReason

from peer.core.run.probes import Beat, Readiness, answer, authorized, liveness, readiness

HELD = LeaseState(held=True, vouched=3, needed=2, quorum=3, reason=None, grace_left=0.0, until=9.0)
NONE = LeaseState(held=False, vouched=1, needed=2, quorum=3, reason=PauseReason.NO_MAJORITY, grace_left=0.0,
                  until=0.0)
GRACE = LeaseState(held=False, vouched=3, needed=2, quorum=3, reason=PauseReason.GRACE, grace_left=1.5,
                   until=0.0)


def ready(**kw) -> Readiness:
    base = dict(running=True, in_ring=True, cluster=True, lease=HELD, stopping=False, leaving=False)
    return readiness(**(base | kw))


def test_ready_only_running_in_the_ring_with_the_lease_and_not_going():
    assert ready() == Readiness(True, "ready")
    assert ready(lease=NONE).reason == "not ready: no lease (heard 1 of 3 voters, 2 needed)"
    assert ready(lease=GRACE).reason == "not ready: no lease (grace after a ring change, 1.5s left)"
    # Settling after a ring change: the hosts that kept their owner are fetched (ring.membership.hostgate).
    settling = LeaseState(False, 1, 2, 3, PauseReason.GRACE, 1.5, 0.0, open=True)
    assert ready(lease=settling) == Readiness(True, "ready (settling: moved hosts wait)")
    assert ready(running=False).reason == "not ready: starting (state not open yet)"
    assert ready(in_ring=False, lease=None).reason == "not ready: not in the ring yet"
    assert ready(stopping=True).reason == "not ready: stopping"
    assert ready(leaving=True, stopping=True).reason == "not ready: leaving the ring"
    # A ring of one holds its own lease.
    assert ready(cluster=False, in_ring=False, lease=None).ready


def test_a_stale_heartbeat_is_a_stuck_loop_on_both_probes():
    beat = Beat(100.0, Readiness(True, "ready"))
    assert liveness(beat, 105.0).ready
    assert liveness(beat, 111.0).reason == "event loop stuck: no heartbeat for 11s"
    assert answer("/healthz", None, token=None, beat=beat, now=111.0).status == 503
    stuck = answer("/readyz", None, token=None, beat=beat, now=111.0)
    assert stuck.status == 503 and stuck.body.startswith("not ready: event loop stuck")
    assert answer("/healthz", None, token=None, beat=None, now=0.0).status == 503


def test_paths_other_than_the_three_are_404_and_the_probes_need_no_token():
    beat = Beat(0.0, Readiness(False, "not ready: stopping"))
    assert answer("/", None, token="t", beat=beat, now=0.0).status == 404
    assert answer("/metrics/x", None, token=None, beat=beat, now=0.0).status == 404
    got = answer("/readyz?verbose", None, token="t", beat=beat, now=0.0)
    assert (got.status, got.body) == (503, "not ready: stopping\n")
    assert answer("/healthz", None, token="t", beat=beat, now=0.0).status == 200
    assert answer("/metrics", None, token=None, beat=beat, now=0.0).metrics


def test_metrics_with_a_token_need_the_bearer_header():
    assert authorized(None, None) and authorized("Bearer x", "")
    assert authorized("Bearer s3cret", "s3cret") and authorized("bearer  s3cret ", "s3cret")
    for bad in (None, "", "Bearer", "Bearer s3cre", "Bearer s3cretX", "Basic czNjcmV0", "s3cret"):
        assert not authorized(bad, "s3cret"), bad
    refused = answer("/metrics", "Bearer no", token="s3cret", beat=None, now=0.0)
    assert refused.status == 401 and refused.challenge and not refused.metrics
    assert answer("/metrics", "Bearer s3cret", token="s3cret", beat=None, now=0.0).metrics
