"""Offscreen frames of envs: MuJoCo's renderer, debug overlays (velocity arrows, contacts),
grids of envs and mp4 videos.

Below both ``rl`` (videos while training and playing) and ``viewer`` (the interactive
viewers, which load policies through ``rl``), so neither imports the other upward.
"""
