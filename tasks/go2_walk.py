"""go2_walk: a Unitree Go2 follows base velocity commands on flat ground.

The velocity family's recipe (``tasks/velocity.py``) on the Go2's robot config
(``envs/unitree_go2.py``: its motors' limits, armature and gains, whichever MJCF of the
Go2 it runs on), with quadruped_walk's additions: forward commands up to 0.6 m/s that a
curriculum widens to 1 m/s, feet air time, torque, joint-limit and thigh/calf-contact
penalties, an end to episodes where the trunk tilts past 1 rad or touches the ground, and
every sample's mirror image in the update. Physics at 200 Hz (MuJoCo's implicit position
loop is stable there at these gains) on a capped solver (``velocity.CAPPED_SOLVER``), the policy at
50 Hz.

The model is Menagerie's by default; Unitree's own file drives the same task:
``robolearn train --task go2_walk env.scene.model=PATH`` with PATH
``unitree_mujoco/unitree_robots/go2/go2.xml`` in a checkout of Unitree's repository.
"""

from __future__ import annotations

from robolearn.envs.unitree_go2 import BASE, go2_scene
from robolearn.tasks import quadruped_walk
from robolearn.tasks.velocity import CAPPED_SOLVER, velocity_env_cfg

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.registry import TaskSpec, register_task
from robolearn.scene import SimCfg

NUM_ENVS = 512
"""As for quadruped_walk: on a CPU fewer envs give more updates a minute."""


def env_cfg() -> ManagerBasedRLEnvCfg:
    scene = go2_scene()
    scene.num_envs = NUM_ENVS
    cfg = velocity_env_cfg(scene, base_body=BASE, decimation=4)
    cfg.sim = SimCfg(physics_dt=0.005, **CAPPED_SOLVER)
    cfg.events["friction"].params["geoms"] = "FL|FR|RL|RR"
    return quadruped_walk.quadruped_terms(cfg, shin_bodies=".*_(thigh|calf)")


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return quadruped_walk.quadruped_play(env_cfg())


register_task(
    TaskSpec(
        name="go2_walk",
        description=(
            "Unitree Go2 (Menagerie's or Unitree's MJCF, its motors from the config) tracks "
            "velocity commands on flat ground"
        ),
        env_cfg=env_cfg,
        agent_cfg=quadruped_walk.agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
