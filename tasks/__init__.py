"""Tasks: one module per task (commands, rewards, terminations, events, agent config).

Importing this package registers every shipped task with :mod:`robolearn.registry`.
"""

from robolearn.tasks import cartpole_balance, humanoid_walk, quadruped_walk  # noqa: F401
