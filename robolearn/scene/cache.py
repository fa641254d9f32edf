"""State computed at most once per env step, however many terms read it.

A :func:`per_step` property stores its value in its owner's ``_step_cache`` dict on first
read. The dict holds while the state it was computed from holds: the owner clears it when
it changes the state itself (the Scene's step, reset and forward pass), and each read
checks the owner's ``_state_stamp()`` (torch's version counters of the state tensors, which
every in-place write through torch advances, a term's ``qpos[:, cols] = ...`` included),
so no writer has to say that it wrote. :func:`fixed` keeps what terms derive from what
never changes once the owner is built (a term's columns as a slice, its joints' limits).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import torch

T = TypeVar("T")


def per_step(fn: Callable[[Any], torch.Tensor]) -> property:
    """A read-only property computed at most once per state."""
    key = fn.__name__

    def get(self: Any) -> torch.Tensor:
        if torch.compiler.is_compiling():
            return fn(self)
        stamp = self._state_stamp()
        if stamp != self._cache_stamp:
            self._step_cache.clear()
            self._cache_stamp = stamp
        value = self._step_cache.get(key)
        if value is None:
            value = self._step_cache[key] = fn(self)
        return value

    get.__doc__ = fn.__doc__
    return property(get)


_FIXED: weakref.WeakKeyDictionary[Any, dict[Hashable, Any]] = weakref.WeakKeyDictionary()


def fixed(owner: Any, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, computed once per ``owner`` and ``key``, for values derived from what
    does not change once ``owner`` is built (its model's names, limits and nominal
    parameters). Terms call it every step: the first call may read the device (a column
    list turned into a slice), later ones are a dict lookup."""
    # On the owner itself where it can hold it: a global table's size would be part of
    # what compiled code checks (the fused step), and every new owner would recompile it.
    store = getattr(owner, "_fixed_values", None)
    if store is None:
        store = _FIXED.get(owner)
    if store is None:
        store = {}
        try:
            owner._fixed_values = store
        except AttributeError:  # no attributes of its own (slots, a C object)
            _FIXED[owner] = store
    try:
        return store[key]
    except KeyError:
        value = store[key] = make()
        return value


def names_key(patterns: Any) -> Hashable:
    """Name patterns (a regex, a list of them or a ``SceneEntityCfg``) as part of a
    :func:`fixed` key: a list is not hashable, its tuple is."""
    return tuple(patterns) if isinstance(patterns, list) else patterns
