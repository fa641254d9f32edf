"""g1_walk: a Unitree G1 follows base velocity commands on flat ground.

humanoid_walk's recipe (``velocity/biped.py``: the velocity family with a gait clock,
a privileged critic, biped posture rewards and mirror augmentation) on the G1's robot
config (``envs/unitree_g1.py``: its motors' limits, armature and gains, whichever MJCF of
the G1 it runs on). The policy drives the 12 leg joints and the waist's yaw; the arms and
the waist's roll and pitch hold the default pose under their own position loops, as the
humanoid's arms do. Physics at 100 Hz with ``implicitfast`` on a capped solver
(``robolearn.envs.CAPPED_SOLVER``), the policy at 50 Hz: as for humanoid_walk, 200 Hz cost 1.6
times as much per env step (BENCHMARKS.md, section 18).

The model is Menagerie's by default; Unitree's own file drives the same task:
``robolearn train --task g1_walk env.scene.model=PATH`` with PATH
``unitree_mujoco/unitree_robots/g1/g1_29dof.xml`` in a checkout of Unitree's repository.
"""

from __future__ import annotations

from robolearn.tasks.velocity.biped import biped_flat_agent_cfg
from robolearn.tasks.velocity.recipe import velocity_play_cfg
from robolearn.tasks.velocity.robots import g1_flat_cfg

from robolearn.env import ManagerBasedRLEnvCfg

env_cfg = g1_flat_cfg  # in velocity/robots.py: g1_walk_rough starts from it too
agent_cfg = biped_flat_agent_cfg  # in velocity/biped.py: humanoid_walk trains with it too


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return velocity_play_cfg(env_cfg())
