"""quadruped_walk: the quadruped follows base velocity commands on flat ground.

The velocity family's recipe (``velocity/recipe.py``: legged_gym / Isaac Lab flat
locomotion) for our quadruped, with what a quadruped adds (``velocity/quadruped.py``):
forward commands up to 0.6 m/s that a curriculum widens to 1 m/s, feet air time, torque,
joint-limit and calf-contact penalties, and an end to episodes where the trunk tilts past 1
rad. Trained as the humanoid is (every sample and its left-right mirror image, the update in
bf16 where the hardware has it), over 512 envs: on 2 CPU cores it meets the walking
thresholds in 2-3 minutes.
"""

from __future__ import annotations

from robolearn.tasks.velocity.quadruped import quadruped_agent_cfg, quadruped_play
from robolearn.tasks.velocity.robots import quadruped_flat_cfg

from robolearn.env import ManagerBasedRLEnvCfg

env_cfg = quadruped_flat_cfg  # in velocity/robots.py: the rough and motors tasks start from it
agent_cfg = quadruped_agent_cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return quadruped_play(env_cfg())
