"""g1_track: a Unitree G1 imitates motion clips (the BeyondMimic recipe of
``tracking/recipe.py``).

The clips are robolearn's own (``assets/motions``): ``g1_walk.npz``, ten seconds of the
shipped g1_walk policy walking forward and turning, recorded from the simulator at 50 Hz;
and ``g1_squat.npz``, a squat with an arm swing authored from keyframes
(``robolearn.tasks.tracking.motions``). ``g1_track`` tracks the walk; ``g1_track_squat`` the
squat; any clip of the G1 drives either (``env.commands.motion.motion_files=[PATH,...]``, a
robolearn npz; ``robolearn motion convert`` makes one from a retargeted CSV).

BeyondMimic's anchor (the torso) and its 14 tracked bodies; every joint driven around the
default pose (0.5 rad per unit of action), on the G1's robot config and g1_walk's physics
(100 Hz, ``implicitfast``, the policy at 50 Hz).
"""

from __future__ import annotations

from robolearn.envs import CAPPED_SOLVER
from robolearn.envs.unitree_g1 import NUM_ENVS, g1_robot
from robolearn.tasks.tracking.recipe import (
    tracking_agent_cfg,
    tracking_env_cfg,
    tracking_play_cfg,
)

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.scene import SceneCfg, SimCfg

WALK = "motions/g1_walk.npz"
SQUAT = "motions/g1_squat.npz"
ANCHOR = "torso_link"
BODIES = [
    "pelvis",
    *(
        f"{s}_{b}"
        for s in ("left", "right")
        for b in ("hip_roll_link", "knee_link", "ankle_roll_link")
    ),
    "torso_link",
    *(
        f"{s}_{b}"
        for s in ("left", "right")
        for b in ("shoulder_roll_link", "elbow_link", "wrist_yaw_link")
    ),
]
END_EFFECTORS = [
    f"{s}_{b}" for s in ("left", "right") for b in ("ankle_roll_link", "wrist_yaw_link")
]
CONTACT_FREE = "(?!.*(_ankle_roll_link|_wrist_yaw_link)$).+"
"""Every body but the feet and hands: their contacts are penalised."""


def env_cfg(motion: str = WALK) -> ManagerBasedRLEnvCfg:
    scene = SceneCfg(num_envs=NUM_ENVS, entities={"robot": g1_robot()}, ground=True)
    sim = SimCfg(physics_dt=0.01, njmax=256, integrator="implicitfast", **CAPPED_SOLVER)
    return tracking_env_cfg(
        scene,
        sim,
        decimation=2,
        motion_files=[motion],
        anchor_body=ANCHOR,
        body_names=BODIES,
        end_effectors=END_EFFECTORS,
        contact_free=CONTACT_FREE,
        action_scale=0.5,
    )


def play_env_cfg(motion: str = WALK) -> ManagerBasedRLEnvCfg:
    return tracking_play_cfg(env_cfg(motion))


def squat_env_cfg() -> ManagerBasedRLEnvCfg:
    return env_cfg(SQUAT)


def squat_play_env_cfg() -> ManagerBasedRLEnvCfg:
    return play_env_cfg(SQUAT)


agent_cfg = tracking_agent_cfg
