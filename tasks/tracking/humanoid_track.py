"""humanoid_track: robolearn's humanoid imitates motion clips (the recipe of
``tracking/recipe.py``).

Clips: ``assets/motions/humanoid_walk.npz``, ten seconds of the shipped humanoid_walk
policy, recorded at 50 Hz; ``humanoid_squat.npz``, a keyframed squat with an arm swing
(``robolearn.tasks.tracking.motions``). ``humanoid_track`` tracks the walk,
``humanoid_track_squat`` the squat. The anchor is the torso; the tracked bodies the pelvis,
hips, shins, feet, torso, upper arms and forearms; all 21 joints driven around the ``stand``
pose.
"""

from __future__ import annotations

from robolearn.envs.humanoid import humanoid_robot
from robolearn.tasks.tracking.recipe import (
    tracking_agent_cfg,
    tracking_env_cfg,
    tracking_play_cfg,
)

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.scene import SceneCfg, SimCfg

WALK = "motions/humanoid_walk.npz"
SQUAT = "motions/humanoid_squat.npz"
ANCHOR = "torso"
BODIES = [
    "pelvis",
    *(f"{s}_{b}" for s in ("left", "right") for b in ("hip_roll_link", "shin", "foot")),
    "torso",
    *(f"{s}_{b}" for s in ("left", "right") for b in ("upper_arm", "forearm")),
]
END_EFFECTORS = [f"{s}_{b}" for s in ("left", "right") for b in ("foot", "forearm")]
CONTACT_FREE = "(?!.*_foot$).+"
"""Every body but the feet: their contacts are penalised."""


def env_cfg(motion: str = WALK) -> ManagerBasedRLEnvCfg:
    scene = SceneCfg(num_envs=1024, entities={"robot": humanoid_robot()})
    return tracking_env_cfg(
        scene,
        # humanoid_walk's physics: 100 Hz, room for the constraint rows of a fallen robot
        SimCfg(physics_dt=0.01, njmax=128),
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
