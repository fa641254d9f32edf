"""A :class:`~robolearn.sim.config.SimCfg`'s physics options written over a model's own.

The same options sit in an MJCF's ``<option>`` (``spec.option``) and in a compiled model
(``model.opt``), under the same names: one function writes either, so that a scene (which
writes the spec before compiling, to check the timestep) and :func:`robolearn.sim.make_engine`
(which may be handed a compiled model) apply the settings alike.
"""

from __future__ import annotations

from typing import Any

import mujoco

from robolearn.errors import RobolearnError
from robolearn.sim.config import SimCfg

__all__ = ["apply_sim_options", "check_max_speed"]

_CONES = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}

_INTEGRATORS = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
}


def apply_sim_options(option: Any, sim: SimCfg) -> None:
    """Write ``sim``'s timestep, gravity and solver options, where set, over ``option``
    (an ``MjSpec.option`` or an ``MjModel.opt``); a bad value is a RobolearnError naming
    its ``sim.`` field, before anything is written for it."""
    if sim.physics_dt is not None:
        if sim.physics_dt <= 0:
            raise RobolearnError(f"sim.physics_dt must be > 0, got {sim.physics_dt}")
        option.timestep = sim.physics_dt
    check_max_speed(sim)
    if sim.gravity is not None:
        gravity = [float(g) for g in sim.gravity]
        if len(gravity) != 3:
            raise RobolearnError(f"sim.gravity must be 3 numbers (x, y, z), got {sim.gravity}")
        option.gravity = gravity
    apply_solver_options(option, sim)


def check_max_speed(sim: SimCfg) -> None:
    """``sim.max_speed`` is a bound an engine can compare speeds with."""
    if not sim.max_speed > 0:  # NaN fails too
        raise RobolearnError(
            f"sim.max_speed must be > 0 (m/s, rad/s; inf for none), got {sim.max_speed}"
        )


def apply_solver_options(option: Any, sim: SimCfg) -> None:
    """Write ``sim``'s integrator, friction cone and solver budget, where set, over
    ``option``."""
    if sim.integrator is not None:
        if sim.integrator not in _INTEGRATORS:
            raise RobolearnError(
                f"sim.integrator must be one of {', '.join(_INTEGRATORS)}, got {sim.integrator!r}"
            )
        option.integrator = int(_INTEGRATORS[sim.integrator])
    if sim.cone is not None:
        if sim.cone not in _CONES:
            raise RobolearnError(f"sim.cone must be one of {', '.join(_CONES)}, got {sim.cone!r}")
        option.cone = int(_CONES[sim.cone])
    if sim.impratio is not None:
        if not sim.impratio >= 1:  # NaN fails too
            raise RobolearnError(f"sim.impratio must be >= 1, got {sim.impratio}")
        option.impratio = float(sim.impratio)
    for name in ("iterations", "ls_iterations"):
        value = getattr(sim, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RobolearnError(f"sim.{name} must be a whole number >= 1, got {value!r}")
        setattr(option, name, value)
