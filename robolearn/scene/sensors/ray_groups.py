"""Geom groups that ray casters skip: a robot's own bodies, and the terrain where it is
read from its height field instead.

A height scan must look past the robot that carries it (its legs stand under the grid).
Casting each ray again past every hit on the robot costs a second cast, and MuJoCo tests
each ray against each of the robot's geoms first. Instead, the robot's moving geoms are
put in a geom group of their own in the engine's simulated model
(:meth:`robolearn.sim.engine.Engine.set_ray_group`) and its ray casters leave that group
out: MuJoCo skips them before any test, in one cast. Groups change nothing in the physics
and the host model that renderers draw keeps its own, so nothing is hidden from view.

Only the groups no geom of the model uses are taken, highest first (MuJoCo's viewers
show groups 0-2, models put collision geoms in 3); where none is left, or where some ray
caster picks its own ``geom_groups`` (those name the model's groups, which a move would
break), nothing is moved and the casters cast again past their robot's bodies instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import mujoco

from robolearn.sim import Engine


class RayGroups:
    """The scene's spare geom groups, each given once to a set of geoms rays may skip."""

    def __init__(self, model: mujoco.MjModel, engine: Engine, sensor_cfgs: Iterable) -> None:
        used = {int(g) for g in model.geom_group}
        named = any(getattr(cfg, "geom_groups", None) is not None for cfg in sensor_cfgs)
        self._free = (
            [] if named else [g for g in range(mujoco.mjNGROUP - 1, -1, -1) if g not in used]
        )
        self._engine = engine
        self._given: dict[str, int | None] = {}

    def group(self, key: str, geom_ids: Sequence[int]) -> int | None:
        """The group that holds ``geom_ids`` (named ``key``: the same key gives the same
        group), moved there on the engine the first time; None where no group is spare."""
        if key not in self._given:
            group = self._free.pop(0) if self._free and geom_ids else None
            if group is not None:
                self._engine.set_ray_group(geom_ids, group)
            self._given[key] = group
        return self._given[key]

    def all_but(self, *groups: int | None) -> tuple[int, ...] | None:
        """Every geom group except ``groups`` (None entries ignored); None when that is
        every group (MuJoCo's own "all")."""
        skipped = {g for g in groups if g is not None}
        if not skipped:
            return None
        return tuple(g for g in range(mujoco.mjNGROUP) if g not in skipped)
