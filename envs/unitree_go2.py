"""Unitree Go2: a 15 kg quadruped with 12 joints, from MuJoCo Menagerie or Unitree's files.

The model is not robolearn's: ``MODEL`` is Menagerie's (``menagerie:unitree_go2``, which the
``mujoco-menagerie`` package downloads on first use, or finds under ``MENAGERIE_ROOT``), and
Unitree's own ``unitree_mujoco/unitree_robots/go2/go2.xml`` works as well
(``env.scene.model=/path/to/go2.xml``): this config states the actuators, the pose and the
feet, so the same task runs on either file, Menagerie's position actuators or Unitree's
torque motors.

Motors (Unitree's published Go2 specs): hip and thigh 23.7 N m at up to 30.1 rad/s, the knee
(calf) 45.43 N m at up to 15.7 rad/s, through a 6:1 planetary gearbox, 1.5 times that at the
knee; the rotor's inertia is 1.11842e-4 kg m^2 (Unitree's URDF), reflected through the
gears as each joint's armature. The PD gains give each joint a 10 Hz natural frequency at
damping ratio 2 over that armature (mjlab's choice for its Go1 and Go2), run as MuJoCo's
implicit position loop.

Joints ``<leg>_hip_joint`` (abduction), ``<leg>_thigh_joint``, ``<leg>_calf_joint`` for legs
FL, FR, RL, RR; feet are the collision spheres ``FL``, ``FR``, ``RL``, ``RR`` at the calves'
ends. Default pose: thighs 0.9 rad, knees -1.8 rad, hips 0.1 rad outward, the trunk at 0.278 m.
"""

from __future__ import annotations

from robolearn.actuators import ImplicitPDCfg, pd_gains, reflected_inertia
from robolearn.scene import EntityCfg, InitStateCfg, JointMirrorCfg

MODEL = "menagerie:unitree_go2/go2.xml"
"""Where the model comes from by default; any Go2 MJCF with Unitree's joint names works."""

LEGS = ("FL", "FR", "RL", "RR")
JOINTS = tuple(f"{leg}_{part}_joint" for leg in LEGS for part in ("hip", "thigh", "calf"))
FEET = LEGS
MIRROR = JointMirrorCfg(
    pairs={
        f"{a}_{p}_joint": f"{b}_{p}_joint"
        for a, b in (("FL", "FR"), ("RL", "RR"))
        for p in ("hip", "thigh", "calf")
    },
    flip=(".*_hip_joint",),
)
"""Left and right legs swap; the hips (abduction, a roll axis) change sign."""
BASE = "base(_link)?"
"""The trunk: ``base`` in Menagerie's file, ``base_link`` in Unitree's (a regex over both)."""

ROTOR_INERTIA = 1.11842e-4
"""kg m^2, the motor's rotor about its axis (Unitree's Go2 URDF)."""
HIP_GEAR = 6.0
KNEE_GEAR = HIP_GEAR * 1.5

HIP_EFFORT, HIP_SPEED = 23.7, 30.1
"""N m and rad/s at the hip and thigh joints."""
KNEE_EFFORT, KNEE_SPEED = 45.43, 15.7
"""N m and rad/s at the knee."""

NATURAL_FREQUENCY_HZ, DAMPING_RATIO = 10.0, 2.0

HIP_ARMATURE = reflected_inertia(ROTOR_INERTIA, HIP_GEAR)
KNEE_ARMATURE = reflected_inertia(ROTOR_INERTIA, KNEE_GEAR)
HIP_KP, HIP_KD = pd_gains(HIP_ARMATURE, NATURAL_FREQUENCY_HZ, DAMPING_RATIO)
KNEE_KP, KNEE_KD = pd_gains(KNEE_ARMATURE, NATURAL_FREQUENCY_HZ, DAMPING_RATIO)


def go2_actuators() -> dict[str, ImplicitPDCfg]:
    """The 12 drives: hips and thighs, and knees."""
    return {
        "hips": ImplicitPDCfg(
            joints=(".*_hip_joint", ".*_thigh_joint"),
            stiffness=HIP_KP,
            damping=HIP_KD,
            effort_limit=HIP_EFFORT,
            armature=HIP_ARMATURE,
        ),
        "knees": ImplicitPDCfg(
            joints=".*_calf_joint",
            stiffness=KNEE_KP,
            damping=KNEE_KD,
            effort_limit=KNEE_EFFORT,
            armature=KNEE_ARMATURE,
        ),
    }


def go2_init_state() -> InitStateCfg:
    return InitStateCfg(
        pos=(0.0, 0.0, 0.278),
        joint_pos={
            ".*_thigh_joint": 0.9,
            ".*_calf_joint": -1.8,
            # the feet 0.1 rad outward: a wider stance than the joints' zero
            "[FR]L_hip_joint": -0.1,
            "[FR]R_hip_joint": 0.1,
        },
    )


def go2_robot(model: str = MODEL) -> EntityCfg:
    """The Go2 on this config's motors (its MJCF has no ground: a task asks for one)."""
    return EntityCfg(
        model=model,
        init_state=go2_init_state(),
        joints=JOINTS,
        root_body=BASE,
        feet=FEET,
        mirror=MIRROR,
        actuators=go2_actuators(),
    )
