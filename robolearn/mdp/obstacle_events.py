"""Obstacles scattered on the ground around each env's robot at every reset.

Objects are made entities (:class:`~robolearn.scene.EntityCfg`) that each env places on
its own: a body welded to the world would stand at one place for every env, and on a
generated terrain each env has its own tile. Mocap objects (``mocap=True``) are the cheap
kind: placed, they stay, and MuJoCo computes no contacts between them and the ground.
Floating ones (``free=True``, heavy enough to stand as obstacles) are pushed and tipped,
at the price of their contacts with the ground in every substep (over a height field,
about as costly as the robot's own). They stand on the ground under them, read from the
terrain's height field where there is one, else the plane z = 0: a floating object from
the highest point under its corners (it settles onto the ground, not into it), a mocap
object from the lowest, sunk into a slope rather than jutting out over it (a foot caught
under an overhang that no real obstacle has trips the robot: from the highest point, boxes
2 cm high made the rough quadruped fall in 9% of episodes instead of 1%).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from robolearn.config import check_range
from robolearn.errors import RobolearnError
from robolearn.managers.base import EnvRows, as_env_mask
from robolearn.math import quat_from_yaw
from robolearn.mdp.events import root_columns
from robolearn.mdp.protocol import TaskEnv

_GAP = 0.005  # m between an object and the ground when placed; it settles in a few steps


def scatter_on_ground(
    env: TaskEnv,
    env_mask: torch.Tensor,
    entities: Sequence[str],
    radius: tuple[float, float] = (0.8, 3.0),
    around: str | None = "robot",
) -> None:
    """Place each of ``entities`` (made objects, mocap or floating) at a uniform point of
    the annulus ``radius`` (m) around the floating root of entity ``around`` (the robot's
    base, where its reset put it; None: the env's origin), at a uniform heading, at rest
    on the ground under it. Use it as a ``reset`` event after the robot's own reset, so
    that no object lands on the robot."""
    low, high = check_range(radius, "scatter_on_ground.radius", what="radii")
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    scene, e = env.scene, env.scene.engine
    if around is None:
        origins = rows.take(scene.env_origins)
    else:
        q0, _ = root_columns(env, around)
        origins = rows.take(e.qpos[:, q0 : q0 + 3]).float()
    terrain = scene.terrain
    n, dev = rows.n, env.device
    for name in entities:
        half = _half_extents(env, name)
        # uniform over the annulus's area, not its radius
        r = torch.sqrt(low**2 + (high**2 - low**2) * torch.rand(n, device=dev))
        angle = torch.rand(n, device=dev) * (2 * math.pi)
        yaw = torch.rand(n, device=dev) * (2 * math.pi)
        xy = origins[:, :2] + r.unsqueeze(-1) * torch.stack((angle.cos(), angle.sin()), -1)
        mocap = scene.entity(name).mocap_id
        ground = (
            _ground_under(terrain, xy, yaw, half[:2], lowest=mocap is not None)
            if terrain is not None
            else torch.zeros(n, device=dev)
        )
        z = ground + (half[2] + (0.0 if mocap is not None else _GAP))
        pos = torch.cat((xy, z.unsqueeze(-1)), -1)
        quat = quat_from_yaw(yaw)
        if mocap is not None:
            rows.put(e.mocap_pos[:, mocap], pos.to(e.dtype))
            rows.put(e.mocap_quat[:, mocap], quat.to(e.dtype))
            continue
        q0, v0 = root_columns(env, name)
        rows.put_columns(e.qpos, slice(q0, q0 + 3), pos.to(e.dtype))
        rows.put_columns(e.qpos, slice(q0 + 3, q0 + 7), quat.to(e.dtype))
        rows.put_columns(e.qvel, slice(v0, v0 + 6), torch.zeros(n, 6, device=dev, dtype=e.dtype))


def _half_extents(env: TaskEnv, name: str) -> tuple[float, float, float]:
    """The half-extents (x, y, z) of a made object's default shape."""
    entities = env.scene.cfg.entities
    cfg = entities.get(name)
    if cfg is None or cfg.model is not None or not (cfg.free or cfg.mocap):
        made = [n for n, c in entities.items() if c.model is None and (c.free or c.mocap)]
        raise RobolearnError(
            f"scatter_on_ground: {name!r} is not a mocap or floating made object of "
            f"scene.entities; such objects: {', '.join(made) or 'none'}"
        )
    x, y, z = cfg.box
    shape = cfg.shapes[0]
    if shape == "sphere":
        return (x, x, x)
    if shape == "cylinder":
        return (x, x, z)
    return (x, y, z)


def _ground_under(
    terrain, xy: torch.Tensor, yaw: torch.Tensor, half: tuple, lowest: bool
) -> torch.Tensor:
    """The highest (or ``lowest``) ground height under the centre, the four corners and
    the edges' midpoints of a footprint of half-sizes ``half`` at ``xy`` turned by
    ``yaw``."""
    hx, hy = half
    c, s = yaw.cos(), yaw.sin()
    heights = []
    # Python offsets, not a tensor of them: no host-to-device copy in the step
    for ox, oy in ((0.0, 0.0), (hx, hy), (hx, -hy), (-hx, hy), (-hx, -hy),
                   (hx, 0.0), (-hx, 0.0), (0.0, hy), (0.0, -hy)):  # fmt: skip
        px = xy[:, 0] + c * ox - s * oy
        py = xy[:, 1] + s * ox + c * oy
        heights.append(terrain.height_map.height_at(torch.stack((px, py), -1)))
    stacked = torch.stack(heights, -1)
    return stacked.amin(dim=1) if lowest else stacked.amax(dim=1)
