"""The motion-tracking family: a humanoid imitates motion clips (the BeyondMimic recipe).

The family's modules, which the tasks build on: ``recipe`` (the env, its play variant, the
PPO settings, and :func:`~robolearn.tasks.tracking.recipe.register_tracking_tasks`, which
registers a robot of your own's walk and squat tasks) and ``motions`` (the clips robolearn
makes itself). Then one module per robot's tasks: g1_track (g1_track, g1_track_squat) and
humanoid_track (humanoid_track, humanoid_track_squat), registered by name in
``robolearn.tasks``.
"""
