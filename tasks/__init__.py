"""Tasks: one module per task (commands, rewards, terminations, events, agent config).

``locomotion`` is not a task: it holds the event terms the legged tasks share.

Importing this package registers every shipped task with :mod:`robolearn.registry`.
"""

from robolearn.tasks import cartpole_balance, humanoid_walk, quadruped_walk  # noqa: F401
