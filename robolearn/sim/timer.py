"""Time spent inside an engine, measured by the engine itself when asked.

>>> with engine.timed() as timer:                      # doctest: +SKIP
...     env.step(actions)
>>> timer.seconds["step"], timer.total("step", "reset", "forward_envs")   # doctest: +SKIP

An engine whose ``timer`` is None (the default) measures nothing; the cost of a call is then
one attribute test.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

#: The engine calls a timer measures, by the name of the public method.
TIMED_CALLS: tuple[str, ...] = (
    "step",
    "forward",
    "forward_envs",
    "forward_where",
    "reset",
    "reset_where",
    "set_const_where",
    "diverged",
)

F = TypeVar("F", bound=Callable[..., Any])


class EngineTimer:
    """Wall-clock seconds an engine spent in each of its calls (see :data:`TIMED_CALLS`).

    On ``cuda`` a call returns once its work is queued on the GPU: the seconds are host
    time unless the caller synchronizes inside the measured calls' span.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(TIMED_CALLS, 0.0)
        """Seconds per call name, summed since the timer was made or cleared."""
        self.calls: dict[str, int] = dict.fromkeys(TIMED_CALLS, 0)
        """How many times each call ran."""

    def add(self, call: str, seconds: float) -> None:
        """Count one ``call`` that took ``seconds``."""
        self.seconds[call] += seconds
        self.calls[call] += 1

    def total(self, *calls: str) -> float:
        """Seconds spent in the named calls together (in all of them when none is named)."""
        return sum(self.seconds[c] for c in calls or TIMED_CALLS)

    def clear(self) -> None:
        """Start counting from zero."""
        for call in TIMED_CALLS:
            self.seconds[call], self.calls[call] = 0.0, 0


def timed_call(method: F) -> F:
    """Make an engine method add its duration to ``self.timer`` when one is set.

    Only the outermost public call is measured: the engines call each other's private
    forms (``_forward_envs``, ...) inside, so no second is counted twice.
    """
    name = method.__name__

    @functools.wraps(method)
    def call(self, *args: Any, **kwargs: Any) -> Any:
        timer = self.timer
        if timer is None:
            return method(self, *args, **kwargs)
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            timer.add(name, time.perf_counter() - start)

    return call  # type: ignore[return-value]
