"""Environment configs: one module per robot (its MJCF, default pose, joint groups, feet,
actuators), each giving the robot's EntityCfg (``g1_robot()``), which its tasks place in a
scene (``SceneCfg(entities={"robot": g1_robot()}, ground=True)``); installed as
``robolearn.envs``. How many envs a task runs is the task's (``SceneCfg.num_envs`` holds
the default; a robot's module names a count that tasks of different families share).
``CAPPED_SOLVER`` is here, beside the robots, because the real robots' tasks of two
families (g1_walk, go2_walk, g1_track) run on it."""

CAPPED_SOLVER = {"cone": "pyramidal", "impratio": 1.0, "iterations": 10, "ls_iterations": 20}
"""The solver settings for a real robot's model (``SimCfg(**CAPPED_SOLVER)``), mjlab's
budget: the elliptic cone at impratio 100 and the uncapped iterations that Menagerie's and
Unitree's Go2 files ship cost 2.2 times the physics step on a CPU (BENCHMARKS.md, section
17) for grip that a walking gait does not need. The sim-to-sim check runs a policy on the
vendor's own settings."""
