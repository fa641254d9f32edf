"""Actuators from a robot config, not from its MJCF: which joints a motor drives, how, and
with what limits, delay and rotor inertia.

A robot's MJCF says how its joints are driven, and vendors and model collections say it
differently: Unitree's own models drive every joint with a torque ``<motor>`` (the PD loop
runs on the robot's motor drivers), MuJoCo Menagerie's use ``<position>`` actuators. An
entry of ``SceneCfg.actuators`` drives the joints it selects (regexes over the robot's
joint names) its own way, whatever the MJCF had there:

* :class:`ImplicitPDCfg`: MuJoCo's position loop, ``clip(kp (q* - q) - kd qdot, +-effort)``
  with MuJoCo integrating the damping implicitly: the fastest and most stable;
* :class:`IdealPDCfg`: the same law computed by robolearn at every physics step and applied
  as a motor torque, as a robot's motor driver runs it;
* :class:`DCMotorCfg`: that loop limited by the motor's torque-speed line;
* any of them with ``delay``: each env's targets arrive a lag of physics steps late.

Gains, limits and armature are written into the model before it compiles, so every engine
runs them; the explicit models and delays run in :mod:`robolearn.scene.drive`. An actuator
the MJCF already had on the joint keeps its name and its place in the actuator order (the
action terms select actuators by name); a joint without one gets a new actuator named
after the joint, after the MJCF's. Keyframes hold their pose: the new actuators' commands
are the key's joint positions.

Gains come most often from the motor's facts (:func:`reflected_inertia`,
:func:`pd_gains`): the reflected rotor inertia is the joint's armature, and the gains give
the joint a chosen natural frequency and damping ratio over that inertia. docs/actuators.md
says when to use which.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.config import step_range
from robolearn.errors import RobolearnError

PerJoint = float | Mapping[str, float]
"""A value for every selected joint, or regexes over joint names mapped to values (the
first pattern that matches a joint gives its value)."""


@dataclass
class ImplicitPDCfg:
    """Position control by MuJoCo's own actuator: kp and kd in joint space, a torque limit,
    and the joint's armature."""

    joints: str | tuple[str, ...] = ".*"
    """Regexes over the robot's hinge and slide joint names (a full match)."""
    stiffness: PerJoint = 0.0
    """kp, N m/rad (N/m for a slide joint)."""
    damping: PerJoint = 0.0
    """kd, N m s/rad."""
    effort_limit: PerJoint | None = None
    """The largest torque (N m) the motor gives; None: unlimited."""
    armature: PerJoint | None = None
    """Reflected rotor inertia added to the joint (kg m^2, :func:`reflected_inertia`);
    None keeps the MJCF's."""
    delay: tuple[int, int] = (0, 0)
    """Actuation delay, (min, max) physics steps: each env's targets reach its motors that
    many physics steps late, a lag drawn per env at every reset (communication and driver
    latency); (0, 0) for none."""


@dataclass
class IdealPDCfg(ImplicitPDCfg):
    """An explicit PD loop, evaluated in torch at every physics step and applied as a
    torque: ``clip(kp (q* - q) - kd qdot, -effort_limit, effort_limit)``.

    The same law as :class:`ImplicitPDCfg`, but integrated explicitly, as the motor driver
    of a real robot runs it (stiff gains need a smaller physics step than the implicit
    loop), and the base of the motor models below.

    It alone can limit speed: MuJoCo's implicit loop has no joint speed limit, which is why
    :class:`ImplicitPDCfg` has no ``velocity_limit``."""

    velocity_limit: PerJoint | None = None
    """The joint's top speed (rad/s): beyond it the drive gives no torque that would turn it
    faster (a motor driver's speed governor); None: no limit."""


@dataclass
class DCMotorCfg(IdealPDCfg):
    """The explicit PD loop limited by a DC motor's torque-speed line: at joint speed v the
    torque lies within ``saturation_effort x (-1 - v / velocity_limit, 1 - v /
    velocity_limit)``, and within ``effort_limit`` (the drive's current limit).

    A motor gives its stall torque at rest and none at its no-load speed: the limit that
    makes a policy trained with an ideal PD loop too fast or too strong on the real robot.
    """

    saturation_effort: PerJoint = 0.0
    """The motor's stall torque at the joint (N m)."""
    velocity_limit: PerJoint | None = None
    """The joint's no-load speed (rad/s), > 0: where the line reaches zero torque (here it
    replaces the speed governor of :class:`IdealPDCfg`)."""


@dataclass
class ActuatorNetCfg(IdealPDCfg):
    """A learned actuator: a net fitted to a log of the real drive gives each joint's torque
    from its last ``history`` physics steps' position errors and velocities (the ANYmal
    actuator-net recipe; :mod:`robolearn.scene.actuator_net` states the inputs), clipped
    to ``effort_limit`` and the top speed; ``stiffness`` and ``damping`` are unused.

    ``scripts/fit_actuator_net.py`` fits one from logged (command, position, velocity,
    torque) data and writes the TorchScript file named here."""

    network_file: str = ""
    """The TorchScript net (``torch.jit.save``), a path."""
    history: int = 3
    """Physics steps of errors and velocities the net reads; the file records its own,
    which must agree."""
    pos_scale: float = 1.0
    """Multiplies the position errors going in (1 for a net fitted by robolearn)."""
    vel_scale: float = 1.0
    """Multiplies the velocities going in."""
    torque_scale: float = 1.0
    """Multiplies the torque coming out."""


def apply_actuators(
    spec: mujoco.MjSpec, actuators: Mapping[str, ImplicitPDCfg]
) -> list[DrivenJoint]:
    """Drive the joints each config selects as the config says (see the module docstring);
    what drives each, resolved. RobolearnError naming the config for a pattern that matches
    no joint, a joint claimed twice, a negative gain, limit or armature, a DC motor without
    its torque-speed line, or a delay that is not 0 <= min <= max."""
    if not actuators:
        return []
    joints = {j.name: j for j in spec.joints if j.type in _DRIVEN and j.name}
    claimed: dict[str, str] = {}
    plan: list[tuple[str, str, ImplicitPDCfg]] = []
    for name, cfg in actuators.items():
        where = f"scene.actuators.{name}"
        for joint in _select(joints, cfg.joints, where):
            if joint in claimed:
                raise RobolearnError(
                    f"{where}: joint {joint!r} is driven by scene.actuators.{claimed[joint]} "
                    "already; each joint takes one actuator config"
                )
            claimed[joint] = name
            plan.append((joint, where, cfg))
    # joint ranges in radians and qpos addresses: the compiled model's (an MJCF's ranges may
    # be in degrees, which only compiling converts)
    before = spec.compile()
    keys = [(key, np.array(key.ctrl, dtype=float)) for key in spec.keys]
    existing = _joint_actuators(spec)
    for joint, where, _ in plan:
        on_it = [a.name for a in spec.actuators if _drives(a, joint)]
        if len(on_it) > 1:
            raise RobolearnError(
                f"{where}: joint {joint!r} has {len(on_it)} actuators in the MJCF "
                f"({', '.join(on_it)}); an actuator config replaces one, and the others would "
                "drive it too: remove them from the MJCF or leave the joint out"
            )
    held: dict[int, str] = {}  # actuator index -> the joint whose position it holds
    driven = []
    for joint, where, cfg in plan:
        actuator = existing.get(joint)
        if actuator is None:
            actuator = spec.add_actuator(
                name=_free_name(spec, joint), target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT
            )
        driven.append(_drive(actuator, joints[joint], before.joint(joint), cfg, where))
        held[_index(spec, actuator)] = joint
    _hold_keyframes(spec, before, keys, held)
    return driven


def reflected_inertia(
    rotor_inertia: float | Sequence[float], gear_ratio: float | Sequence[float]
) -> float:
    """The inertia (kg m^2) a motor adds at its joint through its gears: the joint's armature.

    One stage: ``rotor_inertia x gear_ratio^2``. Several stages: ``rotor_inertia`` and
    ``gear_ratio`` list each stage from the motor out (the rotor, then each stage's gears'
    inertia on its input shaft), and each inertia is reflected through every stage after it:
    ``sum_i I_i (N_i x ... x N_n)^2``.
    """
    inertias = (
        [float(rotor_inertia)] if _is_number(rotor_inertia) else [float(i) for i in rotor_inertia]
    )
    ratios = [float(gear_ratio)] if _is_number(gear_ratio) else [float(r) for r in gear_ratio]
    if len(inertias) != len(ratios) or not inertias:
        raise RobolearnError(
            f"reflected_inertia: one inertia per gear stage, got {len(inertias)} inertias "
            f"and {len(ratios)} ratios"
        )
    if min(inertias) < 0 or min(ratios) <= 0:
        raise RobolearnError("reflected_inertia: inertias must be >= 0 and gear ratios > 0")
    return sum(i * math.prod(ratios[k:]) ** 2 for k, i in enumerate(inertias))


def pd_gains(
    inertia: float, natural_frequency_hz: float, damping_ratio: float
) -> tuple[float, float]:
    """(kp, kd) that make a joint of ``inertia`` (kg m^2, its armature where the motor's
    reflected inertia dominates) a second-order system of the given natural frequency and
    damping ratio: ``kp = I w^2``, ``kd = 2 zeta I w``, ``w = 2 pi f``."""
    if not inertia > 0 or not natural_frequency_hz > 0 or not damping_ratio >= 0:
        raise RobolearnError(
            "pd_gains: inertia and natural frequency must be > 0 and the damping ratio >= 0, "
            f"got {inertia}, {natural_frequency_hz}, {damping_ratio}"
        )
    omega = 2.0 * math.pi * natural_frequency_hz
    return inertia * omega**2, 2.0 * damping_ratio * inertia * omega


# ---- how a config becomes the model's actuators ------------------------------------------

_DRIVEN = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)


def _is_number(x: object) -> bool:
    return isinstance(x, int | float)


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
        delay=step_range(cfg.delay, f"{where}.delay", "physics steps"),
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
