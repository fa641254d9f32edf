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
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.cache import fixed, names_key
from robolearn.scene.entities import SceneEntityCfg

AXES = ("x", "y", "z", "roll", "pitch", "yaw")


_RANGES: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def _axis_ranges(
    ranges: dict[str, tuple[float, float]], where: str, device
) -> tuple[torch.Tensor, torch.Tensor]:
    """(6,) lows and (6,) widths of the ranges on the device, made once per distinct ranges
    and device (a tensor made from Python numbers at every call is a copy the GPU path
    would wait for; the widths once, not a subtraction per draw)."""
    key = (tuple((a, tuple(r)) for a, r in sorted(ranges.items())), str(device))
    cached = _RANGES.get(key)
    if cached is None:
        unknown = set(ranges) - set(AXES)
        if unknown:
            raise RobolearnError(
                f"{where}: unknown axes {sorted(unknown)}; valid: {', '.join(AXES)}"
            )
        rows = torch.tensor(
            [ranges.get(a, (0.0, 0.0)) for a in AXES], dtype=torch.float32, device=device
        )
        cached = _RANGES[key] = (rows[:, 0].clone(), rows[:, 1] - rows[:, 0])
    return cached


def _sample_axes(ranges: dict, n: int, where: str, device) -> torch.Tensor:
    low, width = _axis_ranges(ranges, where, device)
    return torch.addcmul(low, width, torch.rand(n, 6, device=device))


def _write(rows: EnvRows, field: torch.Tensor, cols, value: torch.Tensor) -> None:
    """``field[:, cols] = value`` in the selected rows, ``value`` having ``rows.n`` rows
    (``cols`` a slice or an index tensor)."""
    if isinstance(cols, slice):
        rows.put(field[:, cols], value)  # a view: the write lands in the engine's memory
    elif rows.ids is None:
        _write_rows(field, cols, rows.mask, value)
    else:
        field[rows.ids.unsqueeze(-1), cols] = value.to(field.dtype)


def _write_rows(field: torch.Tensor, cols, env_mask: torch.Tensor, value: torch.Tensor) -> None:
    """``field[:, cols] = value`` in the rows where ``env_mask`` is true (value has a row
    for every env; ``cols`` an index tensor)."""
    old = field[:, cols]
    mask = env_mask.view(-1, *([1] * (old.dim() - 1)))
    field[:, cols] = torch.where(mask, value.to(field.dtype), old)


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
    q0, v0 = _root_columns(env, entity)
    n = rows.n
    pose = _sample_axes(pose_range, n, "reset_root_state_uniform.pose_range", env.device)
    default = scene.default_qpos[q0 : q0 + 7]
    # float32 + float64 adds in float64: the bits of converting first, one op fewer
    pos = pose[:, 0:3] + default[0:3]
    if scene.terrain is not None:
        pos = pos + rows.take(scene.env_origins).to(e.dtype)
    delta = quat_from_euler_xyz(pose[:, 3], pose[:, 4], pose[:, 5]).to(e.dtype)
    quat = quat_mul(delta, default[3:7].expand(n, 4))
    _write(rows, e.qpos, slice(q0, q0 + 3), pos)
    _write(rows, e.qpos, slice(q0 + 3, q0 + 7), quat)
    if velocity_range:
        vel = _sample_axes(velocity_range, n, "reset_root_state_uniform.velocity_range", env.device)
        # MuJoCo's free joint: linear velocity in the world, angular in the body frame.
        ang_b = quat_rotate_inverse(quat, vel[:, 3:6].to(e.dtype))
        _write(rows, e.qvel, slice(v0, v0 + 3), vel[:, 0:3])
        _write(rows, e.qvel, slice(v0 + 3, v0 + 6), ang_b)


def _root_columns(env: TaskEnv, entity: str | SceneEntityCfg) -> tuple[int, int]:
    """The first qpos and qvel columns of an entity's free joint (the robot's: its base)."""
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
    _write(rows, e.qpos, cols.qpos, pos)
    _write(rows, e.qvel, cols.dofs, vel)


def push_by_setting_velocity(
    env: TaskEnv,
    env_mask: torch.Tensor,
    velocity_range: dict[str, tuple[float, float]],
    entity: str | SceneEntityCfg = "robot",
) -> None:
    """Push the base (or another entity's floating root): add a uniform velocity (linear
    world m/s; angular rad/s, root frame)."""
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    e, (_, v0) = env.scene.engine, _root_columns(env, entity)
    dv = _sample_axes(velocity_range, rows.n, "push_by_setting_velocity", env.device)
    cols = slice(v0, v0 + 6)
    _write(rows, e.qvel, cols, rows.take(e.qvel[:, cols]) + dv)


def randomize_friction(
    env: TaskEnv,
    env_mask: torch.Tensor,
    friction_range: tuple[float, float],
    geoms: str | Sequence[str] = ".*",
) -> None:
    """Sliding friction of ``geoms`` = uniform(friction_range), one draw per env.

    MuJoCo combines the two geoms of a contact with the max, so randomizing the robot's
    geoms (not the floor's) sets the contact friction whenever it exceeds the floor's.
    """
    env_mask = as_env_mask(env, env_mask)
    ids = env.scene.index("geom", geoms)
    field = env.scene.engine.model_field("geom_friction")
    draw = sample_uniform(*friction_range, (env.num_envs, 1), env.device)
    sliding = field[:, :, 0]  # a view: the write below lands in the engine's memory
    _write_rows(sliding, ids, env_mask, draw.expand(-1, ids.numel()))


def randomize_body_mass(
    env: TaskEnv,
    env_mask: torch.Tensor,
    bodies: str | Sequence[str],
    mass_range: tuple[float, float],
    operation: str = "add",
) -> None:
    """Mass of ``bodies`` = nominal + uniform(mass_range) kg (``add``) or nominal x it
    (``scale``); one draw per body per env."""
    env_mask = as_env_mask(env, env_mask)
    if operation not in ("add", "scale"):
        raise RobolearnError(
            f"randomize_body_mass: operation must be add or scale, got {operation!r}"
        )
    ids = env.scene.index("body", bodies)
    nominal = env.scene.nominal("body_mass")[ids]
    draw = sample_uniform(*mass_range, (env.num_envs, ids.numel()), env.device)
    mass = nominal + draw if operation == "add" else nominal * draw
    field = env.scene.engine.model_field("body_mass")
    _write_rows(field, ids, env_mask, mass.clamp(min=1e-3))
    # MuJoCo derives the mass matrix of "simple" bodies (a free body with one geom), the
    # subtree masses and inverse weights from body_mass once; recompute them (for the
    # masked envs: on the Warp engines, for all, with no wait)
    env.scene.engine.set_const_where(env_mask)


JOINT_FIELDS = {
    "armature": "dof_armature",
    "damping": "dof_damping",
    "friction": "dof_frictionloss",
}
"""The joint parameters :func:`randomize_joint_parameters` draws, and their model fields."""


def randomize_joint_parameters(
    env: TaskEnv,
    env_mask: torch.Tensor,
    joints: str | Sequence[str] = ".*",
    armature_range: tuple[float, float] | None = None,
    damping_range: tuple[float, float] | None = None,
    friction_range: tuple[float, float] | None = None,
    operation: str = "scale",
) -> None:
    """Per-env armature (reflected rotor inertia), viscous damping and dry friction loss of
    ``joints``: the model's value x uniform(range) (``scale``) or + it (``add``), one draw
    per joint per env; a range left None leaves that parameter as it is.

    The motor-side parameters a real robot's joints differ in from unit to unit and with
    wear, and which no robot's MJCF knows exactly. Every value drawn must be >= 0, which the
    ranges are checked for before anything is written.
    """
    env_mask = as_env_mask(env, env_mask)
    ranges = {"armature": armature_range, "damping": damping_range, "friction": friction_range}
    dof_ids = fixed(
        env.scene,
        ("joint_parameters", names_key(joints), operation, tuple(map(_key, ranges.values()))),
        lambda: _joint_parameter_dofs(env, joints, ranges, operation),
    )
    for name, bounds in ranges.items():
        if bounds is None:
            continue
        field = JOINT_FIELDS[name]
        nominal = env.scene.nominal(field)[dof_ids]
        draw = sample_uniform(*bounds, (env.num_envs, dof_ids.numel()), env.device)
        value = nominal * draw if operation == "scale" else nominal + draw
        _write_rows(env.scene.engine.model_field(field), dof_ids, env_mask, value.clamp(min=0.0))
    if armature_range is not None:
        # MuJoCo folds armature into the constant part of the mass matrix it derives once
        # (a write alone changed nothing in the physics, measured): derive it again
        env.scene.engine.set_const_where(env_mask)


def _key(bounds) -> tuple | None:
    return None if bounds is None else tuple(bounds)


def _joint_parameter_dofs(env: TaskEnv, joints, ranges: dict, operation: str) -> torch.Tensor:
    """The dofs of ``joints`` (on the device), once the ranges are checked: every value they
    can draw is >= 0 (found once per selection, from the compiled model on the host)."""
    if operation not in ("add", "scale"):
        raise RobolearnError(
            f"randomize_joint_parameters: operation must be add or scale, got {operation!r}"
        )
    scene = env.scene
    dofs = scene.joint_columns(joints).dofs
    ids = list(range(dofs.start, dofs.stop)) if isinstance(dofs, slice) else dofs.cpu().tolist()
    for name, bounds in ranges.items():
        if bounds is None:
            continue
        low, high = (float(b) for b in bounds)
        nominal = getattr(scene.model, JOINT_FIELDS[name])[ids]
        floor = 0.0 if operation == "scale" else -float(nominal.min())
        if not (math.isfinite(low) and math.isfinite(high) and floor <= low <= high):
            what = "scales >= 0" if operation == "scale" else f"offsets >= {floor:g}"
            raise RobolearnError(
                f"randomize_joint_parameters.{name}_range must be [low, high] with low <= "
                f"high and {what} (a joint's {name} is never negative), got {list(bounds)}"
            )
    return torch.tensor(ids, dtype=torch.long, device=env.device)


def _mujoco_loops(env: TaskEnv, ids: torch.Tensor) -> bool:
    """Check, once per selection, that every selected actuator is MuJoCo's position loop:
    the gains of a motor, or of a loop robolearn computes (an explicit motor model), are
    not in those fields, and scaling them there would add a position feedback MuJoCo then
    applies on top."""
    scene = env.scene
    names = [scene.actuator_names[a] for a in ids.tolist()]
    loops = scene.takes_position_targets(ids.tolist())
    bad = [
        name
        for name, loop in zip(names, loops, strict=True)
        if not loop or name in scene.explicit_actuators
    ]
    if bad:
        raise RobolearnError(
            f"randomize_actuator_gains scales MuJoCo position loops' kp and kv; not such: "
            f"{', '.join(bad)} (select actuators=... to leave them out)"
        )
    return True


def randomize_actuator_gains(
    env: TaskEnv,
    env_mask: torch.Tensor,
    stiffness_scale: tuple[float, float],
    damping_scale: tuple[float, float],
    actuators: str | Sequence[str] = ".*",
) -> None:
    """Scale the kp and kv of ``<position>`` actuators by uniform draws, per actuator per env.

    A position actuator's force is kp (ctrl - q) - kv qdot: gainprm[0] = kp,
    biasprm[1] = -kp, biasprm[2] = -kv.
    """
    env_mask = as_env_mask(env, env_mask)
    ids = env.scene.index("actuator", actuators)
    fixed(env.scene, ("gain_loops", names_key(actuators)), lambda: _mujoco_loops(env, ids))
    n, k = env.num_envs, ids.numel()
    gain, bias = (
        env.scene.engine.model_field("actuator_gainprm"),
        env.scene.engine.model_field("actuator_biasprm"),
    )
    kp = env.scene.nominal("actuator_gainprm")[ids, 0] * sample_uniform(
        *stiffness_scale, (n, k), env.device
    )
    kv = -env.scene.nominal("actuator_biasprm")[ids, 2] * sample_uniform(
        *damping_scale, (n, k), env.device
    )
    gain_kp, bias_kp, bias_kv = gain[:, :, 0], bias[:, :, 1], bias[:, :, 2]  # views
    _write_rows(gain_kp, ids, env_mask, kp)
    _write_rows(bias_kp, ids, env_mask, -kp)
    _write_rows(bias_kv, ids, env_mask, -kv)
