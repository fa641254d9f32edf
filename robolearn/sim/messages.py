"""MuJoCo's warnings, rate-limited: one line per kind of warning per interval, with a count.

MuJoCo reports a diverged simulation through ``mju_warning`` (printed to the console and
appended to ``MUJOCO_LOG.TXT`` by its default handler) once per simulation each time its
warning counter leaves 0. The env resets a diverged env, which zeroes the counter, so a task
whose every env diverges every step prints a line per env per step: thousands of lines per
iteration that bury the training log. :func:`install` replaces the handler with one that
prints the first warning of each kind at once and then at most one line per kind per
``interval_s`` seconds, saying how many were left out. Divergence itself is counted from
MuJoCo's warning counters (:meth:`robolearn.sim.Engine.diverged`), not from these
lines.
"""

from __future__ import annotations

import atexit
import re
import sys
import threading
import time
from collections.abc import Callable

import mujoco

#: Seconds between two lines about the same kind of warning.
DEFAULT_INTERVAL_S = 10.0

# Numbers (ids, times, values) differ between two warnings of one kind; the rest is the kind.
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def warning_kind(message: str) -> str:
    """The kind of a MuJoCo warning: its text with every number replaced by ``#``."""
    return _NUMBER.sub("#", message.strip())


class WarningLimiter:
    """A MuJoCo warning handler that prints each kind at most once per ``interval_s``.

    MuJoCo calls it from the threads of the batch engine (each holding the GIL while in
    Python), hence the lock.
    """

    def __init__(
        self,
        interval_s: float = DEFAULT_INTERVAL_S,
        write: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self._write = write
        self._clock = clock
        self._lock = threading.Lock()
        # kind -> [time of its last printed line, warnings left out since, latest message]
        self._kinds: dict[str, list] = {}
        self.total = 0
        """Warnings received since the handler was made, printed or not."""

    def _emit(self, line: str) -> None:
        if self._write is not None:
            self._write(line)
        else:
            # sys.stderr looked up per call: tests and the CLI may replace it
            print(line, file=sys.stderr, flush=True)

    def __call__(self, message: str) -> None:
        """Handle one warning from MuJoCo."""
        kind = warning_kind(message)
        now = self._clock()
        with self._lock:
            self.total += 1
            state = self._kinds.get(kind)
            if state is None:
                self._kinds[kind] = [now, 0, message]
                line = (
                    f"MuJoCo warning: {message.strip()} (further warnings like this are "
                    f"counted and reported at most every {self.interval_s:g} s)"
                )
            elif now - state[0] >= self.interval_s:
                line = self._summary(state, message, now)
            else:
                state[1] += 1
                state[2] = message
                return
        self._emit(line)

    def _summary(self, state: list, message: str, now: float) -> str:
        """Reset a kind's count and describe it, this message included (lock held)."""
        count, elapsed = state[1] + 1, now - state[0]
        state[0], state[1], state[2] = now, 0, message
        return f"MuJoCo warning x{count} in the last {elapsed:.0f} s, latest: {message.strip()}"

    def flush(self, force: bool = False) -> None:
        """Report the warnings left out so far: of every kind whose interval has passed, or
        of every kind when ``force`` (at exit)."""
        now = self._clock()
        lines = []
        with self._lock:
            for state in self._kinds.values():
                if state[1] and (force or now - state[0] >= self.interval_s):
                    state[1] -= 1  # _summary counts the latest message again
                    lines.append(self._summary(state, state[2], now))
        for line in lines:
            self._emit(line)


_limiter: WarningLimiter | None = None


def install(interval_s: float = DEFAULT_INTERVAL_S) -> WarningLimiter | None:
    """Make MuJoCo's warnings go through a process-wide :class:`WarningLimiter`.

    Idempotent. A warning handler the user installed (``mujoco.set_mju_user_warning``)
    is left in place, and None is returned.
    """
    global _limiter
    current = mujoco.get_mju_user_warning()
    if _limiter is not None and current is _limiter:
        return _limiter
    if current is not None:
        return None
    if _limiter is None:
        _limiter = WarningLimiter(interval_s)
        atexit.register(flush, True)
    mujoco.set_mju_user_warning(_limiter)
    return _limiter


def flush(force: bool = False) -> None:
    """:meth:`WarningLimiter.flush` of the installed limiter, if any."""
    if _limiter is not None:
        _limiter.flush(force)
