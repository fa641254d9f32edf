"""Unitree G1 (29 joints), from MuJoCo Menagerie or Unitree's files.

``MODEL`` is Menagerie's ``unitree_g1/g1.xml`` (position actuators); Unitree's own
``unitree_mujoco/unitree_robots/g1/g1_29dof.xml`` (torque motors) has the same joint names
and runs the same config (``env.scene.model=...``): the actuators, the pose and the feet
are stated here.

Motors (Unitree's published G1 specs; rotor and gear-stage inertias reflected through each
stage as the joint's armature, :func:`reflected_inertia`):

| motor | joints | effort | speed |
|---|---|---:|---:|
| 7520-14 | hip pitch, hip yaw, waist yaw | 88 N m | 32 rad/s |
| 7520-22 | hip roll, knee | 139 N m | 20 rad/s |
| 5020 | shoulders, elbows, wrist roll | 25 N m | 37 rad/s |
| 4010 | wrist pitch and yaw | 5 N m | 22 rad/s |
| two 5020 through a linkage | ankle pitch and roll, waist roll and pitch | 50 N m | 37 rad/s |

PD gains: a 10 Hz natural frequency at damping ratio 2 over each joint's armature (mjlab's
choice for its G1). Default pose: knees bent (hip pitch -0.312, knee 0.669, ankle pitch
-0.363 rad), arms slightly out, the pelvis at 0.76 m.
"""

from __future__ import annotations

from robolearn.actuators import ImplicitPDCfg, pd_gains, reflected_inertia
from robolearn.scene import EntityCfg, InitStateCfg, JointMirrorCfg

MODEL = "menagerie:unitree_g1/g1.xml"

SIDES = ("left", "right")
LEG = ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
ARM = ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_roll")
ARM += ("wrist_pitch", "wrist_yaw")
JOINTS = (
    *(f"{s}_{j}_joint" for s in SIDES for j in LEG),
    "waist_yaw_joint",
    "waist_roll_joint",
    "waist_pitch_joint",
    *(f"{s}_{j}_joint" for s in SIDES for j in ARM),
)
FEET = ("left_ankle_roll_link", "right_ankle_roll_link")

STANDING_HEIGHT = 0.74
"""The pelvis's height above flat ground in the config's default pose (m)."""

NUM_ENVS = 1024
"""The env count the G1's tasks train with by default, walking (g1_walk) and imitating
clips (g1_track) alike."""

MIRROR = JointMirrorCfg(
    pairs={f"left_{j}_joint": f"right_{j}_joint" for j in LEG + ARM},
    flip=(".*_roll_joint", ".*_yaw_joint"),
)
"""Left and right swap; roll and yaw angles change sign (the waist's too), pitch keeps it
(the knees and elbows turn about pitch axes). The tests check it against the mirror found
in the geometry of both files."""

NATURAL_FREQUENCY_HZ, DAMPING_RATIO = 10.0, 2.0

# (rotor and gear-stage inertias, kg m^2; stage ratios, from the motor out; effort N m;
# speed rad/s)
MOTORS = {
    "5020": ((0.139e-4, 0.017e-4, 0.169e-4), (1.0, 1 + 46 / 18, 1 + 56 / 16), 25.0, 37.0),
    "7520_14": ((0.489e-4, 0.098e-4, 0.533e-4), (1.0, 4.5, 1 + 48 / 22), 88.0, 32.0),
    "7520_22": ((0.489e-4, 0.109e-4, 0.738e-4), (1.0, 4.5, 5.0), 139.0, 20.0),
    "4010": ((0.068e-4, 0.0, 0.0), (1.0, 5.0, 5.0), 5.0, 22.0),
}
DRIVES = {
    "7520_14": (".*_hip_pitch_joint", ".*_hip_yaw_joint", "waist_yaw_joint"),
    "7520_22": (".*_hip_roll_joint", ".*_knee_joint"),
    "5020": (".*_shoulder_.*_joint", ".*_elbow_joint", ".*_wrist_roll_joint"),
    "4010": (".*_wrist_pitch_joint", ".*_wrist_yaw_joint"),
}
LINKAGES = (".*_ankle_pitch_joint", ".*_ankle_roll_joint", "waist_roll_joint", "waist_pitch_joint")
"""Joints driven by two 5020 motors through a four-bar linkage: twice one's torque and
inertia."""


def _drive(motor: str, joints: tuple[str, ...], count: int = 1) -> ImplicitPDCfg:
    inertias, ratios, effort, _ = MOTORS[motor]
    armature = count * reflected_inertia(inertias, ratios)
    kp, kd = pd_gains(armature, NATURAL_FREQUENCY_HZ, DAMPING_RATIO)
    return ImplicitPDCfg(
        joints=joints, stiffness=kp, damping=kd, effort_limit=count * effort, armature=armature
    )


def g1_actuators() -> dict[str, ImplicitPDCfg]:
    """The 29 drives, by motor type."""
    drives = {motor: _drive(motor, joints) for motor, joints in DRIVES.items()}
    drives["linkages"] = _drive("5020", LINKAGES, count=2)
    return drives


def g1_init_state() -> InitStateCfg:
    return InitStateCfg(
        pos=(0.0, 0.0, 0.76),
        joint_pos={
            ".*_hip_pitch_joint": -0.312,
            ".*_knee_joint": 0.669,
            ".*_ankle_pitch_joint": -0.363,
            ".*_elbow_joint": 0.6,
            ".*_shoulder_pitch_joint": 0.2,
            "left_shoulder_roll_joint": 0.2,
            "right_shoulder_roll_joint": -0.2,
        },
    )


def g1_robot(model: str = MODEL) -> EntityCfg:
    """The G1 on this config's motors (its MJCF has no ground: a task asks for one)."""
    return EntityCfg(
        model=model,
        init_state=g1_init_state(),
        joints=JOINTS,
        root_body="pelvis",
        feet=FEET,
        mirror=MIRROR,
        actuators=g1_actuators(),
    )
