"""Per-host crawl-rate controller: a discrete PID law on the delay, scale-free.

Source: the blog post "PID控制器——控制网络爬虫速度" (a PID controller to
control a web crawler's speed), whose controller is quoted here. Once per measuring window the controller compares the
pages fetched from a host with the target and moves the delay between that
host's request starts, law (4.1):

    T_k = T_{k-1} + Kp*(S - n) + Ki*Sum + Kd*Diff

S is the setpoint (pages per window), n the pages fetched in the window that
just ended and e = S - n. The gains are negative (the post's typical Kp is
-0.05): too fast (n > S, e < 0) lengthens the delay, too slow shortens it.
The post's worked example: T0 = 1.0 s, Kp = -0.05, S = 40; n = 100 gives
T1 = 4.0, then n = 30 gives T2 = 3.5.

Scale. The post tuned its gains at S = 40 pages in a 60 s window, a nominal
delay of 1.5 s (``SEED_SETPOINT``, ``SEED_DELAY``). Read literally, Kp moves
the delay 0.05 s per page of error whatever the rate: 3 % of the delay per
page at 40 pages/min, but at 600 pages/min (T0 = 0.1 s, S = 600) one window's
error of a few hundred pages is tens of seconds, the delay hits its floor and
the backlog goes out as fast as the host answers (measured on the local web:
up to 104 requests in one second against 10/s). Given ``nominal_delay`` (T0,
the delay at which the host runs at S), the law is read in the post's units:

    e' = (S - n) * SEED_SETPOINT / S           (error in "reference pages")
    T_k = T_{k-1} + (T0 / SEED_DELAY) * (Kp*e' + Ki*Sum' + Kd*Diff')

so relative to T0 every term is the post's own: with u = T/T0 and x = n/S,
u_k = u_{k-1} + (Kp*SEED_SETPOINT/SEED_DELAY) * (1 - x) + ... At S = 40 and
T0 = 1.5 s the factors are 1 and the law is the post's, term by term; at
any other rate and window the same gains give the same trajectory of u and x
(docs/politeness.md derives it and tabulates settling windows). Sum' is
clamped to +-integral_limit reference pages, i.e. +-integral_limit/40 of S.
Without ``nominal_delay`` the law is the literal one (gains in seconds per
page), as in the post's example.

Choices the post leaves open, made here:

- Sum includes the current error: the post defines it as "the integral of the
  error term (in fact the sum of all the error values)" (§4, "Sum是误差项(S-n)
  的积分(其实就是所有误差值的和)"), and e_k is one of those values.
- Diff is "the difference of two successive errors" (§4, "前后两次误差项的差
  值"), e_k - e_{k-1}; on the first update there is no e_{k-1} and Diff is 0,
  so a derivative gain does not kick on the first measurement.
- The delay is clamped to [min_delay, max_delay] and Sum to +-integral_limit:
  the post's §5 names both clamps but gives no values.

The law is incremental: the P term already accumulates into T, so Ki*Sum is a
second accumulation that is added again every window until the errors sum back
to zero. Every approach to the setpoint is therefore paid back by an overshoot
of about the same area (up to integral_limit pages*windows). Keep the clamp
small next to the setpoint: in the simulated host of tests/core/test_pid.py (Kp =
-0.05, Ki = -0.01, S = 40) a clamp of 15 settles within 8-13 windows of each
step, while with 100 it takes 26 windows or more (and never settles in the
30-window slow phase).

Anti-windup is also the caller's job: skip ``update()`` for a window in which
the host had no backlog. An idle host fetches n = 0 < S through no fault of
the delay; feeding that error in would wind Sum to its clamp and the delay
down to min_delay, and the host would be hammered when work arrives.
"""

from __future__ import annotations

import math

__all__ = ["PID", "SEED_DELAY", "SEED_SETPOINT"]

#: The post's operating point: S = 40 pages in a 60 s window (§3), so its
#: gains were tuned around a delay of 60/40 = 1.5 s between requests.
SEED_SETPOINT = 40.0
SEED_DELAY = 1.5


class PID:
    """The PID delay controller for one host; see the module docstring."""

    __slots__ = (
        "_kp",
        "_ki",
        "_kd",
        "_setpoint",
        "_escale",
        "_tscale",
        "_initial",
        "_min",
        "_max",
        "_limit",
        "_delay",
        "_integral",
        "_last_error",
    )

    def __init__(
        self,
        kp: float,
        ki: float,
        kd: float,
        setpoint: float,
        initial_delay: float,
        min_delay: float,
        max_delay: float,
        integral_limit: float,
        nominal_delay: float | None = None,
    ) -> None:
        for name, value in (("kp", kp), ("ki", ki), ("kd", kd)):
            _check_number(name, value)
            if value > 0:
                # A positive gain speeds a host up when it is already too fast.
                raise ValueError(
                    f"{name} must be <= 0 (a negative gain lengthens the delay "
                    f"when a host is fetched too fast), got {value!r}"
                )
        _check_number("setpoint", setpoint)
        if setpoint <= 0:
            raise ValueError(f"setpoint must be > 0 pages per window, got {setpoint!r}")
        _check_number("initial_delay", initial_delay)
        _check_number("min_delay", min_delay)
        if min_delay < 0:
            raise ValueError(f"min_delay must be >= 0 seconds, got {min_delay!r}")
        _check_number("max_delay", max_delay, allow_inf=True)
        if max_delay < min_delay:
            raise ValueError(
                f"max_delay ({max_delay!r}) must be >= min_delay ({min_delay!r})"
            )
        _check_number("integral_limit", integral_limit, allow_inf=True)
        if integral_limit < 0:
            raise ValueError(f"integral_limit must be >= 0, got {integral_limit!r}")
        if nominal_delay is None:
            escale = tscale = 1.0
        else:
            _check_number("nominal_delay", nominal_delay)
            if nominal_delay <= 0:
                raise ValueError(f"nominal_delay must be > 0 seconds, got {nominal_delay!r}")
            escale = SEED_SETPOINT / float(setpoint)
            tscale = float(nominal_delay) / SEED_DELAY
        self._kp = float(kp)
        self._ki = float(ki)
        self._kd = float(kd)
        self._setpoint = float(setpoint)
        self._escale = escale
        self._tscale = tscale
        self._min = float(min_delay)
        self._max = float(max_delay)
        self._limit = float(integral_limit)
        self._initial = min(max(float(initial_delay), self._min), self._max)
        self._delay = self._initial
        self._integral = 0.0
        self._last_error: float | None = None

    @property
    def delay(self) -> float:
        """The current delay T between request starts, in seconds."""
        return self._delay

    @property
    def setpoint(self) -> float:
        """S, the target pages per window."""
        return self._setpoint

    @property
    def integral(self) -> float:
        """Sum, the clamped running sum of errors (in reference pages if scaled)."""
        return self._integral

    @property
    def last_error(self) -> float | None:
        """e of the last update (S - n; in reference pages if scaled), or None before the first."""
        return self._last_error

    def update(self, n: float) -> float:
        """Feed the pages fetched in the window just ended; return the new delay."""
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not n >= 0 or n == math.inf:
            raise ValueError(f"pages fetched must be a finite number >= 0, got {n!r}")
        error = (self._setpoint - n) * self._escale
        limit = self._limit
        integral = min(max(self._integral + error, -limit), limit)
        diff = 0.0 if self._last_error is None else error - self._last_error
        step = self._kp * error + self._ki * integral + self._kd * diff
        delay = self._delay + self._tscale * step
        self._delay = min(max(delay, self._min), self._max)
        self._integral = integral
        self._last_error = error
        return self._delay

    def fresh(self) -> PID:
        """A new controller of the same gains and clamps at its initial delay, no history:
        what a new host gets, without the checks again (a live change repaces many hosts)."""
        new = PID.__new__(PID)
        new._kp, new._ki, new._kd = self._kp, self._ki, self._kd
        new._setpoint, new._escale, new._tscale = self._setpoint, self._escale, self._tscale
        new._initial, new._min, new._max, new._limit = self._initial, self._min, self._max, self._limit
        new._delay = self._initial
        new._integral = 0.0
        new._last_error = None
        return new

    def reset(self) -> None:
        """Forget all history: back to the initial delay, Sum = 0, no last error."""
        self._delay = self._initial
        self._integral = 0.0
        self._last_error = None

    def __repr__(self) -> str:
        return (
            f"PID(kp={self._kp}, ki={self._ki}, kd={self._kd}, setpoint={self._setpoint}, "
            f"delay={self._delay}, integral={self._integral}, last_error={self._last_error})"
        )


def _check_number(name: str, value: object, *, allow_inf: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if math.isnan(value) or (math.isinf(value) and not (allow_inf and value > 0)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
