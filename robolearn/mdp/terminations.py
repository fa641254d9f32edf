"""Termination terms: ``fn(env, **params) -> (num_envs,)`` bool."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from robolearn.mdp.protocol import TaskEnv


def time_out(env: TaskEnv) -> torch.Tensor:
    """The episode reached its length (use with ``time_out=True``)."""
    return env.episode_length_buf >= env.max_episode_length


def base_height_below(env: TaskEnv, minimum: float) -> torch.Tensor:
    """The base dropped below ``minimum`` metres above the ground under it."""
    return env.scene.root_height < minimum


def bad_orientation(env: TaskEnv, limit_angle: float) -> torch.Tensor:
    """The base tilted more than ``limit_angle`` radians from upright."""
    cos_tilt = -env.scene.projected_gravity_b[:, 2]
    return cos_tilt < math.cos(limit_angle)


def illegal_contact(
    env: TaskEnv, bodies: str | Sequence[str], threshold: float = 1.0
) -> torch.Tensor:
    """One of ``bodies`` touched something with more than ``threshold`` newtons."""
    ids = env.scene.index("body", bodies)
    return (env.scene.contact_force_of(ids).norm(dim=-1) > threshold).any(-1)


def joint_pos_out_of_bounds(
    env: TaskEnv, joints: str | Sequence[str], bounds: tuple[float, float]
) -> torch.Tensor:
    """A joint in ``joints`` left ``bounds`` (absolute position, rad or m)."""
    pos = env.scene.joint_pos[:, env.scene.index("joint", joints)]
    return ((pos < bounds[0]) | (pos > bounds[1])).any(-1)


def terrain_out_of_bounds(env: TaskEnv, distance: float = 3.0) -> torch.Tensor:
    """The base came within ``distance`` metres of the terrain's edge (walking off the
    height field would drop it into the void)."""
    x0, x1, y0, y1 = env.scene.require_terrain().height_map.bounds
    pos = env.scene.root_pos_w
    x, y = pos[:, 0], pos[:, 1]
    return (x < x0 + distance) | (x > x1 - distance) | (y < y0 + distance) | (y > y1 - distance)
