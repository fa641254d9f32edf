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
joint. The gains are Menagerie's (kp 4500, 4500, 3500, 3500, 2000, 2000, 2000 N m/rad, kd a
tenth of kp): a position-controlled arm holds its pose against gravity (its shoulder's
gravity torque is tens of N m) to about 0.01 rad, where gains from a 10 Hz natural
frequency over that armature (kp 395) would sag ten times as far.

Default pose: Menagerie's ``home`` (joint4 -pi/2, joint6 pi/2, joint7 -pi/4), the gripper
open. The end effector is the ``hand`` body, its tool centre point ``TCP_OFFSET`` below it
between the fingertips. The arm is not mirror-symmetric: no mirror map.
"""

from __future__ import annotations

from robolearn.scene import InitStateCfg, SceneCfg
from robolearn.scene.actuators import ImplicitPDCfg

MODEL = "menagerie:franka_emika_panda/panda.xml"

ARM = tuple(f"joint{i}" for i in range(1, 8))
FINGERS = ("finger_joint1", "finger_joint2")
JOINTS = (*ARM, *FINGERS)
END_EFFECTOR = "hand"
TCP_OFFSET = (0.0, 0.0, 0.1034)
"""m, in the hand's frame: the point between the fingertips (Franka's flange-to-TCP)."""
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
            stiffness={"joint[12]": 4500.0, "joint[34]": 3500.0},
            damping={"joint[12]": 450.0, "joint[34]": 350.0},
            effort_limit=SHOULDER_EFFORT,
            armature=ARMATURE,
        ),
        "wrist": ImplicitPDCfg(
            joints=("joint5", "joint6", "joint7"),
            stiffness=2000.0,
            damping=200.0,
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
        actuators=panda_actuators(),
    )
