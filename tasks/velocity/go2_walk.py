"""go2_walk: a Unitree Go2 follows base velocity commands on flat ground.

The velocity family's recipe (``velocity/recipe.py``) on the Go2's robot config
(``envs/unitree_go2.py``: its motors' limits, armature and gains, whichever MJCF of the Go2
it runs on), with what a quadruped adds (``velocity/quadruped.py``, as quadruped_walk):
forward commands up to 0.6 m/s that a curriculum widens to 1 m/s, feet air time, torque,
joint-limit and thigh/calf-contact penalties, an end to episodes where the trunk tilts past
1 rad or touches the ground, and every sample's mirror image in the update. Physics at
200 Hz (MuJoCo's implicit position loop is stable there at these gains) on a capped solver
(``robolearn.envs.CAPPED_SOLVER``), the policy at 50 Hz.

The model is Menagerie's by default; Unitree's own file drives the same task:
``robolearn train --task go2_walk env.scene.model=PATH`` with PATH
``unitree_mujoco/unitree_robots/go2/go2.xml`` in a checkout of Unitree's repository.
"""

from __future__ import annotations

from robolearn.tasks.velocity.quadruped import quadruped_agent_cfg, quadruped_play
from robolearn.tasks.velocity.robots import go2_flat_cfg

from robolearn.env import ManagerBasedRLEnvCfg

env_cfg = go2_flat_cfg  # in velocity/robots.py: go2_walk_rough starts from it
agent_cfg = quadruped_agent_cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return quadruped_play(env_cfg())
