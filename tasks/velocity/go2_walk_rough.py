"""go2_walk_rough: go2_walk on generated terrain, with a height scan.

go2_walk's config (``velocity/robots.py``) made rough as quadruped_walk_rough makes
quadruped_walk's (``velocity/quadruped.py``): the same 10 x 10 grid of flat, rough,
slopes, stairs and obstacles (the Go2's legs are about as long as our quadruped's), a
terrain curriculum over the rows, the ground around the trunk as 187 heights (1.6 m x
1.0 m every 0.1 m) seen by the policy and the critic, heading commands, and a fifth of the
flat task's flat-orientation penalty.
"""

from __future__ import annotations

from robolearn.tasks.velocity.quadruped import (
    rough_quadruped,
    rough_quadruped_agent_cfg,
    rough_quadruped_play,
)
from robolearn.tasks.velocity.robots import go2_flat_cfg

from robolearn.env import ManagerBasedRLEnvCfg

STANDING_HEIGHT = 0.278
"""The trunk's height above flat ground in the config's default pose (m)."""


def env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_quadruped(go2_flat_cfg(), STANDING_HEIGHT)


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_quadruped_play(env_cfg())


agent_cfg = rough_quadruped_agent_cfg
