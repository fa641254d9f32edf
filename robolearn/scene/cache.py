"""State computed at most once per env step, however many terms read it.

A :func:`per_step` property stores its value in its owner's ``_step_cache`` dict on first
read; the owner clears the dict whenever the state changes (``Scene.invalidate``: after the
engine steps, around resets and events).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def per_step(fn: Callable[[Any], torch.Tensor]) -> property:
    """A read-only property computed at most once between two invalidations."""
    key = fn.__name__

    def get(self: Any) -> torch.Tensor:
        value = self._step_cache.get(key)
        if value is None:
            value = self._step_cache[key] = fn(self)
        return value

    get.__doc__ = fn.__doc__
    return property(get)
