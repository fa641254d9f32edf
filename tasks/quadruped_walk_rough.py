"""quadruped_walk_rough: quadruped_walk on generated terrain, with a height scan.

quadruped_walk's recipe (``tasks/quadruped_walk.py``) made rough by the family's
:func:`~robolearn.tasks.velocity.make_rough`: a 10 x 10 grid of 8 m tiles (flat, rough,
slopes and stairs up and down, obstacles; step heights 2-10 cm, slopes up to 0.4, in the
quadruped's size: its legs are 0.38 m long), a terrain curriculum over the rows, and the
ground around the base as 187 heights (1.6 m x 1.0 m every 0.1 m, legged_gym's scan) in
the policy's observations. The trunk may tilt on slopes: the flat-orientation penalty is a
fifth of the flat task's. Commands are headings to turn to and walk straight along.
"""

from __future__ import annotations

from robolearn.tasks import quadruped_walk
from robolearn.tasks.velocity import (
    COMMAND,
    height_scan,
    make_rough,
    rough_play_cfg,
    velocity_agent_cfg,
)

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.registry import TaskSpec, register_task
from robolearn.terrain import TerrainCfg

STANDING_HEIGHT = 0.30
"""The trunk's height above flat ground in the ``stand`` keyframe (m)."""


def env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_quadruped(quadruped_walk.env_cfg(), STANDING_HEIGHT)


def rough_quadruped(cfg: ManagerBasedRLEnvCfg, standing_height: float) -> ManagerBasedRLEnvCfg:
    """A flat quadruped task of the family made rough this task's way (``cfg`` is changed
    and returned); ``standing_height``: the trunk's height standing on flat ground (m)."""
    cfg = make_rough(cfg, TerrainCfg(), height_scan(standing_height))
    # The rough recipe was measured at 1024 envs, about 10 robots per tile of the 10 x 10
    # terrain grid; the flat task's 512 would halve that.
    cfg.scene.num_envs = 1024
    cfg.rewards["flat_orientation"].weight = -0.2
    # Heading commands (Isaac Lab's and legged_gym's rough setting): the robot turns to a
    # target heading and walks straight, so the distance it covers says how well it walks
    # (the curriculum's measure); yaw-rate commands walk it in circles.
    cfg.commands[COMMAND].rel_heading_envs = 1.0
    return cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_quadruped_play(env_cfg())


def rough_quadruped_play(cfg: ManagerBasedRLEnvCfg) -> ManagerBasedRLEnvCfg:
    """The play variant of :func:`rough_quadruped`'s tasks."""
    cfg = rough_play_cfg(cfg)
    cfg.commands[COMMAND].ranges.lin_vel_x = (-1.0, 1.0)  # the curriculum's final range
    return cfg


def agent_cfg():
    cfg = velocity_agent_cfg()
    cfg.max_iterations = 1500
    return cfg


register_task(
    TaskSpec(
        name="quadruped_walk_rough",
        description=(
            "Quadruped tracks velocity commands on generated terrain (slopes, stairs, rough, "
            "obstacles) with a height scan and a terrain curriculum"
        ),
        env_cfg=env_cfg,
        agent_cfg=agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
