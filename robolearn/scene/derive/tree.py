"""The kinematic tree's paths, as the derivation walks them."""

from __future__ import annotations

import mujoco


def chain(model: mujoco.MjModel, body: int) -> list[int]:
    """The bodies from the top of ``body``'s tree (a child of the world) down to ``body``."""
    bodies = []
    while body > 0:
        bodies.append(body)
        body = int(model.body_parentid[body])
    return bodies[::-1]


def is_below(model: mujoco.MjModel, body: int, ancestor: int) -> bool:
    """``body`` is ``ancestor`` or hangs under it."""
    return ancestor in chain(model, body)
