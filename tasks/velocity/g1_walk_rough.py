"""g1_walk_rough: g1_walk on generated terrain, with a height scan.

g1_walk's config (``velocity/robots.py``) made rough as humanoid_walk_rough makes
humanoid_walk's: the biped's gentler terrain mix (flat,
rough ground with bumps up to 4 cm, slopes up and down to 0.25, stairs up and down with
steps of 2-8 cm), a terrain curriculum, the ground around the pelvis as 77 heights
(1.0 m x 0.6 m every 0.1 m) seen by the policy and the critic, heading commands, and half
the flat task's flat-orientation penalty.
"""

from __future__ import annotations

from robolearn.envs.unitree_g1 import STANDING_HEIGHT
from robolearn.tasks.velocity.biped import biped_agent_cfg, biped_terrain
from robolearn.tasks.velocity.recipe import COMMAND
from robolearn.tasks.velocity.robots import g1_flat_cfg
from robolearn.tasks.velocity.rough import height_scan, make_rough, rough_play_cfg

from robolearn.env import ManagerBasedRLEnvCfg


def env_cfg() -> ManagerBasedRLEnvCfg:
    scan = height_scan(STANDING_HEIGHT, size=(1.0, 0.6))
    cfg = make_rough(g1_flat_cfg(), biped_terrain(), scan)
    cfg.rewards["flat_orientation"].weight = -1.0
    cfg.commands[COMMAND].rel_heading_envs = 1.0
    # a G1 fallen on stairs touches with more meshes than on flat ground
    cfg.sim.njmax = 384
    return cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_play_cfg(env_cfg())


agent_cfg = biped_agent_cfg
