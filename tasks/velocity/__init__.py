"""The velocity-tracking family: a legged robot follows (vx, vy, yaw rate) commands.

The family's modules, which the tasks build on (they never import each other):

* ``recipe``: the flat recipe every robot's task starts from (:func:`velocity_env_cfg`);
* ``rough``: a flat task made rough (terrain, height scan, terrain curriculum);
* ``biped`` and ``quadruped``: what a kind of robot adds to the recipe;
* ``robots``: our robots' configs that several tasks start from (a flat task's config,
  which its rough and sim-to-real variants change).

Then one module per task: humanoid_walk, humanoid_walk_rough, g1_walk, g1_walk_rough,
quadruped_walk, quadruped_walk_motors, quadruped_walk_rough, quadruped_walk_rough_blind,
quadruped_walk_rough_obstacles, go2_walk, go2_walk_rough.

The recipe's and the rough additions' public names are re-exported here, as they were
when the family was one module: ``from robolearn.tasks.velocity import velocity_env_cfg``,
the import a task of your own writes (docs/writing-a-task.md), keeps working.
"""

from robolearn.envs import CAPPED_SOLVER
from robolearn.tasks.velocity.recipe import (
    COMMAND,
    CONTROL_DT,
    body_mass,
    control_decimation,
    foot_friction,
    policy_observations,
    proprioception,
    push_base,
    reset_base,
    velocity_agent_cfg,
    velocity_command,
    velocity_env_cfg,
    velocity_play_cfg,
    velocity_rewards,
)
from robolearn.tasks.velocity.rough import height_scan, make_rough, rough_play_cfg

__all__ = [
    "CAPPED_SOLVER",
    "COMMAND",
    "CONTROL_DT",
    "body_mass",
    "control_decimation",
    "foot_friction",
    "height_scan",
    "make_rough",
    "policy_observations",
    "proprioception",
    "push_base",
    "reset_base",
    "rough_play_cfg",
    "velocity_agent_cfg",
    "velocity_command",
    "velocity_env_cfg",
    "velocity_play_cfg",
    "velocity_rewards",
]
