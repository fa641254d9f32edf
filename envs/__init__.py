"""Environment configs: one module per robot (its MJCF, default pose, joint groups, feet,
actuators), each giving the robot's EntityCfg (``g1_robot()``), which its tasks place in a
scene (``SceneCfg(entities={"robot": g1_robot()}, ground=True)``); installed as
``robolearn.envs``. How many envs a task runs is the task's (``SceneCfg.num_envs`` holds
the default; a robot's module names a count that tasks of different families share).
``CAPPED_SOLVER`` (defined with the engine's settings in ``robolearn.sim.config``, where
``robolearn new robot``'s derivation, below the robots, reads it too) is re-exported here,
beside the robots whose tasks of two families (g1_walk, go2_walk, g1_track) run on it."""

from robolearn.sim.config import CAPPED_SOLVER

__all__ = ["CAPPED_SOLVER"]
