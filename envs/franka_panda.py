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

import mujoco

from robolearn.actuators import ImplicitPDCfg
from robolearn.scene import EntityCfg, FrameCfg, InitStateCfg

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


GRASP_STIFFNESS = 1000.0
"""N/m of the gripper's tendon (the fingers' mean opening) toward its target."""
GRASP_DAMPING = 20.0
"""N s/m: about critical for the fingers' mass."""


def stiffen_gripper(spec: mujoco.MjSpec) -> None:
    """The gripper's tendon actuator squeezing like Franka's hand.

    Menagerie's ``actuator8`` pulls the tendon to its target at 100 N/m: closed on a 4 cm
    cube it squeezes with 2 N, and a 100 g cube slips out of the fingers as the arm lifts
    (measured: a scripted grasp left every cube on the floor). Franka's hand grasps with 70
    N continuous (140 N peak); at 1000 N/m the same grasp squeezes with 20 N, within
    Menagerie's 100 N force range, and holds the cube. The gain maps control 255 to the 4 cm
    opening as Menagerie's does.
    """
    actuator = spec.actuator(GRIPPER)
    actuator.gainprm[0] = GRASP_STIFFNESS * 0.04 / GRIPPER_OPEN
    actuator.biasprm[1] = -GRASP_STIFFNESS
    actuator.biasprm[2] = -GRASP_DAMPING


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


def panda_robot(model: str = MODEL) -> EntityCfg:
    """The Panda, fixed to the world at its base (its MJCF has no floor: a task asks for one)."""
    return EntityCfg(
        model=model,
        init_state=panda_init_state(),
        joints=JOINTS,
        gravity_compensation=("link[1-7]", "hand", ".*_finger"),
        edit=stiffen_gripper,
        actuators=panda_actuators(),
    )
