"""The actuator configs of a robot: which joints a motor drives, how, and with what limits,
delay and rotor inertia; and gains from the motor's facts.

A robot's MJCF says how its joints are driven, and vendors and model collections say it
differently: Unitree's own models drive every joint with a torque ``<motor>`` (the PD loop
runs on the robot's motor drivers), MuJoCo Menagerie's use ``<position>`` actuators. An
entry of an entity's ``EntityCfg.actuators`` drives the joints it selects (regexes over
that entity's own joint names) its own way, whatever the MJCF had there:

* :class:`ImplicitPDCfg`: MuJoCo's position loop, ``clip(kp (q* - q) - kd qdot, +-effort)``
  with MuJoCo integrating the damping implicitly: the fastest and most stable;
* :class:`IdealPDCfg`: the same law computed by robolearn at every physics step and applied
  as a motor torque, as a robot's motor driver runs it;
* :class:`DCMotorCfg`: that loop limited by the motor's torque-speed line;
* :class:`ActuatorNetCfg`: a net fitted to a log of the real drive gives the torque;
* any of them with ``delay``: each env's targets arrive a lag of physics steps late.

How a config becomes the model's actuators is :mod:`robolearn.actuators.apply`; the
explicit models and delays run in :mod:`robolearn.actuators.drive` and
:mod:`robolearn.actuators.delay`.

Gains come most often from the motor's facts (:func:`reflected_inertia`,
:func:`pd_gains`): the reflected rotor inertia is the joint's armature, and the gains give
the joint a chosen natural frequency and damping ratio over that inertia. docs/actuators.md
says when to use which.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    actuator-net recipe; :mod:`robolearn.actuators.network` states the inputs), clipped
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


def _is_number(x: object) -> bool:
    return isinstance(x, int | float)
