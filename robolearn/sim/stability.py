"""Whether a model's timestep can be stable at all, known before anything steps.

MuJoCo integrates velocity-dependent forces implicitly (damping, and with ``implicitfast``
an actuator's ``kv``), but position feedback explicitly: a position actuator's ``kp`` and a
joint's ``stiffness`` are springs stepped forward with the state of the step before. A
spring of stiffness k on an inertia m, natural frequency w = sqrt(k / m), stepped that way
grows without bound once ``timestep * w`` passes 2 (2 sqrt(2) with RK4), whatever the
policy does; long before that, the steps are too coarse to follow the motor. The model's
fastest such frequency is the largest generalized eigenvalue of (K, M): the springs'
stiffness K in joint space against the mass matrix M (armature included) at the default
pose. The ``discrete`` integrator (MuJoCo 3.13 and later) steps stiffness implicitly
as well, so no such limit applies to it.

This is a necessary condition, not a sufficient one: contacts, or a policy that drives the
joints hard, can blow a simulation up at smaller steps, which the training health check
catches while it runs (:mod:`robolearn.app.health`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.errors import RobolearnError

# Where explicit position feedback stops being stable: timestep x w at the edge of each
# integrator's stability region on the imaginary axis.
_EDGE = {int(mujoco.mjtIntegrator.mjINT_RK4): 2.0 * math.sqrt(2.0)}
_EDGE_DEFAULT = 2.0
_IMPLICIT_SPRINGS = int(getattr(mujoco.mjtIntegrator, "mjINT_DISCRETE", -1))
# model arrays hold plain ints, which membership tests against mujoco's enums miss
_JOINT_TRANSMISSIONS = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
_AFFINE_BIAS = int(mujoco.mjtBias.mjBIAS_AFFINE)
_SPRING_JOINTS = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


@dataclass(frozen=True)
class StiffestJoint:
    """The model's fastest position feedback and the longest timestep that can follow it."""

    frequency: float
    """The largest natural frequency of the springs on the mass matrix, rad/s."""
    max_timestep: float
    """The timestep beyond which stepping those springs is unstable, s."""
    joint: str
    """The joint with the fastest spring of its own (stiffness over its inertia)."""
    stiffness: float
    """That joint's stiffness in joint space (actuators' kp x gear^2 plus the joint's
    own), N m/rad or N/m."""
    inertia: float
    """The inertia that joint moves when the others are free (1 / (M^-1)_ii)."""


def stiffest_joint(
    model: mujoco.MjModel,
    qpos: np.ndarray | None = None,
    explicit_stiffness: np.ndarray | None = None,
) -> StiffestJoint | None:
    """The model's fastest spring at ``qpos`` (default: qpos0), or None when no joint is
    driven by a position gain or a joint stiffness, or the integrator steps springs
    implicitly. ``explicit_stiffness`` ((nv,)) adds position gains applied outside MuJoCo
    (explicit motor models), which no integrator steps implicitly."""
    implicit = int(model.opt.integrator) == _IMPLICIT_SPRINGS
    stiffness = np.zeros(model.nv) if implicit else _joint_space_stiffness(model)
    if explicit_stiffness is not None:
        stiffness = stiffness + explicit_stiffness
    if not stiffness.any():
        return None
    mass = mass_matrix(model, qpos)
    try:
        lower = np.linalg.cholesky(mass)
    except np.linalg.LinAlgError:
        return None  # a degenerate mass matrix: MuJoCo's own checks speak for it
    inv_lower = np.linalg.inv(lower)
    # K is diagonal (one stiffness per dof): L^-1 K L^-T is symmetric, its eigenvalues are w^2
    sym = (inv_lower * stiffness) @ inv_lower.T
    frequency = math.sqrt(max(float(np.linalg.eigvalsh(sym).max()), 0.0))
    inertia = 1.0 / np.diag(np.linalg.inv(mass))
    own = stiffness / inertia
    dof = int(np.argmax(own))
    # a torque computed outside MuJoCo is held over the whole step (RK4's stages too)
    held = implicit or (explicit_stiffness is not None and bool(explicit_stiffness.any()))
    edge = _EDGE_DEFAULT if held else _EDGE.get(int(model.opt.integrator), _EDGE_DEFAULT)
    joint_id = int(model.dof_jntid[dof])
    return StiffestJoint(
        frequency=frequency,
        max_timestep=edge / frequency if frequency > 0 else math.inf,
        joint=mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, joint_id) or f"#{joint_id}",
        stiffness=float(stiffness[dof]),
        inertia=float(inertia[dof]),
    )


def check_timestep(
    model: mujoco.MjModel,
    qpos: np.ndarray | None = None,
    explicit_stiffness: np.ndarray | None = None,
) -> None:
    """Refuse a timestep at which the model's position gains (and ``explicit_stiffness``,
    as :func:`stiffest_joint` takes it) cannot be stable.

    Raises:
        RobolearnError: ``model.opt.timestep`` is beyond :attr:`StiffestJoint.max_timestep`,
            naming the joint, its stiffness and inertia, and the limit.
    """
    dt = float(model.opt.timestep)
    check_actuator_damping(model, qpos)
    stiffest = stiffest_joint(model, qpos, explicit_stiffness)
    if stiffest is None or dt < stiffest.max_timestep:
        return
    s = stiffest
    raise RobolearnError(
        f"sim.physics_dt {dt:g} s cannot be stable: the position gains reach "
        f"{s.frequency:.0f} rad/s (joint {s.joint}: stiffness {s.stiffness:.3g} on "
        f"inertia {s.inertia:.3g}), and MuJoCo steps position feedback explicitly, which "
        f"needs physics_dt < {s.max_timestep:.3g} s; use a shorter physics_dt (with a larger "
        "decimation to keep the control rate) or lower gains"
    )


_IMPLICIT_DAMPING = tuple(
    int(getattr(mujoco.mjtIntegrator, name))
    for name in ("mjINT_IMPLICIT", "mjINT_IMPLICITFAST", "mjINT_DISCRETE")
    if hasattr(mujoco.mjtIntegrator, name)
)


def check_actuator_damping(model: mujoco.MjModel, qpos: np.ndarray | None = None) -> None:
    """Refuse a timestep at which a position actuator's damping cannot be stable.

    Euler and RK4 step a joint's own damping implicitly but an actuator's velocity gain
    (a ``<position kv>`` or a config's ``damping``) explicitly: a damper kd on an inertia m
    stepped that way oscillates and grows once ``timestep x kd / m`` passes 2. A light
    joint (a wrist, on its small armature) meets that long before its spring's limit.
    ``implicitfast`` and ``implicit`` step the actuator's damping implicitly too.

    Raises:
        RobolearnError: naming the joint, its damping and inertia, the limit, and the
            integrator to use instead.
    """
    if int(model.opt.integrator) in _IMPLICIT_DAMPING:
        return
    damping = _actuator_gains(model, _KV)
    if not damping.any():
        return
    mass = mass_matrix(model, qpos)
    try:
        inertia = 1.0 / np.diag(np.linalg.inv(mass))
    except np.linalg.LinAlgError:
        return
    rate = damping / inertia
    dof = int(np.argmax(rate))
    dt = float(model.opt.timestep)
    if dt * rate[dof] < 2.0:
        return
    joint_id = int(model.dof_jntid[dof])
    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, joint_id) or f"#{joint_id}"
    integrator = mujoco.mjtIntegrator(int(model.opt.integrator)).name.removeprefix("mjINT_")
    raise RobolearnError(
        f"sim.physics_dt {dt:g} s cannot be stable with the {integrator.lower()} integrator: "
        f"joint {name}'s actuator damping {damping[dof]:.3g} on inertia {inertia[dof]:.3g} "
        f"is stepped explicitly, which needs physics_dt < {2.0 / rate[dof]:.3g} s; set "
        "sim.integrator=implicitfast (it steps actuator damping implicitly) or a shorter "
        "physics_dt"
    )


def mass_matrix(model: mujoco.MjModel, qpos: np.ndarray | None) -> np.ndarray:
    """(nv, nv) joint-space mass matrix (armature included) at ``qpos`` (default qpos0)."""
    data = mujoco.MjData(model)
    if qpos is not None:
        data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    mass = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, mass)
    return mass


_KP, _KV = 1, 2
"""Columns of an affine bias, ``bias = b0 + b1 * length + b2 * velocity``: -kp and -kv."""


def _actuator_gains(model: mujoco.MjModel, column: int) -> np.ndarray:
    """(nv,) the joint-space gain (``_KP`` or ``_KV``, x gear^2) of the position actuators
    on each dof."""
    gains = np.zeros(model.nv)
    for a in range(model.nu):
        if int(model.actuator_trntype[a]) not in _JOINT_TRANSMISSIONS:
            continue
        if int(model.actuator_biastype[a]) != _AFFINE_BIAS:
            continue
        gain = -float(model.actuator_biasprm[a, column])
        if gain > 0:
            gear = float(model.actuator_gear[a, 0])
            gains[model.jnt_dofadr[int(model.actuator_trnid[a, 0])]] += gain * gear * gear
    return gains


def position_gains(model: mujoco.MjModel) -> np.ndarray:
    """(nv,) the kp of the position actuators on each dof, x gear^2 (joint space)."""
    return _actuator_gains(model, _KP)


def _joint_space_stiffness(model: mujoco.MjModel) -> np.ndarray:
    """(nv,) stiffness of each dof: position actuators' kp x gear^2, plus the joint's own."""
    stiffness = position_gains(model)
    for joint in range(model.njnt):
        if int(model.jnt_type[joint]) in _SPRING_JOINTS:
            stiffness[model.jnt_dofadr[joint]] += max(float(model.jnt_stiffness[joint]), 0.0)
    return stiffness
