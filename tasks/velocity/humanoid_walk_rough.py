"""humanoid_walk_rough: humanoid_walk on generated terrain, with a height scan.

humanoid_walk's config (``velocity/robots.py``) made rough by the family's
:func:`~robolearn.tasks.velocity.rough.make_rough`, on the bipeds' gentler mix than the
quadruped's (``velocity/biped.py``; a biped on stairs is the hard case of this family):
flat, rough ground (bumps up to 4 cm), slopes up and down (to 0.25) and stairs up and down
(steps 2-8 cm), a terrain curriculum, and the ground around the pelvis as 77 heights (1.0 m x
0.6 m every 0.1 m) seen by the policy and the critic.
"""

from __future__ import annotations

from robolearn.tasks.velocity.biped import biped_agent_cfg, biped_terrain
from robolearn.tasks.velocity.recipe import COMMAND
from robolearn.tasks.velocity.robots import humanoid_flat_cfg
from robolearn.tasks.velocity.rough import height_scan, make_rough, rough_play_cfg

from robolearn.env import ManagerBasedRLEnvCfg

STANDING_HEIGHT = 0.73
"""The pelvis's height above flat ground when standing (m): the base-height reward's
target."""


def env_cfg() -> ManagerBasedRLEnvCfg:
    scan = height_scan(STANDING_HEIGHT, size=(1.0, 0.6))
    cfg = make_rough(humanoid_flat_cfg(), biped_terrain(), scan)
    cfg.rewards["flat_orientation"].weight = -1.0
    cfg.commands[COMMAND].rel_heading_envs = 1.0  # walk straight: see quadruped_walk_rough
    # MuJoCo Warp's constraint rows per env: a humanoid fallen on stairs or rough ground
    # used 109 (robolearn.sim.capacity.measured_capacity); the flat task's 128 leaves too
    # little margin
    cfg.sim.njmax = 192
    return cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_play_cfg(env_cfg())


agent_cfg = biped_agent_cfg
