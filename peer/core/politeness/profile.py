"""A politeness profile: ``[politeness]`` or a ``[[site]]`` block's, its figures worked out once.

One :class:`Pace` for ``[politeness]`` and one for each ``[[site]]`` block
that applies (peer/core/config/sites.py); a host's record
(peer/core/frontier/hoststate.py) points at its own (``HostState.pace``), so the
pacing rules (peer/core/frontier/pacing.py) read its rate, cap and ceilings with
no lookup. Below the record, which names it, and the rules, which read it.
"""

from __future__ import annotations

from peer.core.config.sections import PolitenessConfig
from peer.core.politeness.ceiling import CEILING_WINDOWS, ceiling
from peer.core.politeness.pid import PID

__all__ = ["Pace", "new_pid"]


def new_pid(pol: PolitenessConfig, initial_delay: float | None = None) -> PID:
    """A fresh, scale-free controller for a host at ``initial_delay`` (default: the start delay)."""
    lo, hi = pol.floor_delay, pol.max_delay
    d = pol.start_delay if initial_delay is None else initial_delay
    d = min(max(d, lo), hi)
    return PID(pol.kp, pol.ki, pol.kd, pol.setpoint, d, lo, hi, pol.integral_limit,
               nominal_delay=pol.nominal_delay)


class Pace:
    """A politeness profile's figures, worked out once and shared by every host paced by it.

    ``window`` and the per-IP keys are the frontier's, one for all hosts.
    """

    __slots__ = ("pol", "cap", "pid_on", "fresh_delay", "limits", "ring_n", "replaced", "_pid")

    def __init__(self, pol: PolitenessConfig) -> None:
        self.pol = pol
        self.cap = pol.host_concurrency
        self.pid_on = pol.rate > 0
        # The delay of a host with no history.
        self.fresh_delay = pol.start_delay if self.pid_on else 0.0
        self.limits = tuple((w, ceiling(pol.rate, w)) for w in CEILING_WINDOWS) if self.pid_on else ()
        self.ring_n = max((k for _, k in self.limits), default=0)
        #: A live change replaced this profile: a host paced by it is paced anew when next
        #: touched (peer/core/frontier/scheduler.py, ``HostScheduler.repace``).
        self.replaced = False
        # Bad gains fail here, at start-up, not at the first host.
        self._pid = new_pid(pol) if self.pid_on else None

    def new_host_pid(self) -> PID | None:
        """A new host's controller, or None without a rate (rule 1)."""
        return self._pid.fresh() if self._pid is not None else None
