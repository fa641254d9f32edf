"""How each joint of a robot is driven, derived from its model.

A model's position servos are kept as they are (their gains are the model author's
choice, often measured), stated as :class:`~robolearn.actuators.ImplicitPDCfg` so the
generated config shows them and can change them. A torque ``<motor>``, or a joint no
actuator drives, takes no joint-position action: it becomes an implicit PD loop whose gains
make the joint a second-order system of :data:`NATURAL_FREQUENCY_HZ` at
:data:`DAMPING_RATIO` over the inertia it moves: the joint's armature (the motor's rotor
reflected through its gears) where the model states one, else the inertia of the bodies
below the joint about its axis at the default pose (the mass matrix's diagonal). This is
how mjlab sets its robots' gains from their rotor inertias, and how our Go2 and G1 configs
do (10 Hz at damping ratio 2).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.actuators import ImplicitPDCfg, pd_gains
from robolearn.sim.inspect import actuator_force_bound, actuator_kind
from robolearn.sim.stability import mass_matrix

NATURAL_FREQUENCY_HZ = 10.0
"""The natural frequency given to a joint whose model states no position gains."""
DAMPING_RATIO = 2.0
"""Its damping ratio: over-damped, as mjlab's and our robots' configs."""
MIN_SERVO_HZ = 1.5
"""Hz: a model's position servo slower than this over the inertia it moves is remade like
a torque motor. Menagerie's servos run at 1.8 Hz (Booster T1's hip pitch, its whole leg)
to 35 Hz; the Berkeley humanoid's knees and ankles (kp 1: 0.9 Hz) cannot lift its legs,
and a policy on them did not learn to stand."""

_MOVING = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
_JOINT_TRANSMISSIONS = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))


@dataclass
class Drive:
    """One joint's derived drive and why."""

    joint: str
    stiffness: float
    """kp in joint space, N m/rad (N/m for a slide joint)."""
    damping: float
    """kd in joint space, N m s/rad."""
    effort_limit: float | None
    """The largest torque the drive gives, N m; None when the model states none."""
    armature: float | None
    """The armature to set, kg m^2; None keeps the model's."""
    source: str
    """``position servo``, ``torque motor`` or ``no actuator``."""
    why: str
    """One line: where the gains and the limit come from."""

    def cfg(self) -> ImplicitPDCfg:
        """As an actuator config over this one joint."""
        return ImplicitPDCfg(
            joints=re.escape(self.joint),
            stiffness=self.stiffness,
            damping=self.damping,
            effort_limit=self.effort_limit,
            armature=self.armature,
        )


def moving_joints(model: mujoco.MjModel) -> list[int]:
    """The model's named hinge and slide joints, in model order."""
    return [
        j
        for j in range(model.njnt)
        if int(model.jnt_type[j]) in _MOVING
        and mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
    ]


def joint_actuators(model: mujoco.MjModel, joint: int) -> list[int]:
    """The actuators whose transmission is ``joint``."""
    return [
        a
        for a in range(model.nu)
        if int(model.actuator_trntype[a]) in _JOINT_TRANSMISSIONS
        and int(model.actuator_trnid[a, 0]) == joint
    ]


def tendon_driven_joints(model: mujoco.MjModel) -> set[int]:
    """The joints on a fixed tendon that an actuator drives (Menagerie's Panda moves both
    fingers with one actuator on a tendon): these keep the model's drive."""
    tendons = {
        int(model.actuator_trnid[a, 0])
        for a in range(model.nu)
        if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_TENDON)
    }
    joints = set()
    for t in tendons:
        start, count = int(model.tendon_adr[t]), int(model.tendon_num[t])
        for w in range(start, start + count):
            if int(model.wrap_type[w]) == int(mujoco.mjtWrap.mjWRAP_JOINT):
                joints.add(int(model.wrap_objid[w]))
    return joints


def derive_drives(
    model: mujoco.MjModel,
    qpos: np.ndarray,
    natural_frequency_hz: float = NATURAL_FREQUENCY_HZ,
    damping_ratio: float = DAMPING_RATIO,
    soft: dict[str, str] | None = None,
) -> list[Drive]:
    """A drive for every named hinge and slide joint of ``model`` (see the module);
    ``soft``: joints whose position servo is remade like a torque motor, with the reason."""
    soft = soft or {}
    inertia = np.diag(mass_matrix(model, qpos))
    drives = []
    on_tendons = tendon_driven_joints(model)
    for j in moving_joints(model):
        if j in on_tendons:
            continue  # a gripper's fingers on a tendon its actuator pulls: the model's own
        name = model.joint(j).name
        dof = int(model.jnt_dofadr[j])
        actuators = joint_actuators(model, j)
        limit, limit_from = effort_limit(model, j, actuators)
        kinds = [actuator_kind(model, a) for a in actuators]
        why_soft = soft.get(name, "")
        if len(actuators) == 1 and kinds[0]["kind"] == "position":
            gear = float(model.actuator_gear[actuators[0], 0])
            kp, kv = kinds[0]["kp"] * gear**2, kinds[0]["kv"] * gear**2
            hz = math.sqrt(kp / float(inertia[dof])) / (2 * math.pi)
            # a servo that sags is remade only where the rule's loop is the stiffer one
            stiffer = pd_gains(_moved(model, dof, inertia)[0], natural_frequency_hz, 1.0)[0] > kp
            if hz >= MIN_SERVO_HZ and not (why_soft and stiffer):
                drives.append(
                    Drive(
                        name,
                        kp,
                        kv,
                        limit,
                        None,
                        "position servo",
                        f"the model's position servo kept: kp {kp:.4g}, kv {kv:.4g} "
                        f"({hz:.2g} Hz over the {float(inertia[dof]):.2g} kg m^2 below it); "
                        f"{limit_from}",
                    )
                )
                continue
            why_soft = why_soft or (
                f"the model's position servo (kp {kp:.4g}) is too soft to follow a target: "
                f"{hz:.2g} Hz over the {float(inertia[dof]):.3g} kg m^2 below it, under "
                f"{MIN_SERVO_HZ:g} Hz; "
            )
        moved, moved_from = _moved(model, dof, inertia)
        kp, kd = pd_gains(moved, natural_frequency_hz, damping_ratio)
        source = "soft servo" if why_soft else "torque motor" if actuators else "no actuator"
        drives.append(
            Drive(
                name,
                kp,
                kd,
                limit,
                None,
                source,
                f"{why_soft or source + ' '}made a PD loop: kp {kp:.4g}, kd {kd:.4g} for "
                f"{natural_frequency_hz:g} Hz at damping ratio {damping_ratio:g} over "
                f"{moved_from}; {limit_from}",
            )
        )
    return drives


def _moved(model: mujoco.MjModel, dof: int, inertia: np.ndarray) -> tuple[float, str]:
    """The inertia a derived loop's gains are set over, and the words for it."""
    armature = float(model.dof_armature[dof])
    if armature > 0:
        return armature, f"its armature {armature:.4g} kg m^2"
    # 3 significant figures: a left joint and its right mirror move the same inertia, up
    # to the rounding of the mass matrix, and get the same gains
    moved = float(f"{float(inertia[dof]):.3g}")
    return moved, f"the inertia below it, {moved:.4g} kg m^2 (the model states no armature)"


MAX_SAG = 0.1
"""rad a model's position servo may give under the load of standing before it is too
soft (and remade, where the rule's loop is stiffer)."""
SAG_WARN = 0.5
"""rad a task's position loop may give standing before ``doctor`` warns: the rule's own
loops give up to 0.49 rad (Unitree's Go2 calves in go2_walk, which walks), which the
policy's targets take up; half a radian spends most of an action's range holding the
robot up."""


def load_torques(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """(nv,) the generalized forces that hold ``qpos`` still (inverse dynamics: gravity and
    the contacts of standing; friction loss left out)."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_inverse(model, data)
    return data.qfrc_inverse.copy()


def sagging_servos(model: mujoco.MjModel, qpos: np.ndarray, drives: list[Drive]) -> dict[str, str]:
    """The kept position servos that give more than :data:`MAX_SAG` under the load of
    standing in ``qpos`` (``model``: the robot on its floor), with the reason."""
    torques = load_torques(model, qpos)
    soft = {}
    for d in drives:
        if d.source != "position servo" or d.stiffness <= 0:
            continue
        need = abs(float(torques[int(model.joint(d.joint).dofadr[0])]))
        if need / d.stiffness > MAX_SAG:
            soft[d.joint] = (
                f"the model's position servo (kp {d.stiffness:.4g}) is too soft to carry the "
                f"robot: it gives {need / d.stiffness:.2f} rad under the {need:.3g} N m of "
                "standing; "
            )
    return soft


def effort_limit(
    model: mujoco.MjModel, joint: int, actuators: list[int]
) -> tuple[float | None, str]:
    """The torque bound on ``joint`` the model states (the tightest of its actuators'
    forceranges, a motor's ctrlrange x gear, the joint's actuatorfrcrange), and where it
    comes from; None where none is stated."""
    bounds: list[tuple[float, str]] = []
    if model.jnt_actfrclimited[joint]:
        bounds.append(
            (float(np.abs(model.jnt_actfrcrange[joint]).max()), "the joint's actuatorfrcrange")
        )
    for a in actuators:
        force, bounded_by = actuator_force_bound(model, a)
        if force is not None:
            gear = abs(float(model.actuator_gear[a, 0]))
            bounds.append((max(abs(f) for f in force) * gear, f"the actuator's {bounded_by}"))
    if not bounds:
        return (
            None,
            "effort unlimited (the model states no forcerange, ctrlrange or actuatorfrcrange)",
        )
    limit, where = min(bounds)
    return limit, f"effort limit {limit:.4g} from {where}"
