"""Event terms that randomize the motors: PD gains and effort limits of every kind of
actuator, and the joints' armature, damping and friction loss.

A real robot's motors differ from their datasheet and from each other: gains are tuned per
unit, current limits vary with temperature and battery, rotor inertia and gearbox friction
are known only roughly. Each term draws per env around the nominal values (the model's for
MuJoCo's loops, the actuator config's for the explicit models of
:mod:`robolearn.actuators.drive`), so repeated draws never drift, and writes the masked envs
with ``torch.where`` (no wait for the device). A range that could give a value the field
cannot hold (a negative gain, limit or armature) is refused before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from robolearn.config import check_range
from robolearn.errors import RobolearnError
from robolearn.managers.base import EnvRows, as_env_mask
from robolearn.math import sample_uniform
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.cache import fixed, names_key

OPERATIONS = ("scale", "abs")
"""How a motor term's range applies: a factor on the nominal value, or the value itself."""


# ---- gains and effort limits -------------------------------------------------------------


@dataclass(frozen=True)
class _Selection:
    """The selected actuators, split by who computes their force: MuJoCo's loops (model
    fields, columns ``model``) and the explicit motors (the drive's, columns ``drive``)."""

    model: torch.Tensor | None
    drive: torch.Tensor | None


def _select_motors(env: TaskEnv, actuators, term: str, needs_limit: bool) -> _Selection:
    """Split ``actuators`` once per selection; refuse those the term cannot change: a
    motor MuJoCo does not run as a position loop (its gains are not in the model's fields),
    a learned net's gains (it has none), and for effort limits an actuator MuJoCo does not
    limit (``forcelimited`` is not per env)."""
    scene = env.scene
    ids = scene.index("actuator", actuators).tolist()
    loops = scene.takes_position_targets(ids)
    explicit = scene.explicit_actuators
    model, drive, bad = [], [], []
    limited = scene.model.actuator_forcelimited
    for a, loop in zip(ids, loops, strict=True):
        name = scene.actuator_names[a]
        if name in explicit:
            if not needs_limit and name in scene.drive.net_actuators:
                bad.append(name)
            else:
                drive.append(scene.drive.explicit_ids.index(a))
        elif loop and (not needs_limit or limited[a]):
            model.append(a)
        else:
            bad.append(name)
    if bad:
        need = (
            "MuJoCo position loops with a force limit (an actuator config's effort_limit)"
            if needs_limit
            else "PD loops (MuJoCo's, or scene.actuators' explicit motors; a learned net has "
            "no gains)"
        )
        raise RobolearnError(
            f"{term} changes {need}; not such: {', '.join(bad)} (select actuators=... to "
            "leave them out)"
        )

    def ids_of(cols: list[int]) -> torch.Tensor | None:
        return torch.tensor(cols, dtype=torch.long, device=env.device) if cols else None

    return _Selection(ids_of(model), ids_of(drive))


def _draw(nominal: torch.Tensor, bounds: tuple, operation: str, n: int, device) -> torch.Tensor:
    draw = sample_uniform(*bounds, (n, nominal.numel()), device)
    return nominal * draw if operation == "scale" else draw.to(nominal.dtype)


def _check_operation(operation: str, term: str) -> None:
    if operation not in OPERATIONS:
        raise RobolearnError(
            f"{term}: operation must be one of {', '.join(OPERATIONS)}, got {operation!r}"
        )


def randomize_actuator_gains(
    env: TaskEnv,
    env_mask: torch.Tensor,
    stiffness_range: tuple[float, float] | None = None,
    damping_range: tuple[float, float] | None = None,
    operation: str = "scale",
    actuators: str | Sequence[str] = ".*",
    stiffness_scale: tuple[float, float] | None = None,
    damping_scale: tuple[float, float] | None = None,
) -> None:
    """Per-env kp and kd of position loops: the nominal gain x uniform(range) (``scale``)
    or uniform(range) itself (``abs``), one draw per actuator per env; a range left None
    keeps that gain.

    MuJoCo's loops (``<position>`` actuators, :class:`~robolearn.scene.ImplicitPDCfg`)
    keep theirs in the model, ``kp (ctrl - q) - kv qdot``: gainprm[0] = kp, biasprm[1] =
    -kp, biasprm[2] = -kv. The explicit motors (:class:`~robolearn.scene.IdealPDCfg`,
    :class:`~robolearn.scene.DCMotorCfg`) keep theirs in the scene's drive. One term
    randomizes both kinds. ``stiffness_scale`` and ``damping_scale`` are the older names of
    the ranges with ``operation="scale"``.
    """
    term = "randomize_actuator_gains"
    stiffness_range = stiffness_range if stiffness_range is not None else stiffness_scale
    damping_range = damping_range if damping_range is not None else damping_scale
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    key = (term, names_key(actuators), operation, _key(stiffness_range), _key(damping_range))

    def make() -> _Selection:
        _check_operation(operation, term)
        for name, bounds in (("stiffness", stiffness_range), ("damping", damping_range)):
            if bounds is not None:
                check_range(bounds, f"{term}.{name}_range", what="gains")
        return _select_motors(env, actuators, term, needs_limit=False)

    motors = fixed(env.scene, key, make)
    n, scene = env.num_envs, env.scene
    if motors.model is not None:
        ids = motors.model
        gain = scene.engine.model_field("actuator_gainprm")
        bias = scene.engine.model_field("actuator_biasprm")
        if stiffness_range is not None:
            kp = _draw(scene.nominal("actuator_gainprm")[ids, 0], stiffness_range, operation,
                       n, env.device)  # fmt: skip
            rows.copy_columns(gain[:, :, 0], ids, kp)  # views: the engine's memory
            rows.copy_columns(bias[:, :, 1], ids, -kp)
        if damping_range is not None:
            kv = _draw(-scene.nominal("actuator_biasprm")[ids, 2], damping_range, operation,
                       n, env.device)  # fmt: skip
            rows.copy_columns(bias[:, :, 2], ids, -kv)
    if motors.drive is not None:
        drive, cols = scene.drive, motors.drive
        for name, bounds in (("stiffness", stiffness_range), ("damping", damping_range)):
            if bounds is not None:
                value = _draw(drive.nominal[name][cols], bounds, operation, n, env.device)
                rows.copy_columns(getattr(drive, name), cols, value)


def randomize_effort_limits(
    env: TaskEnv,
    env_mask: torch.Tensor,
    effort_range: tuple[float, float],
    operation: str = "scale",
    actuators: str | Sequence[str] = ".*",
) -> None:
    """Per-env effort (torque) limits: the nominal limit x uniform(range) (``scale``) or
    uniform(range) N m itself (``abs``), one draw per actuator per env.

    What a motor gives falls with temperature and battery voltage. MuJoCo's loops keep the
    limit in ``actuator_forcerange`` (they must have one: an actuator config's
    ``effort_limit``); the explicit motors in the drive (one without a limit has none to
    scale: use ``abs``).
    """
    term = "randomize_effort_limits"
    rows = EnvRows.of(env, as_env_mask(env, env_mask))

    def make() -> _Selection:
        _check_operation(operation, term)
        check_range(effort_range, f"{term}.effort_range", what="limits")
        return _select_motors(env, actuators, term, needs_limit=True)

    motors = fixed(env.scene, (term, names_key(actuators), operation, _key(effort_range)), make)
    n, scene = env.num_envs, env.scene
    if motors.model is not None:
        ids = motors.model
        nominal = scene.nominal("actuator_forcerange")[ids, 1]
        limit = _draw(nominal, effort_range, operation, n, env.device)
        field = scene.engine.model_field("actuator_forcerange")
        rows.copy_columns(field[:, :, 0], ids, -limit)
        rows.copy_columns(field[:, :, 1], ids, limit)
    if motors.drive is not None:
        drive, cols = scene.drive, motors.drive
        limit = _draw(drive.nominal["effort_limit"][cols], effort_range, operation, n, env.device)
        rows.copy_columns(drive.effort_limit, cols, limit)


def _key(bounds) -> tuple | None:
    return None if bounds is None else tuple(bounds)


# ---- joint parameters ----------------------------------------------------------------------

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
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
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
        rows.copy_columns(env.scene.engine.model_field(field), dof_ids, value.clamp(min=0.0))
    if armature_range is not None:
        # MuJoCo folds armature into the constant part of the mass matrix it derives once
        # (a write alone changed nothing in the physics, measured): derive it again
        env.scene.engine.set_const_where(rows.mask)


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
