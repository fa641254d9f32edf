"""Event terms: ``fn(env, env_mask, **params)``, changing state or model for the envs where
``env_mask`` ((N,) bool) is true.

Ranges are dicts over the axes ``x, y, z, roll, pitch, yaw`` (missing axes are 0) or
``(low, high)`` tuples; values are drawn uniformly per env. Randomized model parameters are
drawn around the model's own values every time, so they never drift.

Every term draws for all envs and writes the masked ones with ``torch.where``: the host never
waits for the GPU to learn which envs, or how many, are concerned (docs/gpu.md). A term of
your own may index with ``env_mask.nonzero()`` instead; it works, and costs that wait. On
the cpu engine, whose masks live in host memory, that costs nothing, and the reset and
interval terms here draw and write for the masked envs alone (a step resets a few envs of
thousands). Called by hand, these terms also take env indices, as Isaac Lab's ``env_ids``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import EnvRows, as_env_mask
from robolearn.math import (
    quat_from_euler_xyz,
    quat_mul,
    quat_rotate_inverse,
    sample_uniform,
    take_columns,
)
from robolearn.mdp.axes import axis_ranges, sample_axes
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.cache import fixed, names_key
from robolearn.scene.entities import SceneEntityCfg


def reset_root_state_uniform(
    env: TaskEnv,
    env_mask: torch.Tensor,
    pose_range: dict[str, tuple[float, float]],
    velocity_range: dict[str, tuple[float, float]] | None = None,
    entity: str | SceneEntityCfg = "robot",
) -> None:
    """Place an entity's floating root (the robot's by default) at its default pose plus a
    uniform offset, with a uniform velocity; on a terrain, the default pose is moved to the
    env's origin (its tile's center).

    ``pose_range`` offsets position (m) and orientation (rad, roll pitch yaw applied in the
    world after the default orientation); ``velocity_range`` gives linear (world, m/s) and
    angular (rad/s) velocity.
    """
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    scene = env.scene
    e = scene.engine
    q0, v0 = root_columns(env, entity)
    n = rows.n
    pose = sample_axes(pose_range, n, "reset_root_state_uniform.pose_range", env.device)
    default = scene.default_qpos[q0 : q0 + 7]
    # float32 + float64 adds in float64: the bits of converting first, one op fewer
    pos = pose[:, 0:3] + default[0:3]
    if scene.terrain is not None:
        pos = pos + rows.take(scene.env_origins).to(e.dtype)
    delta = quat_from_euler_xyz(pose[:, 3], pose[:, 4], pose[:, 5]).to(e.dtype)
    quat = quat_mul(delta, default[3:7].expand(n, 4))
    rows.put_columns(e.qpos, slice(q0, q0 + 3), pos)
    rows.put_columns(e.qpos, slice(q0 + 3, q0 + 7), quat)
    if velocity_range:
        vel = sample_axes(velocity_range, n, "reset_root_state_uniform.velocity_range", env.device)
        # MuJoCo's free joint: linear velocity in the world, angular in the body frame.
        ang_b = quat_rotate_inverse(quat, vel[:, 3:6].to(e.dtype))
        rows.put_columns(e.qvel, slice(v0, v0 + 3), vel[:, 0:3])
        rows.put_columns(e.qvel, slice(v0 + 3, v0 + 6), ang_b)


def root_columns(env: TaskEnv, entity: str | SceneEntityCfg) -> tuple[int, int]:
    """The first qpos and qvel columns of an entity's free joint (the robot's: its base),
    which every term that places or pushes an entity writes; an entity without a free
    joint is a RobolearnError."""
    name = entity.name if isinstance(entity, SceneEntityCfg) else entity
    scene = env.scene
    if name == "robot":
        scene.require_floating_base()
        return scene.root_qpos_adr, scene.root_dof_adr
    found = scene.entity(name)
    if found.root_body_id is None:
        raise RobolearnError(f"entity {name!r} has no free joint: there is no root to move")
    return found.root_qpos_adr, found.root_dof_adr


def reset_joints_by_scale(
    env: TaskEnv,
    env_mask: torch.Tensor,
    position_range: tuple[float, float] = (1.0, 1.0),
    velocity_range: tuple[float, float] = (0.0, 0.0),
    joints: str | Sequence[str] = ".*",
) -> None:
    """Joint positions = default x uniform(position_range), clamped to the joint limits;
    velocities uniform in ``velocity_range``."""
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    _reset_joints(env, rows, joints, position_range, velocity_range, scale=True)


def reset_joints_by_offset(
    env: TaskEnv,
    env_mask: torch.Tensor,
    position_range: tuple[float, float] = (0.0, 0.0),
    velocity_range: tuple[float, float] = (0.0, 0.0),
    joints: str | Sequence[str] = ".*",
) -> None:
    """Joint positions = default + uniform(position_range), clamped to the joint limits;
    velocities uniform in ``velocity_range``."""
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    _reset_joints(env, rows, joints, position_range, velocity_range, scale=False)


def _reset_limits(env: TaskEnv, joints: str | Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(k,) lower and (k,) upper position limits of ``joints``, found once per scene."""
    scene = env.scene

    def make() -> tuple[torch.Tensor, torch.Tensor]:
        limits = scene.joint_pos_limits[scene.index("joint", joints)]
        return limits[:, 0].contiguous(), limits[:, 1].contiguous()

    return fixed(scene, ("joint_limits", names_key(joints)), make)


def _reset_joints(
    env: TaskEnv,
    rows: EnvRows,
    joints: str | Sequence[str],
    position_range: tuple[float, float],
    velocity_range: tuple[float, float],
    scale: bool,
) -> None:
    scene = env.scene
    e = scene.engine
    cols = scene.joint_columns(joints)
    low, high = _reset_limits(env, joints)
    k = low.numel()
    default = rows.take(take_columns(scene.default_joint_pos, cols.joints))
    draw = sample_uniform(*position_range, (rows.n, k), env.device)
    pos = default * draw if scale else default + draw
    pos = torch.maximum(torch.minimum(pos, high), low)
    vel = sample_uniform(*velocity_range, (rows.n, k), env.device)
    rows.put_columns(e.qpos, cols.qpos, pos)
    rows.put_columns(e.qvel, cols.dofs, vel)


def push_by_setting_velocity(
    env: TaskEnv,
    env_mask: torch.Tensor,
    velocity_range: dict[str, tuple[float, float]],
    entity: str | SceneEntityCfg = "robot",
) -> None:
    """Push the base (or another entity's floating root): add a uniform velocity (linear
    world m/s; angular rad/s, root frame)."""
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    e, (_, v0) = env.scene.engine, root_columns(env, entity)
    dv = sample_axes(velocity_range, rows.n, "push_by_setting_velocity", env.device)
    cols = slice(v0, v0 + 6)
    rows.put_columns(e.qvel, cols, rows.take(e.qvel[:, cols]) + dv)


def randomize_friction(
    env: TaskEnv,
    env_mask: torch.Tensor,
    friction_range: tuple[float, float],
    geoms: str | Sequence[str] | None = None,
    bodies: str | Sequence[str] | None = None,
    feet: bool = False,
) -> None:
    """Sliding friction of ``geoms`` (regexes of the robot's geom names, the world's
    included; None: every one) = uniform(friction_range), one draw per env.

    ``bodies`` (regexes of body names), where given, selects the geoms instead: every
    geom of those bodies that can collide (a vendor's foot spheres often have no names).
    ``feet`` selects every geom that can collide of the robot's feet (its config's
    ``feet``, whatever the model names them), and is refused beside ``geoms`` or
    ``bodies``. MuJoCo combines the two geoms of a contact with the max, so randomizing
    the robot's geoms (not the floor's) sets the contact friction whenever it exceeds the
    floor's.
    """
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    if feet:
        ids = _feet_geoms(env, geoms, bodies)
    elif bodies is not None:
        ids = _colliding_geoms(env, bodies)
    else:
        ids = env.scene.index("geom", ".*" if geoms is None else geoms)
    field = env.scene.engine.model_field("geom_friction")
    draw = sample_uniform(*friction_range, (env.num_envs, 1), env.device)
    sliding = field[:, :, 0]  # a view: the write below lands in the engine's memory
    rows.copy_columns(sliding, ids, draw.expand(-1, ids.numel()))


def _colliding_geoms(env: TaskEnv, bodies: str | Sequence[str]) -> torch.Tensor:
    ids = _colliding_of(env, set(env.scene.index("body", bodies).tolist()))
    if not ids.numel():
        raise RobolearnError(f"bodies {bodies!r} have no geom that collides")
    return ids


def _colliding_of(env: TaskEnv, bodies: set[int]) -> torch.Tensor:
    """The geoms of the body ids ``bodies`` that can collide."""
    model = env.scene.model
    ids = [
        g
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) in bodies
        and (model.geom_contype[g] or model.geom_conaffinity[g])
    ]
    return torch.as_tensor(ids, device=env.device, dtype=torch.long)


def _feet_geoms(env: TaskEnv, geoms: object, bodies: object) -> torch.Tensor:
    """The colliding geoms of the robot's feet (the scene's foot bodies: a foot the config
    names as a geom is a body of its own by now, see :mod:`robolearn.scene.feet`)."""
    if geoms is not None or bodies is not None:
        given = "geoms" if geoms is not None else "bodies"
        raise RobolearnError(
            f"params.feet selects the robot's feet, and params.{given} other geoms: give "
            "one (feet=false to pick geoms or bodies)"
        )
    feet = env.scene.feet_body_ids
    if feet is None:
        raise RobolearnError(
            "params.feet: the robot config names no feet (scene.robot.feet: the foot bodies "
            "or geoms); name them, or give params.geoms or params.bodies"
        )
    ids = _colliding_of(env, set(feet.tolist()))
    if not ids.numel():
        names = ", ".join(env.scene.cfg.robot.feet)
        raise RobolearnError(f"params.feet: the robot's feet ({names}) have no geom that collides")
    return ids


def randomize_body_mass(
    env: TaskEnv,
    env_mask: torch.Tensor,
    bodies: str | Sequence[str],
    mass_range: tuple[float, float],
    operation: str = "add",
) -> None:
    """Mass of ``bodies`` = nominal + uniform(mass_range) kg (``add``) or nominal x it
    (``scale``); one draw per body per env. A range that could make a mass 0 or negative is
    refused before anything is written."""
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    key = ("body_mass", names_key(bodies), tuple(mass_range), operation)
    ids = fixed(env.scene, key, lambda: _mass_bodies(env, bodies, mass_range, operation))
    nominal = env.scene.nominal("body_mass")[ids]
    draw = sample_uniform(*mass_range, (env.num_envs, ids.numel()), env.device)
    mass = nominal + draw if operation == "add" else nominal * draw
    field = env.scene.engine.model_field("body_mass")
    rows.copy_columns(field, ids, mass)
    # MuJoCo derives the mass matrix of "simple" bodies (a free body with one geom), the
    # subtree masses and inverse weights from body_mass once; recompute them (for the
    # masked envs: on the Warp engines, for all, with no wait)
    env.scene.engine.set_const_where(rows.mask)


def _mass_bodies(env: TaskEnv, bodies, mass_range, operation: str) -> torch.Tensor:
    """The bodies' ids, once the range is checked to keep every mass > 0."""
    if operation not in ("add", "scale"):
        raise RobolearnError(
            f"randomize_body_mass: operation must be add or scale, got {operation!r}"
        )
    ids = env.scene.index("body", bodies)
    lightest = float(env.scene.model.body_mass[ids.cpu().numpy()].min())
    try:
        low, high = (float(b) for b in mass_range)
    except (TypeError, ValueError):
        low = high = math.nan
    floor = 0.0 if operation == "scale" else -lightest
    if not (math.isfinite(low) and math.isfinite(high) and floor < low <= high):
        what = "scales > 0" if operation == "scale" else f"offsets > {floor:g} kg"
        raise RobolearnError(
            f"randomize_body_mass.mass_range must be [low, high] with low <= high and {what} "
            f"(a body's mass stays > 0; the lightest selected is {lightest:g} kg), got "
            f"{mass_range!r}"
        )
    return ids


def randomize_body_com(
    env: TaskEnv,
    env_mask: torch.Tensor,
    bodies: str | Sequence[str],
    com_range: dict[str, tuple[float, float]],
) -> None:
    """Center of mass of ``bodies`` = the model's + a uniform offset in the body's frame (m,
    axes ``x, y, z``), one draw per body per env: a robot's real mass distribution (its
    battery, cables, payload) is never the CAD's."""
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    unknown = set(com_range) - {"x", "y", "z"}
    if unknown:
        raise RobolearnError(
            f"randomize_body_com.com_range: unknown axes {sorted(unknown)}; valid: x, y, z"
        )
    ids = env.scene.index("body", bodies)
    low, width = axis_ranges(com_range, "randomize_body_com.com_range", env.device)
    draw = torch.addcmul(low[:3], width[:3], torch.rand(env.num_envs, ids.numel(), 3,
                                                        device=env.device))  # fmt: skip
    ipos = env.scene.nominal("body_ipos")[ids] + draw
    rows.copy_columns(env.scene.engine.model_field("body_ipos"), ids, ipos)
    # the inertia about the joints and the subtree centers follow from it (mj_setConst)
    env.scene.engine.set_const_where(rows.mask)
