"""A robot's default state stated in its config, not taken from its MJCF.

Models of the same robot disagree on where it stands: Unitree's own Go2 has a ``home``
keyframe, its G1 none, Menagerie's files their own. A robot config states the pose itself
(:class:`InitStateCfg`: the base's position and orientation, joint positions by regex), and
the scene writes it into the model as a keyframe (:data:`INIT_KEY`) before the actuators are
built, so the same config stands the robot the same way on any of its models. (The floor
such a model lacks, and the check of its joint names, are the assembly's.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from robolearn.errors import RobolearnError
from robolearn.scene.patterns import compile_patterns

INIT_KEY = "init_state"
"""The keyframe name the scene gives a config's default state."""


@dataclass
class InitStateCfg:
    """The robot's default state: every env resets to it (then the reset events vary it)."""

    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The floating base's position (m), relative to the env's origin; unused for a fixed
    base."""
    rot: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    """The floating base's orientation, a (w, x, y, z) quaternion."""
    joint_pos: dict[str, float] = field(default_factory=dict)
    """Joint positions (rad or m) by regex over joint names (a full match; the first pattern
    that matches a joint gives its value); joints no pattern matches keep the MJCF's
    reference position (qpos0)."""
    ctrl: dict[str, float] = field(default_factory=dict)
    """Controls held at reset by regex over actuator names, for actuators no joint position
    gives: a gripper on a tendon (Menagerie's Panda: ``actuator8``, 255 open)."""


def add_init_keyframe(spec: mujoco.MjSpec, init: InitStateCfg, where: str) -> None:
    """Add ``init`` to ``spec`` as the keyframe :data:`INIT_KEY` (position actuators on a
    joint hold its position, ``init.ctrl`` gives others, the rest are 0). RobolearnError,
    naming ``where``, for a pattern that matches no joint or actuator, a value outside a
    joint's range, or a quaternion of zero length."""
    model = spec.compile()
    qpos = model.qpos0.copy()
    free = [j for j in range(model.njnt) if model.jnt_type[j] == int(mujoco.mjtJoint.mjJNT_FREE)]
    if free:
        adr = model.jnt_qposadr[free[0]]
        rot = np.asarray(init.rot, dtype=float)
        if not np.linalg.norm(rot) > 0:
            raise RobolearnError(
                f"{where}.rot must be a quaternion of nonzero length, got {init.rot}"
            )
        qpos[adr : adr + 3] = init.pos
        qpos[adr + 3 : adr + 7] = rot / np.linalg.norm(rot)
    patterns = [rx for _, rx in compile_patterns(tuple(init.joint_pos), f"{where}.joint_pos")]
    values = list(init.joint_pos.values())
    used = [False] * len(patterns)
    for j in range(model.njnt):
        if model.jnt_type[j] not in (
            int(mujoco.mjtJoint.mjJNT_HINGE),
            int(mujoco.mjtJoint.mjJNT_SLIDE),
        ):
            continue
        name = model.joint(j).name
        for k, pattern in enumerate(patterns):
            if pattern.fullmatch(name):
                used[k] = True
                value = float(values[k])
                low, high = model.jnt_range[j]
                if model.jnt_limited[j] and not low - 1e-6 <= value <= high + 1e-6:
                    raise RobolearnError(
                        f"{where}.joint_pos: {name} = {value:g} is outside the joint's range "
                        f"[{low:g}, {high:g}]"
                    )
                qpos[model.jnt_qposadr[j]] = value
                break
    unused = [p.pattern for p, u in zip(patterns, used, strict=True) if not u]
    if unused:
        joints = [model.joint(j).name for j in range(model.njnt) if model.joint(j).name]
        raise RobolearnError(
            f"{where}.joint_pos: {', '.join(map(repr, unused))} match no joint of the model; "
            f"joints: {', '.join(joints)}"
        )
    ctrl = np.zeros(model.nu)
    for a in range(model.nu):
        holds = (
            model.actuator_trntype[a] == int(mujoco.mjtTrn.mjTRN_JOINT)
            and model.actuator_biastype[a] == int(mujoco.mjtBias.mjBIAS_AFFINE)
            and model.actuator_biasprm[a, 1] < 0
        )
        if holds:
            ctrl[a] = qpos[model.jnt_qposadr[model.actuator_trnid[a, 0]]]
    if init.ctrl:
        names = [model.actuator(a).name for a in range(model.nu)]
        for pattern, regex in compile_patterns(tuple(init.ctrl), f"{where}.ctrl"):
            hits = [a for a, n in enumerate(names) if regex.fullmatch(n)]
            if not hits:
                raise RobolearnError(
                    f"{where}.ctrl: {pattern!r} matches no actuator of the model; actuators: "
                    f"{', '.join(n for n in names if n)}"
                )
            ctrl[hits] = init.ctrl[pattern]
    spec.add_key(name=INIT_KEY, qpos=qpos.tolist(), ctrl=ctrl.tolist())
