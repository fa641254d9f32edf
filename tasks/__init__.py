"""Tasks: one module per task (commands, rewards, terminations, events, agent config).

``velocity`` is not a task: it is the velocity-tracking family's shared recipe, which
humanoid_walk and quadruped_walk derive from; ``manipulation`` holds what the Panda's tasks
share (its physics, arm action, reset, PPO settings and play variant); ``tracking`` the
motion-tracking family's recipe, and ``motions`` the clips robolearn makes itself.

Importing this package registers every shipped task with :mod:`robolearn.registry`.
"""

from robolearn.tasks import (  # noqa: F401
    cartpole_balance,
    cartpole_balance_depth,
    g1_track,
    g1_walk,
    g1_walk_rough,
    go2_walk,
    go2_walk_rough,
    humanoid_track,
    humanoid_walk,
    humanoid_walk_rough,
    panda_lift,
    panda_open_drawer,
    panda_reach,
    quadruped_walk,
    quadruped_walk_motors,
    quadruped_walk_rough,
    quadruped_walk_rough_blind,
    quadruped_walk_rough_obstacles,
)
