"""Franka Emika Panda with its gripper, from MuJoCo Menagerie: the arm for manipulation.

``MODEL`` is Menagerie's ``franka_emika_panda/panda.xml``: 7 arm joints ``joint1`` to
``joint7`` on position loops, and the two finger joints coupled by a tendon that one
actuator (``actuator8``, control 0 closed to 255 open, 0.04 m per finger) drives. This
config states the arm's drives from Franka's published joint limits; the gripper keeps
Menagerie's tendon actuator.

| joints | torque limit | speed limit |
|---|---:|---:|
| joint1-joint4 | 87 N m | 2.175 rad/s |
| joint5-joint7 | 12 N m | 2.61 rad/s |

Franka publishes no rotor inertias: the armature is Menagerie's 0.1 kg m^2 on every arm
joint. Franka's controller adds each link's gravity torque to what it is commanded, so
the arm does not sag under its own weight; the config states that as gravity compensation
on the arm's bodies (MuJoCo's ``gravcomp``). Without it the position loops below hold the
tool 16 to 28 mm (and 0.04 to 0.06 rad) off an IK command's pose over the arm's workspace,
5 to 10 mm with Menagerie's three times stiffer gains (measured on 8 poses, 3 s after the
command), which an IK step from the measured joint positions never corrects.

With gravity compensated the gains need not be stiff: they are for 5 Hz at damping ratio 1
over each joint's inertia at the home pose (the mass matrix's diagonal: 1.5, 2.8, 1.5, 1.1,
0.14, 0.15, 0.11 kg m^2), rounded per group: kp 1500 N m/rad, kd 100 on joints 1-4, kp
150, kd 10 on joints 5-7. Menagerie's own gains (kp 4500 and 2000, kd 450 and 200) spend
the whole effort limit on damping at 0.19 rad/s (shoulder) and 0.06 rad/s (wrist), so the
arm crawls at a tenth of Franka's speed limits; these reach the limits' torque at 0.87 and
1.2 rad/s.

Default pose: Menagerie's ``home`` (joint4 -pi/2, joint6 pi/2, joint7 -pi/4), the gripper
open. The end effector is the ``hand`` body, its tool centre point ``TCP_OFFSET`` below it
between the fingertips. The arm is not mirror-symmetric: no mirror map.
"""

from __future__ import annotations

from robolearn.scene import FrameCfg, InitStateCfg, SceneCfg
from robolearn.scene.actuators import ImplicitPDCfg

MODEL = "menagerie:franka_emika_panda/panda.xml"

ARM = tuple(f"joint{i}" for i in range(1, 8))
FINGERS = ("finger_joint1", "finger_joint2")
JOINTS = (*ARM, *FINGERS)
END_EFFECTOR = "hand"
TCP_OFFSET = (0.0, 0.0, 0.1034)
"""m, in the hand's frame: the point between the fingertips (Franka's flange-to-TCP)."""
TCP = FrameCfg(END_EFFECTOR, offset=TCP_OFFSET)
"""The tool centre point as a frame, for task-space actions, observations and commands."""
BASE = "link0"
"""The arm's base link: the frame manipulation tasks state poses in."""
GRIPPER = "actuator8"
GRIPPER_OPEN, GRIPPER_CLOSED = 255.0, 0.0

ARMATURE = 0.1
SHOULDER_EFFORT, SHOULDER_SPEED = 87.0, 2.175
WRIST_EFFORT, WRIST_SPEED = 12.0, 2.61


def panda_actuators() -> dict[str, ImplicitPDCfg]:
    """The arm's 7 position loops (the gripper's tendon actuator is the MJCF's)."""
    return {
        "shoulder": ImplicitPDCfg(
            joints=("joint1", "joint2", "joint3", "joint4"),
            stiffness=1500.0,
            damping=100.0,
            effort_limit=SHOULDER_EFFORT,
            armature=ARMATURE,
        ),
        "wrist": ImplicitPDCfg(
            joints=("joint5", "joint6", "joint7"),
            stiffness=150.0,
            damping=10.0,
            effort_limit=WRIST_EFFORT,
            armature=ARMATURE,
        ),
    }


def panda_init_state() -> InitStateCfg:
    return InitStateCfg(
        joint_pos={
            "joint4": -1.57079,
            "joint6": 1.57079,
            "joint7": -0.7853,
            "finger_joint.*": 0.04,
            "joint[1235]": 0.0,
        },
        ctrl={GRIPPER: GRIPPER_OPEN},
    )


def panda_scene(model: str = MODEL) -> SceneCfg:
    """The Panda, fixed to the world at its base, on a floor of its own."""
    return SceneCfg(
        model=model,
        init_state=panda_init_state(),
        joints=JOINTS,
        ground=True,
        gravity_compensation=("link[1-7]", "hand", ".*_finger"),
        actuators=panda_actuators(),
    )
