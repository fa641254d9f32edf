"""Tasks, grouped by family as Isaac Lab groups them: a package per family holds the
family's recipe and one module per task (its robot's env config, rewards, terminations,
events, agent config).

* ``velocity``: legged robots follow velocity commands, flat and rough (humanoid, G1,
  quadruped, Go2);
* ``tracking``: humanoids imitate motion clips (BeyondMimic's recipe) and the clips
  robolearn makes itself;
* ``manipulation``: the Franka Panda reaches, lifts and opens a drawer;
* ``classic``: the cartpole, from its joint state or from depth images.

A task module imports its family's modules (never another task module), its robot
(``robolearn.envs``) and the framework: a change to one task cannot change another unseen
(tests/test_layers.py holds the rule). A file's import name follows its path:
``tasks/velocity/g1_walk.py`` is ``robolearn.tasks.velocity.g1_walk``.

Importing this package registers every shipped task with :mod:`robolearn.registry`.
"""

from robolearn.tasks.classic import (  # noqa: F401
    cartpole_balance,
    cartpole_balance_depth,
)
from robolearn.tasks.manipulation import (  # noqa: F401
    panda_lift,
    panda_open_drawer,
    panda_reach,
)
from robolearn.tasks.tracking import (  # noqa: F401
    g1_track,
    humanoid_track,
)
from robolearn.tasks.velocity import (  # noqa: F401
    g1_walk,
    g1_walk_rough,
    go2_walk,
    go2_walk_rough,
    humanoid_walk,
    humanoid_walk_rough,
    quadruped_walk,
    quadruped_walk_motors,
    quadruped_walk_rough,
    quadruped_walk_rough_blind,
    quadruped_walk_rough_obstacles,
)
