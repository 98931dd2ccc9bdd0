"""What the metrics server answers: liveness, readiness, the token, the paths (pure).

``peer.engine.opserver`` serves HTTP in threads of its own; every decision
it makes is here, values in and an :class:`Answer` out, so each rule is
tested without a socket.

Rules:

1. **Paths.** ``/metrics`` is the Prometheus exposition, ``/healthz`` the
   liveness probe, ``/readyz`` the readiness probe; anything else is 404
   (Kubernetes' probe names, as kube-apiserver serves them).
2. **Liveness** (``/healthz``) is 200 while the event loop answers: the loop
   writes a heartbeat (:class:`Beat`) every ``HEARTBEAT`` seconds, and the
   HTTP thread reads its age, never waiting on the loop. A beat older than
   ``STUCK_AFTER`` is 503 ``event loop stuck``: the process is up but its
   crawl, gossip and leases are not running, which a restart cures.
3. **Readiness** (``/readyz``) is 200 only when the peer takes part in the
   crawl now: its state is open and its scheduler running, it is in the
   ring, it holds its lease (a majority of the voters vouches for its view:
   ``ring.membership.lease``), and it is neither stopping nor leaving nor
   paused (``ring pause``: ``not ready: paused``; ``/healthz`` stays 200,
   a paused peer is well and must not be restarted).
   Otherwise 503 with one line saying why, e.g. ``not ready: no lease
   (heard 1 of 3 voters, 2 needed)``. A stuck loop is not ready either. A
   ring of one holds its own lease.
4. **The token.** With a token set, ``/metrics`` needs ``Authorization:
   Bearer <token>`` (RFC 6750 §2.1, what Prometheus's ``authorization``
   sends), compared in constant time (``hmac.compare_digest``) so its
   length of matching prefix does not leak through the answer's timing;
   without it 401 with ``WWW-Authenticate: Bearer``. The probes stay open
   (``peer.core.config.metrics`` rule 3).
"""

from __future__ import annotations

import enum
import hmac
from dataclasses import dataclass

from ring.membership.lease import LeaseState, PauseReason

__all__ = ["Answer", "Beat", "HEARTBEAT", "Path", "Readiness", "STUCK_AFTER", "answer", "authorized",
           "liveness", "readiness"]

#: Seconds between two heartbeats of the event loop (rule 2).
HEARTBEAT = 0.5
#: A heartbeat older than this is a stuck loop (rule 2). A loaded 2-core box
#: was measured waking a gossip round 3.9 s late (ring/io/sockets.py, local
#: health), so a few seconds of lateness is load, not a hang; a kubelet
#: restarts only after its own failureThreshold of such answers.
STUCK_AFTER = 10.0


class Path(enum.Enum):
    """The paths the server knows (rule 1)."""

    METRICS = "/metrics"
    HEALTHZ = "/healthz"
    READYZ = "/readyz"


@dataclass(frozen=True, slots=True)
class Readiness:
    """Whether the peer takes part in the crawl now, and if not why (one line)."""

    ready: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Beat:
    """What the event loop last wrote: when (monotonic seconds) and its readiness then."""

    at: float
    readiness: Readiness


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer: status, body, and whether the body is the metrics (the edge renders them)."""

    status: int
    body: str = ""
    metrics: bool = False
    challenge: bool = False  # 401: add WWW-Authenticate: Bearer


def readiness(*, running: bool, in_ring: bool, cluster: bool, lease: LeaseState | None,
              stopping: bool, leaving: bool, paused: bool = False) -> Readiness:
    """Rule 3, from the peer's state read on the event loop."""
    if leaving:
        return Readiness(False, "not ready: leaving the ring")
    if stopping:
        return Readiness(False, "not ready: stopping")
    if not running:
        return Readiness(False, "not ready: starting (state not open yet)")
    if paused:
        return Readiness(False, "not ready: paused (ring pause; ring resume starts it again)")
    if cluster and (not in_ring or lease is None):
        return Readiness(False, "not ready: not in the ring yet")
    if lease is not None and not lease.held and lease.open:
        # Settling after a ring change: the hosts that kept their owner are fetched,
        # the moved ones wait (ring.membership.hostgate); the peer is working.
        return Readiness(True, "ready (settling: moved hosts wait)")
    if lease is not None and not lease.held:
        if lease.reason is PauseReason.GRACE:
            return Readiness(False, f"not ready: no lease (grace after a ring change, "
                                    f"{lease.grace_left:.1f}s left)")
        return Readiness(False, f"not ready: no lease (heard {lease.vouched} of {lease.quorum} voters, "
                                f"{lease.needed} needed)")
    return Readiness(True, "ready")


def liveness(beat: Beat | None, now: float, stuck_after: float = STUCK_AFTER) -> Readiness:
    """Rule 2: ``now`` on the same monotonic clock as ``beat.at``."""
    if beat is None:
        return Readiness(False, "event loop not started")
    late = now - beat.at
    if late > stuck_after:
        return Readiness(False, f"event loop stuck: no heartbeat for {late:.0f}s")
    return Readiness(True, "ok")


def authorized(header: str | None, token: str | None) -> bool:
    """Rule 4: whether an ``Authorization`` header carries ``token`` (no token: everyone is)."""
    if not token:
        return True
    if not header:
        return False
    scheme, _, credentials = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(credentials.strip().encode(), token.encode())


def answer(target: str, authorization: str | None, *, token: str | None, beat: Beat | None,
           now: float, stuck_after: float = STUCK_AFTER) -> Answer:
    """What a GET of ``target`` gets (rules 1-4)."""
    path = target.split("?", 1)[0]
    if path == Path.HEALTHZ.value:
        live = liveness(beat, now, stuck_after)
        return Answer(200 if live.ready else 503, live.reason + "\n")
    if path == Path.READYZ.value:
        live = liveness(beat, now, stuck_after)
        if not live.ready:
            return Answer(503, f"not ready: {live.reason}\n")
        assert beat is not None
        return Answer(200 if beat.readiness.ready else 503, beat.readiness.reason + "\n")
    if path == Path.METRICS.value:
        if not authorized(authorization, token):
            return Answer(401, "a bearer token is needed ([metrics] token_file or token_env)\n",
                          challenge=True)
        return Answer(200, metrics=True)
    return Answer(404, "not found: /metrics, /healthz and /readyz are served\n")
