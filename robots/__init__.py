"""Robots: one module per robot of ours (its MJCF, default pose, joint groups, feet), each
giving the SceneCfg its tasks start from. (Formerly ``robolearn.envs``, which still imports.)
"""
