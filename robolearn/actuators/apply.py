"""How the actuator configs become the model's actuators, before it compiles.

Gains, limits and armature are written into the model's spec, so every engine runs them;
the explicit models and delays run in :mod:`robolearn.actuators.drive` and
:mod:`robolearn.actuators.delay`. An actuator the MJCF already had on the joint keeps its
name and its place in the actuator order (the action terms select actuators by name); a
joint without one gets a new actuator named after the joint, after the MJCF's. Keyframes
hold their pose: the new actuators' commands are the key's joint positions. What drives
each joint comes back resolved, a :class:`DrivenJoint` per joint, for the drive, the
delays and the scene's lookups.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.actuators.config import (
    ActuatorNetCfg,
    DCMotorCfg,
    IdealPDCfg,
    ImplicitPDCfg,
    PerJoint,
)
from robolearn.config import step_range
from robolearn.errors import RobolearnError


def apply_actuators(
    spec: mujoco.MjSpec, actuators: Mapping[str, ImplicitPDCfg], where: str = "scene.actuators"
) -> list[DrivenJoint]:
    """Drive the joints each config selects as the config says (see the module docstring);
    what drives each, resolved. RobolearnError naming the config for a pattern that matches
    no joint, a joint claimed twice, a negative gain, limit or armature, a DC motor without
    its torque-speed line, or a delay that is not 0 <= min <= max (``where``: the configs'
    path in messages)."""
    if not actuators:
        return []
    joints = {j.name: j for j in spec.joints if j.type in _DRIVEN and j.name}
    claimed: dict[str, str] = {}
    plan: list[tuple[str, str, ImplicitPDCfg]] = []
    for name, cfg in actuators.items():
        at = f"{where}.{name}"
        for joint in _select(joints, cfg.joints, at):
            if joint in claimed:
                raise RobolearnError(
                    f"{at}: joint {joint!r} is driven by {where}.{claimed[joint]} "
                    "already; each joint takes one actuator config"
                )
            claimed[joint] = name
            plan.append((joint, at, cfg))
    # joint ranges in radians and qpos addresses: the compiled model's (an MJCF's ranges may
    # be in degrees, which only compiling converts)
    before = spec.compile()
    keys = [(key, np.array(key.ctrl, dtype=float)) for key in spec.keys]
    existing = _joint_actuators(spec)
    for joint, at, _ in plan:
        on_it = [a.name for a in spec.actuators if _drives(a, joint)]
        if len(on_it) > 1:
            raise RobolearnError(
                f"{at}: joint {joint!r} has {len(on_it)} actuators in the MJCF "
                f"({', '.join(on_it)}); an actuator config replaces one, and the others would "
                "drive it too: remove them from the MJCF or leave the joint out"
            )
    held: dict[int, str] = {}  # actuator index -> the joint whose position it holds
    driven = []
    for joint, at, cfg in plan:
        actuator = existing.get(joint)
        if actuator is None:
            actuator = spec.add_actuator(
                name=_free_name(spec, joint), target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT
            )
        driven.append(_drive(actuator, joints[joint], before.joint(joint), cfg, at))
        held[_index(spec, actuator)] = joint
    _hold_keyframes(spec, before, keys, held)
    return driven


_DRIVEN = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)


def _select(joints: Mapping[str, object], patterns: str | Sequence[str], where: str) -> list[str]:
    """The joints (in model order) whose names fully match any of ``patterns``."""
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    try:
        compiled = [re.compile(p) for p in patterns]
    except re.error as exc:
        raise RobolearnError(f"{where}.joints: invalid regex ({exc})") from None
    found = [j for j in joints if any(c.fullmatch(j) for c in compiled)]
    if not found:
        raise RobolearnError(
            f"{where}.joints {patterns} match no hinge or slide joint; joints: "
            f"{', '.join(joints) or 'none'}"
        )
    return found


def _value(value: PerJoint | None, joint: str, field: str, where: str) -> float | None:
    """A config field's value for ``joint``: the number, or the first matching pattern's."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        match = next((v for p, v in value.items() if re.fullmatch(p, joint)), None)
        if match is None:
            raise RobolearnError(
                f"{where}.{field}: no pattern of {sorted(value)} matches joint {joint!r}"
            )
        value = match
    number = float(value)
    if not number >= 0 or (math.isinf(number) and field != "effort_limit"):
        raise RobolearnError(
            f"{where}.{field} must be a finite number >= 0, got {value!r} for {joint!r}"
        )
    return number


@dataclass(frozen=True)
class DrivenJoint:
    """One joint as its actuator config drives it, every value resolved for the joint."""

    joint: str
    actuator: str
    """The model's actuator on it (the MJCF's, or the one added)."""
    explicit: bool
    """Whether robolearn computes its torque (:class:`IdealPDCfg`, :class:`DCMotorCfg`)
    rather than MuJoCo (:class:`ImplicitPDCfg`)."""
    stiffness: float
    damping: float
    effort_limit: float
    """inf where the config gives none."""
    saturation_effort: float = math.inf
    """A DC motor's stall torque; inf for a motor without a torque-speed line."""
    velocity_limit: float = math.inf
    """A DC motor's no-load speed, or an explicit PD loop's top speed; inf for none."""
    delay: tuple[int, int] = (0, 0)
    network: tuple[str, int, float, float, float] | None = None
    """A learned actuator's (file, history, pos_scale, vel_scale, torque_scale), or None."""
    config: str = ""
    """The actuator config that drives it, as messages name it (``scene.actuators.legs``)."""


def _drive(actuator, joint, compiled, cfg: ImplicitPDCfg, where: str) -> DrivenJoint:
    """Make ``actuator`` drive ``joint`` (its spec, and ``compiled``, the same joint in the
    compiled model) as ``cfg`` says: MuJoCo's position loop with the config's gains and
    limit, or a plain torque motor whose torque robolearn computes; and set its armature."""
    name = joint.name
    kp = _value(cfg.stiffness, name, "stiffness", where)
    kd = _value(cfg.damping, name, "damping", where)
    effort = _value(cfg.effort_limit, name, "effort_limit", where)
    armature = _value(cfg.armature, name, "armature", where)
    explicit = isinstance(cfg, IdealPDCfg)
    if explicit:
        actuator.set_to_motor()
    else:
        actuator.set_to_position(kp=kp, kv=kd)
    actuator.gear[0] = 1.0
    actuator.dyntype = mujoco.mjtDyn.mjDYN_NONE
    limited = effort is not None and math.isfinite(effort)
    actuator.forcelimited = _limited(limited)
    if limited:
        actuator.forcerange = [-effort, effort]
    # MuJoCo's position target is a joint position: the joint's range (radians, compiled)
    # bounds it, and with it the action space; an explicit motor's ctrl is its torque,
    # which the force range bounds
    low, high = (float(x) for x in compiled.range)
    ranged = not explicit and bool(compiled.limited[0]) and low < high
    actuator.ctrllimited = _limited(ranged)
    if ranged:
        actuator.ctrlrange = [low, high]
    if armature is not None:
        joint.armature = armature
    driven = DrivenJoint(
        name, actuator.name, explicit, kp, kd, math.inf if effort is None else effort,
        delay=step_range(cfg.delay, f"{where}.delay", "physics steps"), config=where,
    )  # fmt: skip
    speed = _value(cfg.velocity_limit, name, "velocity_limit", where) if explicit else None
    if isinstance(cfg, DCMotorCfg):
        saturation = _value(cfg.saturation_effort, name, "saturation_effort", where)
        if not saturation > 0 or speed is None or not speed > 0:
            raise RobolearnError(
                f"{where}: a DC motor needs saturation_effort > 0 and velocity_limit > 0 "
                f"(its stall torque and no-load speed), got {saturation} and {speed} for {name!r}"
            )
        driven = dataclasses.replace(driven, saturation_effort=saturation, velocity_limit=speed)
    elif isinstance(cfg, ActuatorNetCfg):
        driven = dataclasses.replace(driven, network=_network(cfg, where))
    if speed is not None and not isinstance(cfg, DCMotorCfg):
        if not speed > 0:
            raise RobolearnError(
                f"{where}.velocity_limit must be > 0 (rad/s), or None for no limit, got "
                f"{speed} for {name!r}"
            )
        driven = dataclasses.replace(driven, velocity_limit=speed)
    return driven


def _network(cfg: ActuatorNetCfg, where: str) -> tuple[str, int, float, float, float]:
    """A learned actuator's settings, checked (the file itself loads with the drive)."""
    if not isinstance(cfg.network_file, str) or not cfg.network_file:
        raise RobolearnError(
            f"{where}.network_file must name the TorchScript actuator net (a path), got "
            f"{cfg.network_file!r}"
        )
    history = cfg.history
    if not isinstance(history, int) or isinstance(history, bool) or history < 1:
        raise RobolearnError(f"{where}.history must be a whole number >= 1, got {history!r}")
    scales = (cfg.pos_scale, cfg.vel_scale, cfg.torque_scale)
    if not all(isinstance(x, int | float) and math.isfinite(x) for x in scales):
        raise RobolearnError(f"{where}: the net's scales must be finite numbers, got {scales}")
    return (cfg.network_file, history, *(float(x) for x in scales))


def _limited(on: bool) -> mujoco.mjtLimited:
    return mujoco.mjtLimited.mjLIMITED_TRUE if on else mujoco.mjtLimited.mjLIMITED_FALSE


def _drives(actuator, joint: str) -> bool:
    return actuator.trntype == mujoco.mjtTrn.mjTRN_JOINT and actuator.target == joint


def _joint_actuators(spec: mujoco.MjSpec) -> dict[str, object]:
    """The MJCF's actuator on each joint."""
    found: dict[str, object] = {}
    for actuator in spec.actuators:
        if actuator.trntype == mujoco.mjtTrn.mjTRN_JOINT:
            found.setdefault(actuator.target, actuator)
    return found


def _free_name(spec: mujoco.MjSpec, joint: str) -> str:
    """An actuator name for ``joint`` that no actuator has: the joint's own if free."""
    taken = {a.name for a in spec.actuators}
    name, n = joint, 1
    while name in taken:
        name, n = f"{joint}_{n}", n + 1
    return name


def _index(spec: mujoco.MjSpec, actuator) -> int:
    return next(i for i, a in enumerate(spec.actuators) if a.name == actuator.name)


def _hold_keyframes(
    spec: mujoco.MjSpec, model: mujoco.MjModel, keys: list, held: dict[int, str]
) -> None:
    """Each keyframe's controls after the change: a held actuator's is its joint's position
    in the key (``model``: the robot compiled before the change), every other actuator
    keeps its own (0 for a key that gave none)."""
    if not keys:
        return
    qpos_of = {j: int(model.joint(j).qposadr[0]) for j in held.values()}
    nu = len(spec.actuators)
    for key, old in keys:
        qpos = np.array(key.qpos, dtype=float)
        ctrl = np.zeros(nu)
        ctrl[: min(len(old), nu)] = old[:nu]
        for index, joint in held.items():
            ctrl[index] = qpos[qpos_of[joint]] if len(qpos) else model.qpos0[qpos_of[joint]]
        key.ctrl = ctrl
