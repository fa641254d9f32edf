"""Which terms a differentiable learner may backpropagate through.

A term is *differentiable* when its value is a torch function of the joint and root state
the scene derives from qpos and qvel (``scene.joint_pos``, ``scene.root_lin_vel_b``,
``scene.projected_gravity_b``...), of the policy's raw actions (the action manager's
``action`` and ``prev_action``, which the learner swaps for its own with their history),
of the commands, or of nothing that changes with the state, so that within
:meth:`~robolearn.scene.Scene.reading_state` its autograd graph reaches the physics and
the policy. Terms that read the engine's other fields (body poses, contact forces,
actuator forces, accelerations, sensors) or the action buffers hold values without a
gradient path, and the learner refuses them by name rather than train on a gradient that
silently leaves them out.

Mark a term of your own with :func:`differentiable` once it reads only such state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def differentiable(fn: F) -> F:
    """Mark a term function as differentiable in the state (see the module's docstring)."""
    fn.differentiable = True  # type: ignore[attr-defined]
    return fn


def is_differentiable(fn: Any) -> bool:
    """Whether a term function (or a class term's instance) is marked differentiable."""
    return bool(getattr(fn, "differentiable", False))
