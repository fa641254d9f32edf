"""humanoid_walk_rough: humanoid_walk on generated terrain, with a height scan.

humanoid_walk's recipe (``tasks/humanoid_walk.py``) made rough by the family's
:func:`~robolearn.tasks.velocity.make_rough`, on a gentler mix than the quadruped's (a
biped on stairs is the hard case of this family): flat, rough ground (bumps up to 4 cm),
slopes up and down (to 0.25) and stairs up and down (steps 2-8 cm), a terrain curriculum,
and the ground around the pelvis as 77 heights (1.0 m x 0.6 m every 0.1 m) seen by the
policy and the critic.
"""

from __future__ import annotations

from robolearn.tasks import humanoid_walk
from robolearn.tasks.velocity import COMMAND, height_scan, make_rough, rough_play_cfg

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.registry import TaskSpec, register_task
from robolearn.terrain import SubTerrainCfg, TerrainCfg

STANDING_HEIGHT = 0.73
"""The pelvis's height above flat ground when standing (m): the base-height reward's
target."""


def terrain() -> TerrainCfg:
    """The humanoid's terrain: 10 levels of flat, rough, slopes and stairs."""
    return TerrainCfg(
        sub_terrains={
            "flat": SubTerrainCfg("flat", proportion=0.2),
            "random_rough": SubTerrainCfg("random_rough", proportion=0.2, range=(0.01, 0.04)),
            "pyramid_slope": SubTerrainCfg("pyramid_slope", proportion=0.15, range=(0.0, 0.25)),
            "pyramid_slope_inv": SubTerrainCfg(
                "pyramid_slope_inv", proportion=0.15, range=(0.0, 0.25)
            ),
            "pyramid_stairs": SubTerrainCfg("pyramid_stairs", proportion=0.15, range=(0.02, 0.08)),
            "pyramid_stairs_inv": SubTerrainCfg(
                "pyramid_stairs_inv", proportion=0.15, range=(0.02, 0.08)
            ),
        }
    )


def env_cfg() -> ManagerBasedRLEnvCfg:
    scan = height_scan(STANDING_HEIGHT, size=(1.0, 0.6))
    cfg = make_rough(humanoid_walk.env_cfg(), terrain(), scan)
    cfg.rewards["flat_orientation"].weight = -1.0
    cfg.commands[COMMAND].rel_heading_envs = 1.0  # walk straight: see quadruped_walk_rough
    # MuJoCo Warp's constraint rows per env: a humanoid fallen on stairs or rough ground
    # used 109 (robolearn.sim.capacity.measured_capacity); the flat task's 128 leaves too
    # little margin
    cfg.sim.njmax = 192
    return cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return rough_play_cfg(env_cfg())


register_task(
    TaskSpec(
        name="humanoid_walk_rough",
        description=(
            "Humanoid walks on velocity commands on generated terrain (slopes, stairs, rough) "
            "with a height scan and a terrain curriculum"
        ),
        env_cfg=env_cfg,
        agent_cfg=humanoid_walk.agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
