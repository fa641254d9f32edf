"""quadruped_walk_rough: quadruped_walk on generated terrain, with a height scan.

quadruped_walk's config made rough by the family's
:func:`~robolearn.tasks.velocity.quadruped.rough_quadruped` (``velocity/quadruped.py``): a
10 x 10 grid of 8 m tiles (flat, rough, slopes and stairs up and down, obstacles; step
heights 2-10 cm, slopes up to 0.4, in the quadruped's size: its legs are 0.38 m long), a
terrain curriculum over the rows, and the ground around the base as 187 heights (1.6 m x
1.0 m every 0.1 m, legged_gym's scan) in the policy's observations. The trunk may tilt on
slopes: the flat-orientation penalty is a fifth of the flat task's. Commands are headings to
turn to and walk straight along.
"""

from __future__ import annotations

from robolearn.tasks.velocity.quadruped import rough_quadruped_agent_cfg, rough_quadruped_play
from robolearn.tasks.velocity.robots import quadruped_rough_cfg

from robolearn.env import ManagerBasedRLEnvCfg

env_cfg = quadruped_rough_cfg  # in velocity/robots.py: the blind and obstacles tasks start from it
agent_cfg = rough_quadruped_agent_cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_quadruped_play(env_cfg())
