"""g1_walk_rough: g1_walk on generated terrain, with a height scan.

g1_walk's recipe (``tasks/g1_walk.py``) made rough as humanoid_walk_rough makes
humanoid_walk (``tasks/humanoid_walk_rough.py``): the biped's gentler terrain mix (flat,
rough ground with bumps up to 4 cm, slopes up and down to 0.25, stairs up and down with
steps of 2-8 cm), a terrain curriculum, the ground around the pelvis as 77 heights
(1.0 m x 0.6 m every 0.1 m) seen by the policy and the critic, heading commands, and half
the flat task's flat-orientation penalty.
"""

from __future__ import annotations

from robolearn.tasks import g1_walk, humanoid_walk, humanoid_walk_rough
from robolearn.tasks.velocity import COMMAND, height_scan, make_rough, rough_play_cfg

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.registry import TaskSpec, register_task


def env_cfg() -> ManagerBasedRLEnvCfg:
    scan = height_scan(g1_walk.STANDING_HEIGHT, size=(1.0, 0.6))
    cfg = make_rough(g1_walk.env_cfg(), humanoid_walk_rough.terrain(), scan)
    cfg.rewards["flat_orientation"].weight = -1.0
    cfg.commands[COMMAND].rel_heading_envs = 1.0
    # a G1 fallen on stairs touches with more meshes than on flat ground
    cfg.sim.njmax = 384
    return cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_play_cfg(env_cfg())


register_task(
    TaskSpec(
        name="g1_walk_rough",
        description=(
            "Unitree G1 walks on velocity commands on generated terrain (slopes, stairs, "
            "rough) with a height scan and a terrain curriculum"
        ),
        env_cfg=env_cfg,
        agent_cfg=humanoid_walk.agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
