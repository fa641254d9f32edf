"""Environment configs: one module per robot (its MJCF, default pose, joint groups, feet),
each giving the SceneCfg its tasks start from, installed as ``robolearn.envs``. How many
envs a task runs is the task's (``SceneCfg.num_envs`` holds the default)."""
